// Activity in a person's words: who decided (this desk, or the approver device that did),
// what each kind of change was, and when a grant ends in local time.
import { vi } from 'vitest';

const entries = [
  { id: 3, at: new Date().toISOString(), action: 'consent.allow_once', subject: 'aa'.repeat(32), detail: { by: { approver: 'ap-1', name: 'Ana’s phone' } }, prev_hash: '', hash: '' },
  { id: 2, at: new Date().toISOString(), action: 'approver.join', subject: null, detail: { name: 'Ana’s phone' }, prev_hash: '', hash: '' },
  { id: 1, at: new Date().toISOString(), action: 'first_run.done', subject: null, detail: {}, prev_hash: '', hash: '' },
];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => Promise.resolve(cmd === 'audit_list' ? { entries, older: false } : cmd === 'contacts_list' ? [] : null),
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ActivityView } from './activity';
import { untilText } from '../format';
import { replace } from '../dom';

test('a device’s decision is the device’s, and every change reads as a sentence', async () => {
  const v = new ActivityView();
  replace(document.body, v.el);
  await v.load();
  const lines = [...document.querySelectorAll<HTMLElement>('#audit-list li')].map((l) => l.querySelector('span')?.textContent ?? '');
  expect(lines[0]).toBe('Ana’s phone let one message through from Sender aaaaaaaa');
  expect(lines[1]).toBe('A device joined as an approver: Ana’s phone');
  expect(lines[2]).toBe('You finished the welcome');
  expect(document.querySelector('#audit-list li')?.textContent).toContain('Recorded as consent.allow_once');
});

test('a grant’s end reads in local time, with how far off it is', () => {
  const now = new Date(2026, 10, 29, 3, 38);
  expect(untilText(new Date(2026, 10, 29, 4, 37).toISOString(), now)).toMatch(/^until 0?4:37 (AM )?\(in 59 min\)$/);
  expect(untilText(new Date(2026, 10, 29, 1, 0).toISOString(), now)).toMatch(/^until 0?1:00( AM)?$/);
  expect(untilText(new Date(2026, 11, 2, 9, 0).toISOString(), now)).toContain('2026');
});

test('a check of the log says so once the log has grown since', async () => {
  const core = await import('@tauri-apps/api/core');
  const v = new ActivityView();
  replace(document.body, v.el);
  await v.load();
  const invoke = vi.spyOn(core, 'invoke').mockImplementation((cmd: string) => Promise.resolve(
    cmd === 'audit_verify' ? { intact: true, entries: 3, last_id: 3, signed_through: 3, problem: null, state: null }
      : cmd === 'audit_list' ? { entries, older: false } : cmd === 'contacts_list' ? [] : null));
  (document.getElementById('audit-check') as HTMLButtonElement).click();
  await vi.waitFor(() => expect(document.getElementById('audit-verdict')?.textContent).toContain('Intact: all 3 entries'));
  entries.unshift({ id: 4, at: new Date().toISOString(), action: 'trust.add', subject: null, detail: { name: 'Bo' }, prev_hash: '', hash: '' });
  await v.load();
  expect(document.getElementById('audit-verdict')?.textContent).toBe('The log has grown since you checked it (1 new entry): check it again to include them.');
  invoke.mockRestore();
});
