// Opening Settings reads them anew: until the new read is drawn, the old view is not there to
// be typed into or clicked (what was typed would be drawn over, what was clicked said nowhere).
import { vi } from 'vitest';

let hold: Promise<unknown> | null = null;
vi.mock('@tauri-apps/api/core', () => ({
  invoke: async (cmd: string) => {
    if (cmd === 'approvers_list') { await hold; return [{ id: 'ap-1', name: 'Ana’s phone', last_seen: null }]; }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { SettingsView } from './settings';
import { replace } from '../dom';
import { settingsInfo } from './settings.fixture';

test('while Settings are read again, the old ones cannot be edited', async () => {
  const view = new SettingsView(() => Promise.resolve());
  replace(document.body, view.el);
  const info = settingsInfo();
  await view.load(info);
  expect(document.querySelector('#approvers-list input.approver-name')).not.toBeNull();
  let release!: () => void;
  hold = new Promise<void>((r) => { release = r; });
  const again = view.load(info);
  await new Promise((r) => setTimeout(r, 0));
  expect(document.querySelector('#approvers-list'), 'the old devices are gone while reading').toBeNull();
  expect(document.querySelector('#settings-port'), 'the old port field is gone while reading').toBeNull();
  expect(view.el.getAttribute('aria-busy')).toBe('true');
  release();
  await again;
  expect(document.querySelector('#approvers-list input.approver-name')).not.toBeNull();
  expect(view.el.hasAttribute('aria-busy')).toBe(false);
});
