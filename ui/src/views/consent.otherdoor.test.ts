// A knock recorded by a door this Gatehouse does not run (a newer node's): the prompt says
// so and offers no way to let it in, only to deny or block it.
import { vi } from 'vitest';

const item = { kind: 'unknown_sender', public_key: '4664fe4f'.repeat(8), source: 'other_door', first_seen: '2026-11-25T10:00:00Z', last_seen: '2026-11-25T10:00:00Z', count: 1, scopes_tried: ['support'], knock: 'r-1', envelope_id: null, scope: 'support', prompt: 'hello', extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [] };
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => {
    if (cmd === 'consent_list') return Promise.resolve([item]);
    if (cmd === 'quiet_hours_get') return Promise.resolve({ hours: null, quiet_now: false, collected: 0 });
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

test('a knock at a door this gate does not run can be denied or blocked, never let in', async () => {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  const card = document.querySelector('.consent-card.unknown_sender') as HTMLElement;
  expect(card.querySelector('.ask')?.textContent).toContain('a door this Gatehouse does not run');
  expect(card.querySelector('button[data-decision="allow_once"], button[data-decision="always_allow_scope"]')).toBeNull();
  expect(card.querySelector('button[data-decision="deny"]')).not.toBeNull();
  expect(card.querySelector('button[data-decision="block"]')).not.toBeNull();
});
