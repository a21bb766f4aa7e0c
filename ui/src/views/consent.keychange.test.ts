// A trusted agent that signed with a key it was not trusted with: the prompt warns, offers
// no way to let anything in from the message, and checks the agent's DID document instead.
import { vi } from 'vitest';

const calls: [string, unknown][] = [];
const item = { kind: 'key_change', sender: 'did:web:acme.example', sender_name: 'Acme agent', key_id: 'did:web:acme.example#key-2', reason: 'unknown_key', first_seen: '2026-11-25T10:00:00Z', last_seen: '2026-11-25T10:05:00Z', count: 2, verified: true, later: null };
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: unknown) => {
    calls.push([cmd, args]);
    if (cmd === 'consent_list') return Promise.resolve([item]);
    if (cmd === 'quiet_hours_get') return Promise.resolve({ hours: null, quiet_now: false, collected: 0 });
    if (cmd === 'contact_check_keys') return Promise.resolve({ message: 'Acme agent’s keys changed: verify it again.', added: ['k2'], removed: ['k1'], blocked: true });
    if (cmd === 'consent_decide') return Promise.resolve({ message: 'Kept Acme agent’s keys as they are.', delivered: null });
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView, consentSentence, keyChangeWarning } from './consent';
import { replace } from '../dom';

test('a key change warns, cannot be allowed, and is answered by checking the DID document', async () => {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  const card = document.querySelector('.consent-card.key_change') as HTMLElement;
  expect(card.dataset.sender).toBe('did:web:acme.example');
  expect(consentSentence(item as never)).toContain('Acme agent (an AI agent you trust, over UAMP) signed 2 messages with a key you did not trust it with');
  const alert = card.querySelector('[role="alert"]')?.textContent ?? '';
  expect(alert).toContain('The message calls that key “#key-2” (its own words, not checked).');
  expect(alert).toContain('⚠ The key it signed with is not among the keys you trusted.');
  expect(alert).toContain('You verified this agent');
  expect(card.querySelector('button[data-decision="allow_once"], button[data-decision="always_allow_scope"]')).toBeNull();
  expect(card.querySelector('button[data-decision="deny"]')?.textContent).toBe('Keep its keys');
  (card.querySelector('button[data-action="check-keys"]') as HTMLButtonElement).click();
  await new Promise((r) => setTimeout(r, 0));
  expect(calls).toContainEqual(['contact_check_keys', { sender: 'did:web:acme.example' }]);
  expect(card.classList.contains('decided')).toBe(true);
  expect(card.querySelector('.result')?.textContent).toContain('verify it again');
});

test('a signature under a kept key that does not match, or naming no key id, is worded as such', () => {
  const w = keyChangeWarning({ ...item, kind: 'key_change', key_id: '', reason: 'invalid_signature', verified: false });
  expect(w.textContent).toContain('⚠ The key it signed with does not match the key you trusted under that name.');
  expect(w.textContent).not.toContain('calls that key');
  const long = keyChangeWarning({ ...item, kind: 'key_change', key_id: `did:web:acme.example#${'verified-by-gatehouse-'.repeat(5)}` });
  expect(long.textContent).toContain('“#verified-by-gatehouse-verified-by-gateh…” (its own words');
  expect(w.textContent).not.toContain('You verified');
});
