// An invitation goes with its use: once the phone has joined, its QR code and code are
// replaced by who joined, and the device is in the list (drawn again on the change).
import { vi } from 'vitest';

let devices: { id: string; name: string; last_seen: string | null }[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => {
    if (cmd === 'approvers_list') return Promise.resolve(devices);
    if (cmd === 'approver_invite') return Promise.resolve({ invitation: { name: 'Ana’s phone', url: 'https://gate.example/approve#c', code: 'c0de', expires_at: '2026-11-30T10:00:00Z' }, qr_svg: '<svg/>' });
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));

import { approversCard } from './approvers';
import { replace } from '../dom';

test('a used invitation is replaced by who joined', async () => {
  const { card, refresh } = await approversCard('https://gate.example');
  replace(document.body, card);
  expect(document.getElementById('approvers-list')?.textContent).toBe('No devices yet.');
  (document.getElementById('approver-name') as HTMLInputElement).value = 'Ana’s phone';
  (document.getElementById('approver-invite') as HTMLButtonElement).form!.requestSubmit();
  await vi.waitFor(() => expect(document.getElementById('approver-qr')).not.toBeNull());
  await refresh();
  expect(document.getElementById('approver-qr'), 'nobody joined yet').not.toBeNull();
  devices = [{ id: 'ap-1', name: 'Ana’s phone', last_seen: null }];
  await refresh();
  expect(document.getElementById('approver-qr')).toBeNull();
  expect(document.getElementById('approver-joined')?.textContent).toContain('Ana’s phone joined');
  expect(document.getElementById('approvers-list')?.textContent).toContain('Ana’s phone');
});
