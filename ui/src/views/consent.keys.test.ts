// A prompt can be decided from the keyboard while it has focus: Alt+D denies, Alt+O allows
// once; a key without Alt decides nothing (a stray keystroke must not let anything in).
import { vi } from 'vitest';

const decided: unknown[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { decision?: unknown }) => {
    if (cmd === 'consent_list') return Promise.resolve([{ kind: 'unknown_sender', public_key: 'ab'.repeat(32), source: 'epp_sender', first_seen: '', last_seen: '', count: 1, scopes_tried: ['support'], envelope_id: null, scope: 'support', prompt: 'hello', extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [] }]);
    if (cmd === 'consent_decide') { decided.push(args.decision); return Promise.resolve({ message: 'done', receipt: null }); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

test('Alt+D denies the focused prompt; D alone does nothing', async () => {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  const card = document.querySelector('.consent-card') as HTMLElement;
  expect(card.getAttribute('tabindex')).toBe('0');
  expect(card.querySelector('button[data-decision="deny"]')?.getAttribute('aria-keyshortcuts')).toBe('Alt+D');
  card.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyD', key: 'd', bubbles: true }));
  await new Promise((r) => setTimeout(r, 0));
  expect(decided).toEqual([]);
  card.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyD', key: 'd', altKey: true, bubbles: true }));
  await new Promise((r) => setTimeout(r, 0));
  expect(decided).toEqual(['deny']);
});
