// What happens to accepted messages, per scope: each executor shows its one field (a
// swarm's and a peer's fields are their doors' own, read from a delegation), and saving
// writes back what was shown.
import { vi } from 'vitest';

const saved: unknown[] = [];
const config = {
  default: { kind: 'noop' },
  scopes: {
    research: { kind: 'swarm', swarm: 'helpers', entrypoint: null },
    shout: { kind: 'peer', peer: 'did:web:peer.example', timeout_secs: 300 },
    build: { kind: 'command', program: '/usr/bin/make', args: ['-s', 'all'], timeout_secs: 60 },
  },
};
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { config?: unknown }) => {
    if (cmd === 'executors_get') return Promise.resolve(config);
    if (cmd === 'executors_set') { saved.push(args.config); return Promise.resolve(null); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { SettingsView } from './settings';
import { replace } from '../dom';
import { settingsInfo } from './settings.fixture';

test('a swarm, a peer and a program each show their field, and saving keeps them', async () => {
  const view = new SettingsView(() => Promise.resolve());
  replace(document.body, view.el);
  const info = settingsInfo();
  await view.load(info);
  const rows = [...document.querySelectorAll('table.executors tbody tr')].map((tr) => [
    (tr.querySelector('.ex-scope') as HTMLInputElement).value,
    (tr.querySelector('.ex-kind') as HTMLSelectElement).value,
    (tr.querySelector('.ex-arg') as HTMLInputElement).value,
  ]);
  expect(rows).toEqual([
    ['default', 'noop', ''],
    ['research', 'swarm', 'helpers'],
    ['shout', 'peer', 'did:web:peer.example'],
    ['build', 'command', '/usr/bin/make -s all'],
  ]);
  const save = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Save what happens to messages') as HTMLButtonElement;
  save.click();
  await new Promise((r) => setTimeout(r, 0));
  expect(saved).toEqual([{
    default: { kind: 'noop' },
    scopes: {
      research: { kind: 'swarm', swarm: 'helpers' },
      shout: { kind: 'peer', peer: 'did:web:peer.example', timeout_secs: 300 },
      build: { kind: 'command', program: '/usr/bin/make', args: ['-s', 'all'], timeout_secs: 60 },
    },
  }]);
});
