// Settings says whether someone you trust, writing about something new, asks you; the
// switch changes it and says what happens from now on.
import { vi } from 'vitest';

const set: boolean[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { ask?: boolean }) => {
    if (cmd === 'ask_new_scopes_get') return Promise.resolve(true);
    if (cmd === 'ask_new_scopes_set') { set.push(args.ask!); return Promise.resolve(args.ask); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));

import { askNewScopesCard } from './asknew';
import { replace } from '../dom';

test('asking is on until the user turns it off, and the switch says what follows', async () => {
  replace(document.body, await askNewScopesCard());
  const box = document.getElementById('ask-new-scopes') as HTMLInputElement;
  expect(box.checked).toBe(true);
  box.click();
  await vi.waitFor(() => expect(document.getElementById('ask-new-msg')?.textContent).toBe('From now on such messages are refused, and you are not asked.'));
  expect(set).toEqual([false]);
});
