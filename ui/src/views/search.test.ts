// One box for everything: people by name or key, messages by their text, conversations of
// every kind; the keyboard picks a result and Enter opens it where it lives.
import { vi } from 'vitest';

const contacts = [
  { id: 1, name: 'Alice', created_at: '', verified: true, key_changed: false, namesakes: [], keys: [{ key: 'aa'.repeat(32) }, { key: 'did:key:z6MkAlice' }] },
  { id: 2, name: 'Bob', created_at: '', verified: false, key_changed: false, namesakes: [], keys: [{ key: 'bb'.repeat(32) }] },
];
const message = { seq: 1, receipt_id: 'r-9', status: 'accepted', received_at: '2026-11-27T10:00:00Z', transport: 'http', sender: 'cc'.repeat(32), sender_name: 'Carol', prompt_preview: 'Alice asked me to write', message: null };
const searched: unknown[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { filter?: { search?: string } }) => {
    if (cmd === 'contacts_list') return Promise.resolve(contacts);
    if (cmd === 'inbox_list') { searched.push(args.filter); return Promise.resolve(args.filter?.search === 'alice' ? [message] : []); }
    return Promise.reject({ code: 'INTERNAL', message: cmd });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { SearchBox } from './search';
import { replace } from '../dom';

test('people, messages and conversations; arrows and Enter open one', async () => {
  // jsdom has no modal dialogs and lays nothing out.
  HTMLDialogElement.prototype.showModal = function (this: HTMLDialogElement) { this.open = true; };
  HTMLDialogElement.prototype.close = function (this: HTMLDialogElement) { this.open = false; };
  Element.prototype.scrollIntoView = () => {};
  const opened: string[] = [];
  const box = new SearchBox({
    person: (c) => opened.push(`person ${c.name}`),
    message: (id) => opened.push(`message ${id}`),
    thread: (kind, id) => opened.push(`thread ${kind}:${id}`),
    threads: async (q) => (q === 'alice' ? [{ kind: 'site', id: 'i-1', who: 'Bistro', preview: 'Table for Alice', state: 'Done', stateClass: '', at: '2026-11-27T09:00:00Z' }] : []),
    labelOf: () => 'IntentWeb',
  });
  replace(document.body, box.el);
  window.dispatchEvent(new KeyboardEvent('keydown', { key: 'k', ctrlKey: true }));
  await vi.waitFor(() => expect(box.el.open).toBe(true));
  const input = document.querySelector('#search-box') as HTMLInputElement;
  input.value = 'alice';
  input.dispatchEvent(new Event('input'));
  await vi.waitFor(() => expect(document.querySelectorAll('[role=option]')).toHaveLength(3));
  const options = [...document.querySelectorAll<HTMLElement>('[role=option]')];
  expect(options.map((o) => o.dataset.result)).toEqual(['person', 'message', 'thread']);
  expect(options[0].textContent).toContain('Everything Alice sent');
  expect(options[0].getAttribute('aria-selected')).toBe('true');
  expect(searched).toEqual([{ search: 'alice', limit: 5 }]);
  searched.length = 0;
  // Down twice, Enter: the conversation opens and the box closes.
  for (const key of ['ArrowDown', 'ArrowDown', 'Enter']) box.el.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
  expect(opened).toEqual(['thread site:i-1']);
  expect(box.el.open).toBe(false);
});

test('a key finds its person too, and nothing found is said', async () => {
  const box = new SearchBox({ person: () => {}, message: () => {}, thread: () => {}, threads: async () => [], labelOf: () => '' });
  replace(document.body, box.el);
  await box.open();
  const input = document.querySelector('#search-box') as HTMLInputElement;
  input.value = 'z6MkAlice';
  input.dispatchEvent(new Event('input'));
  await vi.waitFor(() => expect(document.querySelector('[data-result=person]')?.textContent).toContain('Alice'));
  input.value = 'nobody at all';
  input.dispatchEvent(new Event('input'));
  await vi.waitFor(() => expect(document.querySelector('#search-status')?.textContent).toBe('Nothing matches “nobody at all”.'));
});
