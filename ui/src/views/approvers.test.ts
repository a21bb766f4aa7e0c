// An invitation goes with its use: once the phone has joined, its QR code and code are
// replaced by who joined, and the device is in the list (drawn again on the change).
import { vi } from 'vitest';

let devices: { id: string; name: string; last_seen: string | null }[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { url?: string }) => {
    if (cmd === 'approvers_list') return Promise.resolve(devices);
    if (cmd === 'approver_invite') return Promise.resolve({ invitation: { name: 'Ana’s phone', url: `${args.url}/approve#c`, code: 'c0de', expires_at: '2026-11-30T10:00:00Z' }, qr_svg: '<svg/>' });
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

test('a name being typed survives the list being drawn again', async () => {
  devices = [{ id: 'ap-1', name: 'Ana’s phone', last_seen: null }, { id: 'ap-2', name: 'Bo’s tablet', last_seen: null }];
  const { card, refresh } = await approversCard('https://gate.example');
  replace(document.body, card);
  const input = (id: string) => document.querySelector<HTMLInputElement>(`#approvers-list li[data-id='${id}'] input.approver-name`)!;
  input('ap-1').focus();
  input('ap-1').value = 'Ana’s work phone';
  const typedIn = input('ap-1');
  // The phone was seen meanwhile: the list is drawn again under the person typing.
  devices = [{ id: 'ap-1', name: 'Ana’s phone', last_seen: '2026-11-29T10:00:00Z' }, { id: 'ap-2', name: 'Bo’s tablet', last_seen: null }];
  await refresh();
  expect(document.querySelector(`#approvers-list li[data-id='ap-1']`)?.textContent).toContain('last seen');
  expect(input('ap-1'), 'the very field being typed in stays').toBe(typedIn);
  expect(input('ap-1').value).toBe('Ana’s work phone');
  expect(document.activeElement).toBe(input('ap-1'));
  expect(input('ap-2').value, 'an untouched name follows the gate').toBe('Bo’s tablet');
});

test('an invitation at an address only this computer can use says so', async () => {
  devices = [];
  const { card } = await approversCard('http://127.0.0.1:7777');
  replace(document.body, card);
  (document.getElementById('approver-name') as HTMLInputElement).value = 'Ana’s phone';
  (document.getElementById('approver-invite') as HTMLButtonElement).form!.requestSubmit();
  await vi.waitFor(() => expect(document.getElementById('approver-qr')).not.toBeNull());
  expect(document.getElementById('approver-here-only')?.textContent).toContain('works only in a browser on this computer');
  (document.getElementById('approver-url') as HTMLInputElement).value = 'https://gate.example';
  (document.getElementById('approver-invite') as HTMLButtonElement).form!.requestSubmit();
  await vi.waitFor(() => expect(document.getElementById('approver-here-only')).toBeNull());
});
