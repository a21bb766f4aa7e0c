// "It is Al's new key": what the key sent then waits, held, and the words said about it
// stay with it (its arrival is not something new that takes them away).
import { vi } from 'vitest';

const key = 'cd'.repeat(32);
const knock = { kind: 'unknown_sender', public_key: key, source: 'epp_sender', first_seen: '2026-11-25T10:00:00Z', last_seen: '2026-11-25T10:00:00Z', count: 1, scopes_tried: ['support'], knock: 'r-1', envelope_id: 'e-1', scope: 'support', prompt: 'It’s Al, from my new laptop', extras: null, risk: [], covered: [], covered_total: 0, later: null, tools: [],
  claims: [{ contact_id: 1, contact_name: 'Al', verified: true, how: 'says it acts on behalf of Al' }] };
const held = { kind: 'held', row_id: 9, envelope_id: 'e-1', sender: key, sender_name: 'Al', scope: 'support', prompt: 'It’s Al, from my new laptop', payload_type: null, on_behalf_of: null, received_at: '2026-11-25T10:00:01Z', extras: null, risk: [], covered: [], covered_total: 0, grant_ended: null, later: null, key_change: true };
let waiting: unknown[] = [knock];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => {
    if (cmd === 'consent_list') return Promise.resolve(waiting);
    if (cmd === 'quiet_hours_get') return Promise.resolve({ hours: null, quiet_now: false, collected: 0 });
    if (cmd === 'contact_add_key') { waiting = [held]; return Promise.resolve('Added to Al as a new key. Al was verified, so everything this key sends is held until you verify it too.'); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

test('the words about an adopted key stay while what it sent waits', async () => {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  document.querySelector<HTMLButtonElement>('button.adopt')!.click();
  await vi.waitFor(() => expect(document.getElementById('consent-notice')?.textContent).toContain('held until you verify it'));
  // The change signal redraws the list (the held message is already in it).
  await view.load();
  expect(document.getElementById('consent-notice')?.textContent).toContain('held until you verify it');
  expect(document.querySelector('.consent-card.held')).not.toBeNull();
});
