// A mail account's state in words: a backlog being read says how much is still waiting.
import { vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: () => Promise.reject({ code: 'UNMOCKED', message: '' }) }));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { accountState } from './email';
import type { EmailAccountRow } from '../api';

const base: EmailAccountRow = {
  name: 'personal', account: {}, added_at: '2026-11-25T00:00:00Z', uid_validity: 1, last_uid: 200,
  state: 'connected', last_error: null, last_sync: null, backlog: 0, left_large: 0,
};

test('a backlog being read says how many mails still wait', () => {
  expect(accountState({ ...base, backlog: 9800 })).toBe('Connected, reading a backlog: 9800 mail(s) still waiting');
  expect(accountState(base)).toBe('Connected, reading new mail');
});

test('an error is said in the server\'s words', () => {
  expect(accountState({ ...base, state: 'error', last_error: 'the server refused the login for alice' })).toBe('Not connected: the server refused the login for alice');
});
