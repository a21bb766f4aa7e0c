// Tasks A2A agents sent: each is a message that arrived at the gate (a receipt, and an
// envelope once accepted), so its thread is read as the inbox reads a message.
import { api } from '../api';
import { h, replace } from '../dom';
import { conversationParts, renderDetail } from './inbox';
import { describeCode, execLabel, senderLabel } from '../format';
import type { Thread, ThreadSource } from './conversations';

export class A2aTasks implements ThreadSource {
  readonly label = 'A2A';
  private detailBox = h('aside', { className: 'detail', id: 'a2a-task-detail' });

  async threads(q: string): Promise<Thread[]> {
    const items = await api.inboxList({ transport: 'a2a', search: q || null, limit: 100 });
    return items.map((i) => ({
      kind: 'a2a', id: i.receipt_id, who: `${senderLabel(i.sender_name, i.sender ?? '')} → you`, at: i.received_at,
      state: i.status === 'accepted' ? (execLabel(i.exec_status) || 'Accepted') : describeCode(i.code),
      stateClass: i.status, preview: i.prompt_preview ?? i.message ?? '',
    }));
  }

  async open(id: string): Promise<HTMLElement> {
    const d = await api.inboxDetail(id);
    renderDetail(this.detailBox, d, (c) => void this.thread(id, c), () => void this.open(id));
    return this.detailBox;
  }

  /** The whole conversation the task belongs to (the A2A context), read as the inbox reads it. */
  private async thread(id: string, conversationId: string): Promise<void> {
    const msgs = await api.conversation(conversationId);
    replace(this.detailBox, ...conversationParts(conversationId, msgs, '← Back to the task', () => void this.open(id)));
  }
}
