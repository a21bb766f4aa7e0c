// Opening Waiting for you reads it anew: until the new list is drawn, what was drawn before
// (a key change verified meanwhile, a prompt decided elsewhere) cannot be clicked.
import { vi } from 'vitest';

const item = { kind: 'key_change', sender: 'did:web:acme.example', sender_name: 'Acme agent', key_id: 'did:web:acme.example#key-2', reason: 'unknown_key', first_seen: '2026-11-25T10:00:00Z', last_seen: '2026-11-25T10:05:00Z', count: 2, verified: true, later: null };
let waiting: unknown[] = [item];
let hold: Promise<unknown> | null = null;
vi.mock('@tauri-apps/api/core', () => ({
  invoke: async (cmd: string) => {
    if (cmd === 'consent_list') { await hold; return waiting; }
    if (cmd === 'quiet_hours_get') return { hours: null, quiet_now: false, collected: 0 };
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

test('while the tab reads what waits anew, the old prompts cannot be clicked', async () => {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  expect(document.querySelector('.consent-card.key_change')).not.toBeNull();
  expect(view.el.hasAttribute('inert')).toBe(false);
  let release!: () => void;
  hold = new Promise<void>((r) => { release = r; });
  waiting = [];
  const again = view.load(true);
  await new Promise((r) => setTimeout(r, 0));
  expect(document.querySelector('.consent-card.key_change'), 'still in view, so nothing jumps').not.toBeNull();
  expect(view.el.getAttribute('aria-busy')).toBe('true');
  expect(view.el.hasAttribute('inert'), 'but not to be clicked').toBe(true);
  release();
  await again;
  expect(document.querySelector('.consent-card.key_change')).toBeNull();
  expect(view.el.hasAttribute('aria-busy')).toBe(false);
  expect(view.el.hasAttribute('inert')).toBe(false);
});
