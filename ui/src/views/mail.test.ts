// A swarm's message is shown as it was sent; where it is off MAIL's schema (the reference
// server's agents send `recipient_swarm: null`), the timeline says so beside it.
import { vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: () => Promise.reject({ code: 'UNMOCKED', message: '' }) }));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { isV2, messageItem } from './mail';
import type { MailMessage } from '../api';

const base: MailMessage = {
  id: 'm1', task_id: 't', ts: '2026-11-25T00:51:42Z', msg_type: 'response', tier: 5,
  sender: 'agent:analyst', recipients: ['agent:supervisor'], subject: 'analysis 1', body: 'analysis 1',
  system_error: false, raw: '{}', odd: null,
};

test('a message off the schema is shown with what was odd', () => {
  const li = messageItem({ ...base, odd: '/message/recipient_swarm: null is not of type "string"' });
  expect(li.textContent).toContain('analysis 1');
  expect(li.querySelector('.mail-odd')?.textContent).toContain('/message/recipient_swarm');
});

test('a message on the schema carries no note', () => {
  expect(messageItem(base).querySelector('.mail-odd')).toBeNull();
});

test('the normal finish is shown as the task completing, not as an error', () => {
  const li = messageItem({ ...base, msg_type: 'broadcast_complete', subject: '::task_complete::', recipients: ['agent:all'] });
  expect(li.className).toContain('finish');
  expect(li.className).not.toContain('system-error');
});

describe('isV2', () => {
  const swarm = (info: unknown) => ({ name: 'c', base_url: 'http://127.0.0.1:1', added_at: '', has_token: true, info }) as Parameters<typeof isV2>[0];
  it('is what the server said when asked, and nothing else', () => {
    expect(isV2(swarm({ server: { name: 'mail', protocol_version: '2.0' } }))).toBe(true);
    expect(isV2(swarm({ server: { name: 'mail', protocol_version: '1.3' } }))).toBe(false);
    expect(isV2(swarm(null))).toBe(false);
  });
});
