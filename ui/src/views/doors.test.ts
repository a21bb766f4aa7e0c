// The plain-HTTP switch says what it did even when the read after it fails, and only the
// newest read of the doors draws.
import { vi } from 'vitest';

let plain = false;
let failNext = false;
const slow: (() => void)[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { on?: boolean }) => {
    if (cmd === 'uamp_info') return Promise.resolve({ did: 'did:x', cert_sha256: 'ab', listening: '127.0.0.1:1', error: null });
    if (cmd === 'a2a_info') {
      if (failNext) { failNext = false; return Promise.reject({ code: 'INTERNAL', message: 'the store is busy' }); }
      const now = { endpoint: 'https://127.0.0.1:2/a2a', plain_endpoint: plain ? 'http://127.0.0.1:3/a2a' : null, plain };
      if (slow.length === 0 && (globalThis as { holdNext?: boolean }).holdNext) {
        (globalThis as { holdNext?: boolean }).holdNext = false;
        return new Promise((resolve) => slow.push(() => resolve({ ...now, plain: false, plain_endpoint: null })));
      }
      return Promise.resolve(now);
    }
    if (cmd === 'a2a_plain_set') { plain = Boolean(args.on); return Promise.resolve(plain); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));

import { DoorCards } from './doors';
import { replace } from '../dom';

test('the switch says what it did although the read after it failed', async () => {
  const cards = new DoorCards();
  replace(document.body, cards.el);
  await cards.load();
  failNext = false;
  const box = document.getElementById('a2a-plain') as HTMLInputElement;
  failNext = true;
  box.click();
  await vi.waitFor(() => expect(document.getElementById('a2a-plain-msg')?.textContent).toContain('may now call over plain HTTP'));
  expect(document.body.textContent).toContain('the store is busy');
});

test('an older read answering last does not draw over the newest', async () => {
  plain = true;
  const cards = new DoorCards();
  replace(document.body, cards.el);
  (globalThis as { holdNext?: boolean }).holdNext = true;
  const older = cards.load();
  await cards.load();
  expect(document.getElementById('a2a-plain-endpoint')?.textContent).toBe('http://127.0.0.1:3/a2a');
  slow.splice(0).forEach((f) => f());
  await older;
  expect(document.getElementById('a2a-plain-endpoint')?.textContent).toBe('http://127.0.0.1:3/a2a');
});
