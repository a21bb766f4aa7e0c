// Asks to and from agents (UAMP streams): asking a peer with a live progress bar, what
// came back, and every stream in both directions — threads in Conversations. The peers
// themselves are under People & agents; this gate's identity is in Settings.
import { api, errorText, onUampProgress, type AskProgress, type Peer, type StreamDetail } from '../api';
import { h, refill, replace } from '../dom';
import { failed } from './parts';
import { bytesText, senderLabel, streamStateText, when } from '../format';
import type { Host, Thread } from './conversations';

export class UampView {
  readonly label = 'UAMP';
  private detailBox = h('div', { className: 'detail', id: 'uamp-detail' }, h('p', { className: 'muted' }, 'Choose a stream to see what was asked and what came back.'));
  private progressBox = h('div', { className: 'ask-progress', id: 'uamp-progress' });
  /** The ask being followed on screen. */
  private following: string | null = null;
  // Built once and only refilled: the view is redrawn whenever anything arrives, and an
  // ask being typed must survive that.
  private askPeer = h('select', { id: 'ask-peer', 'aria-label': 'Agent' });
  private askForm = this.askCard();
  private nobody = h('p', { className: 'muted', id: 'ask-nobody' }, 'No agent to ask yet: add one under People & agents (Add someone → An agent’s address).');

  constructor(private host: Host) {
    void onUampProgress((p) => this.onProgress(p));
  }

  /** The peers to ask, read again. */
  async prepare(): Promise<void> {
    this.askFor(await api.uampPeers());
  }

  /** Where an ask starts: the form, or what to do first when there is nobody to ask. */
  startParts(): HTMLElement[] {
    return [this.askForm, this.nobody];
  }

  async threads(q: string): Promise<Thread[]> {
    const needle = q.toLowerCase();
    return (await api.uampStreams()).map((s): Thread => {
      const who = senderLabel(s.peer_name, s.peer);
      return {
        kind: 'stream', id: s.stream_id, who: s.direction === 'out' ? `You → ${who}` : `${who} → you`, at: s.updated_at,
        state: streamStateText(s.state), stateClass: `state-${s.state.toLowerCase()}`,
        preview: `${s.ask?.content ?? ''}${s.bytes ? ` · ${bytesText(s.bytes)}` : ''}`,
      };
    }).filter((t) => !needle || `${t.who} ${t.preview}`.toLowerCase().includes(needle));
  }

  async open(id: string): Promise<HTMLElement> {
    await this.showDetail(id);
    return this.detailBox;
  }

  /** The ask form, shown once there is a peer to ask; the chosen peer stays chosen. */
  private askFor(peers: Peer[]): HTMLElement {
    refill(this.askPeer, peers.map((p) => [p.did, p.name]));
    this.askForm.hidden = !peers.length;
    this.nobody.hidden = !!peers.length;
    return this.askForm;
  }

  private askCard(): HTMLElement {
    const peer = this.askPeer;
    const text = h('textarea', { id: 'ask-text', rows: 2, cols: 60, placeholder: 'What should the agent do? e.g. “512×512 cat”' });
    const send = h('button', { className: 'primary', id: 'ask-send', type: 'submit' }, 'Ask');
    return h('form', { className: 'card', id: 'uamp-ask', onsubmit: async (e: Event) => {
      e.preventDefault();
      if (!text.value.trim()) return;
      send.disabled = true;
      replace(this.progressBox, h('p', { className: 'muted' }, 'Sending…'));
      try {
        this.following = await api.uampAsk(peer.value, text.value);
        this.host.select('stream', this.following);
        text.value = '';
      } catch (err) {
        replace(this.progressBox, h('p', { className: 'error', id: 'ask-error' }, errorText(err)));
      }
      send.disabled = false;
    } },
      h('h3', {}, 'Ask a peer'),
      h('div', { className: 'actions' }, peer, text, send),
      this.progressBox);
  }

  private onProgress(p: AskProgress): void {
    if (this.following && p.stream_id !== this.following) return;
    this.following = p.stream_id;
    const bar = h('progress', { id: 'ask-bar', max: 100 });
    // No percentage from the peer: an indeterminate bar (no value) that still moves.
    if (p.pct != null) bar.value = p.pct;
    const done = ['COMPLETED', 'CANCELLED', 'ERROR'].includes(p.state);
    replace(this.progressBox,
      h('div', { className: 'progress-line' },
        bar,
        h('span', { id: 'ask-status', 'data-state': p.state }, `${streamStateText(p.state)} · ${p.frames} frames · ${bytesText(p.bytes)} from ${p.peer}`),
        done ? null : h('button', { className: 'secondary small', id: 'ask-cancel', onclick: () => void api.uampCancel(p.stream_id).catch((e) => alert(errorText(e))) }, 'Cancel')));
    if (done) {
      this.following = null;
      this.host.select('stream', p.stream_id);
      void this.showResult(p.stream_id);
      void this.host.reload();
    }
  }

  /** What came back, right under the ask that asked for it. */
  private async showResult(id: string): Promise<void> {
    try {
      const d = await api.uampStreamDetail(id);
      const result = d.image
        ? h('img', { className: 'result-image', id: 'ask-result-image', src: d.image, alt: 'the image the peer returned' })
        : d.text ? h('pre', { className: 'prompt', id: 'ask-result-text' }, d.text) : null;
      if (result) this.progressBox.appendChild(h('div', { className: 'ask-result' }, result, d.file ? h('p', { className: 'muted small mono' }, `Saved as ${d.file}`) : null));
    } catch (e) {
      this.progressBox.appendChild(failed(e));
    }
  }

  private async showDetail(id: string): Promise<void> {
    try {
      const d: StreamDetail = await api.uampStreamDetail(id);
      replace(this.detailBox,
        h('h2', {}, d.direction === 'out' ? `You asked ${senderLabel(d.peer_name, d.peer)}` : `${senderLabel(d.peer_name, d.peer)} asked you`),
        h('dl', {},
          h('dt', {}, 'State'), h('dd', { id: 'stream-state' }, `${streamStateText(d.state)}${d.detail ? ` — ${d.detail}` : ''}`),
          h('dt', {}, 'Stream'), h('dd', { className: 'mono' }, d.stream_id),
          h('dt', {}, 'Frames'), h('dd', {}, d.direction === 'in' ? `${d.next_seq} (window ${d.delta_window}, acknowledged up to ${d.acked_seq})` : `${d.next_seq} received (window ${d.delta_window})`),
          d.file ? h('dt', {}, 'Saved as') : null, d.file ? h('dd', { className: 'mono', id: 'stream-file' }, d.file) : null,
          d.mime ? h('dt', {}, 'Type') : null, d.mime ? h('dd', {}, d.mime) : null),
        h('h3', {}, 'Conversation'),
        h('ul', { className: 'thread' }, ...d.thread.map((m) => h('li', { className: 'msg' },
          h('div', { className: 'muted small' }, `${m.direction === 'out' ? 'You' : senderLabel(d.peer_name, m.sender)} · ${m.intent} · ${when(m.received_at)}`),
          h('div', { className: 'prompt' }, m.content)))),
        d.image ? h('h3', {}, 'What came back') : null,
        // A data: URL of a raster image the core checked; the CSP allows only these.
        d.image ? h('img', { className: 'result-image', id: 'stream-image', src: d.image, alt: 'the image the peer returned' }) : null,
        d.text ? h('h3', {}, 'What came back') : null,
        d.text ? h('pre', { className: 'prompt', id: 'stream-text' }, d.text) : null,
        h('details', {}, h('summary', {}, `Frames (${d.frames.length})`), h('pre', { className: 'json' }, JSON.stringify(d.frames, null, 2))));
    } catch (e) {
      replace(this.detailBox, failed(e));
    }
  }
}
