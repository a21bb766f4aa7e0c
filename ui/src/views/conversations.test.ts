// Conversations: threads of every kind in one list, newest first, each labelled with how
// it was carried; a kind that cannot be read is said, and the others are still shown.
import { vi } from 'vitest';

const answers = new Map<string, unknown>();
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => (answers.has(cmd) ? Promise.resolve(structuredClone(answers.get(cmd))) : Promise.reject({ code: 'INTERNAL', message: `no ${cmd} here` })),
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { threads } from './threads';
import { replace } from '../dom';

const task = { task_id: 't-1', subject: 'Trip to Lyon', state: 'completed', messages: 4, updated_at: '2026-11-27T10:00:00Z', swarm: 'Research', source: 'live', participants: ['u-1'] };
const talk = { interaction_id: 'i-1', origin: 'https://b.example', company: 'Bistro', initial: 'A table for two', state: 'open', external_id: null, updated_at: '2026-11-27T12:00:00Z' };
const stream = { stream_id: 's-1', direction: 'out', peer: 'did:key:z6Mkp', peer_name: 'Image maker', state: 'COMPLETED', bytes: 0, ask: { content: 'a cat' }, updated_at: '2026-11-27T11:00:00Z' };
const a2a = { seq: 1, receipt_id: 'r-1', status: 'accepted', code: null, message: null, received_at: '2026-11-27T09:00:00Z', transport: 'a2a', sender: 'a2a:token:x', sender_name: 'Calendar helper', prompt_preview: 'Move my dentist', exec_status: 'succeeded' };

beforeEach(() => {
  answers.clear();
  for (const [k, v] of [['uamp_peers', []], ['mail_swarms', []], ['iw_sites', []], ['mail_tasks', [task]], ['iw_conversations', [talk]], ['uamp_streams', [stream]], ['inbox_list', [a2a]]] as const) answers.set(k, v);
});

test('every kind in one list, newest first, each with its label', async () => {
  const t = threads();
  replace(document.body, t.conversations.el);
  await t.conversations.load();
  const rows = [...document.querySelectorAll<HTMLElement>('#conversation-list li')];
  expect(rows.map((r) => r.dataset.thread)).toEqual(['site:i-1', 'stream:s-1', 'task:t-1', 'a2a:r-1']);
  expect(rows.map((r) => r.querySelector('.proto')?.textContent)).toEqual(['IntentWeb', 'UAMP', 'MAIL', 'A2A']);
  expect(rows[1].textContent).toContain('You → Image maker');
  expect(rows[3].textContent).toContain('Calendar helper → you');
});

test('one kind, and a kind that cannot be read', async () => {
  answers.delete('uamp_streams');
  const t = threads();
  replace(document.body, t.conversations.el);
  await t.conversations.load();
  expect(document.querySelector('#conversation-threads .error')?.textContent).toContain('no uamp_streams here');
  expect(document.querySelectorAll('#conversation-list li')).toHaveLength(3);
  const kind = document.querySelector('#conversation-kind') as HTMLSelectElement;
  kind.value = 'task';
  kind.dispatchEvent(new Event('change'));
  await vi.waitFor(() => expect([...document.querySelectorAll<HTMLElement>('#conversation-list li')].map((r) => r.dataset.kind)).toEqual(['task']));
});
