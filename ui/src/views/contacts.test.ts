// Contacts: a changed key is the loudest standing; two contacts of one name are flagged,
// and merged only when the user says so.
import { vi } from 'vitest';

const calls: unknown[] = [];
const key = (k: string, verified: boolean) => ({ key: k, fingerprint: k.slice(0, 4), source: 'epp_sender' as const, scopes: ['support'], added_at: '', verified_at: verified ? '2026-11-25T10:00:00Z' : null, changed_from: null, blocked: false, safety_code: '00000 11111 22222 33333', reverify: null as string | null });
const contacts = [
  { id: 1, name: 'Dr. Lee', created_at: '', verified: true, key_changed: false, keys: [key('aa'.repeat(32), true)], namesakes: [2] },
  { id: 2, name: 'Dr. Lee', created_at: '', verified: false, key_changed: false, keys: [key('bb'.repeat(32), false)], namesakes: [1] },
];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: unknown) => {
    if (cmd === 'contacts_list') return Promise.resolve(contacts);
    if (cmd === 'contact_merge') { calls.push(args); return Promise.resolve(null); }
    if (cmd === 'contact_read_qr') { calls.push(['read', args]); return Promise.resolve(`gatehouse:contact?key=${'bb'.repeat(32)}&address=x`); }
    if (cmd === 'contact_verify') { calls.push(['verify', args]); return Promise.resolve({ ...contacts[1], verified: true }); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ContactsPanel, keyKind, standing } from './contacts';
import { replace } from '../dom';

test('a changed key outranks verified', () => {
  expect(standing({ ...contacts[0], key_changed: true })[1]).toBe('changed');
  expect(standing(contacts[0])[0]).toBe('Verified');
  expect(standing(contacts[1])[0]).toBe('Not verified');
});

test('namesakes are flagged, and merged only by the button', async () => {
  const panel = new ContactsPanel(() => {}, () => []);
  replace(document.body, panel.el);
  panel.render(contacts);
  const unverified = document.querySelector('.contact[data-contact="2"]') as HTMLElement;
  expect(unverified.querySelector('.namesake')?.textContent).toContain('Dr. Lee is verified: these keys stay held');
  expect(calls).toEqual([]);
  (unverified.querySelector('button.merge') as HTMLButtonElement).click();
  await new Promise((r) => setTimeout(r, 0));
  expect(calls).toEqual([{ from: 2, into: 1 }]);
});

test('a picture of their QR code is read and checked like pasted text', async () => {
  calls.length = 0;
  // jsdom lays nothing out, so it has no scrolling to do.
  Element.prototype.scrollIntoView = () => {};
  const panel = new ContactsPanel(() => {}, () => []);
  replace(document.body, panel.el);
  panel.render(contacts);
  (document.querySelector('.contact[data-contact="2"] .verify-open') as HTMLButtonElement).click();
  const input = document.querySelector('#verify-picture') as HTMLInputElement;
  expect(input.accept).toBe('image/png,image/jpeg');
  const png = new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], 'qr.png', { type: 'image/png' });
  Object.defineProperty(input, 'files', { value: [png] });
  input.dispatchEvent(new Event('change'));
  await vi.waitFor(() => expect(calls).toHaveLength(2));
  expect(calls[0]).toEqual(['read', { picture: 'iVBORw==' }]);
  expect(calls[1]).toEqual(['verify', { key: 'bb'.repeat(32), pasted: `gatehouse:contact?key=${'bb'.repeat(32)}&address=x` }]);
  await vi.waitFor(() => expect(document.querySelector('#verify-msg')?.textContent).toContain('key is verified'));
});

test('a key verified with the old safety code says so and offers to verify again', async () => {
  const old = 'verified with the old 20-digit safety code, which a man in the middle could match by precomputation: compare the new code to keep it verified';
  contacts[0].keys = [{ ...key('aa'.repeat(32), true), reverify: old }];
  const panel = new ContactsPanel(() => {}, () => []);
  replace(document.body, panel.el);
  panel.render(contacts);
  const lee = document.querySelector('.contact[data-contact="1"]') as HTMLElement;
  expect(lee.querySelector('.reverify')?.textContent).toContain('old 20-digit safety code');
  expect(lee.querySelector('button.verify-open')?.textContent).toBe('Verify again');
  contacts[0].keys = [key('aa'.repeat(32), true)];
});

test('an A2A agent is shown as known by what its transport proved, with no safety code to compare', () => {
  const token = { ...key(`a2a:token:${'cd'.repeat(32)}`, false), source: 'a2a_agent' as const };
  const cert = { ...key(`a2a:key:${'ef'.repeat(32)}`, false), source: 'a2a_agent' as const };
  expect(keyKind(token)).toBe('A2A agent, known by a token you issued (what it sends is not signed)');
  expect(keyKind(cert)).toContain('its TLS certificate’s key');
  expect(keyKind(key('aa'.repeat(32), false))).toBe('EPP key');
});

test('an A2A agent\'s key offers no safety code to verify', async () => {
  contacts.push({ id: 3, name: 'Trains', created_at: '', verified: false, key_changed: false, keys: [{ ...key(`a2a:key:${'ef'.repeat(32)}`, false), source: 'a2a_agent' as const } as never], namesakes: [] });
  const panel = new ContactsPanel(() => {}, () => []);
  replace(document.body, panel.el);
  panel.render(contacts);
  const card = document.querySelector('.contact[data-contact="3"]') as HTMLElement;
  expect(card.textContent).toContain('known by its TLS certificate’s key');
  expect(card.querySelector('.verify-open')).toBeNull();
  expect(document.querySelector('.contact[data-contact="2"] .verify-open')).not.toBeNull();
  contacts.pop();
});
