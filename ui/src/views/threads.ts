// Conversations as the window composes them: each kind of thread with its starter. One
// place, so the window and its tests build the same view.
import { ConversationsView } from './conversations';
import { A2aTasks } from './a2atasks';
import { IntentView } from './intent';
import { MailView } from './mail';
import { UampView } from './uamp';

export interface Threads {
  conversations: ConversationsView;
  uamp: UampView;
  mail: MailView;
  intent: IntentView;
}

export function threads(): Threads {
  const conversations: ConversationsView = new ConversationsView([
    ['start-ask', 'Ask an agent', () => uamp.startParts()],
    ['start-task', 'Send a task to a swarm', () => mail.sendParts()],
    ['start-company', 'Ask a company', () => intent.startParts()],
    ['start-import', 'Import a task log', () => mail.importParts()],
  ]);
  const uamp: UampView = new UampView(conversations);
  const mail: MailView = new MailView(conversations);
  const intent: IntentView = new IntentView(conversations);
  conversations.add('task', mail);
  conversations.add('site', intent);
  conversations.add('stream', uamp);
  conversations.add('a2a', new A2aTasks());
  return { conversations, uamp, mail, intent };
}
