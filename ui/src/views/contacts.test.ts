// Contacts: a changed key is the loudest standing; two contacts of one name are flagged,
// and merged only when the user says so.
import { vi } from 'vitest';

const calls: unknown[] = [];
const key = (k: string, verified: boolean) => ({ key: k, fingerprint: k.slice(0, 4), source: 'epp_sender' as const, scopes: ['support'], added_at: '', verified_at: verified ? '2026-11-25T10:00:00Z' : null, changed_from: null, blocked: false, safety_code: '00000 11111 22222 33333' });
const contacts = [
  { id: 1, name: 'Dr. Lee', created_at: '', verified: true, key_changed: false, keys: [key('aa'.repeat(32), true)], namesakes: [2] },
  { id: 2, name: 'Dr. Lee', created_at: '', verified: false, key_changed: false, keys: [key('bb'.repeat(32), false)], namesakes: [1] },
];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: unknown) => {
    if (cmd === 'contacts_list') return Promise.resolve(contacts);
    if (cmd === 'contact_merge') { calls.push(args); return Promise.resolve(null); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ContactsPanel, standing } from './contacts';
import { replace } from '../dom';

test('a changed key outranks verified', () => {
  expect(standing({ ...contacts[0], key_changed: true })[1]).toBe('changed');
  expect(standing(contacts[0])[0]).toBe('Verified');
  expect(standing(contacts[1])[0]).toBe('Not verified');
});

test('namesakes are flagged, and merged only by the button', async () => {
  const panel = new ContactsPanel(() => {});
  replace(document.body, panel.el);
  await panel.load();
  const unverified = document.querySelector('.contact[data-contact="2"]') as HTMLElement;
  expect(unverified.querySelector('.namesake')?.textContent).toContain('Dr. Lee is verified: these keys stay held');
  expect(calls).toEqual([]);
  (unverified.querySelector('button.merge') as HTMLButtonElement).click();
  await new Promise((r) => setTimeout(r, 0));
  expect(calls).toEqual([{ from: 2, into: 1 }]);
});
