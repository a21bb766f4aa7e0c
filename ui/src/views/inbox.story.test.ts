// One row per arrival: a knock waits, then is the message it became (its row goes when
// that message arrives), or says it was denied or blocked once that is decided anywhere.
import { vi } from 'vitest';

type Row = ReturnType<typeof knock>;
let rows: Row[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { filter: { after_seq?: number | null } }) => {
    if (cmd === 'inbox_list') return Promise.resolve(rows.filter((r) => args.filter.after_seq == null || r.seq > args.filter.after_seq).sort((a, b) => b.seq - a.seq));
    if (cmd === 'replies_list') return Promise.resolve([]);
    return Promise.reject({ code: 'UNMOCKED', message: cmd });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { InboxView, renderDetail } from './inbox';
import { replace } from '../dom';
import type { ArrivalOutcome, Detail } from '../api';

function knock(seq: number, story: Partial<{ decided: string | null; decided_at: string | null; knocked_at: string | null; after_knock: string | null; waiting: boolean; outcome: ArrivalOutcome | null }> = {}) {
  return {
    seq, receipt_id: `r-${seq}`, envelope_id: 'e-1', status: 'rejected', code: 'UNTRUSTED_SENDER' as string | null, message: 'sender 4664fe4f… is not in this inbox’s trust registry; the owner has been asked',
    received_at: '2026-11-29T09:00:00Z', transport: 'http', sender: '4664fe4f'.repeat(8), sender_name: null, scope: 'support', prompt_preview: 'Where is my order?',
    envelope_row: null as number | null, exec_status: null as string | null, payload_type: null, conversation_id: null, on_behalf_of: null, on_behalf_of_name: null,
    story: { decided: null, decided_at: null, knocked_at: null, after_knock: null, waiting: false, outcome: null as ArrivalOutcome | null, ...story }, flags: 0,
  };
}
const badges = () => [...document.querySelectorAll('#inbox-rows .row')].map((r) => [(r as HTMLElement).dataset.receipt, r.querySelector('.badge')?.textContent]);

test('a knock waits, and once let in its row is the message it became', async () => {
  rows = [knock(1, { waiting: true })];
  const view = new InboxView();
  replace(document.body, view.el);
  await view.load(false);
  expect(badges()).toEqual([['r-1', 'Waits for you']]);
  expect(document.querySelector('#inbox-rows .row .who')?.textContent).toBe('Sender 4664fe4f');
  rows = [knock(1, { decided: 'allow_once', decided_at: '2026-11-29T09:02:00Z' }),
    { ...knock(2, { decided: 'allow_once', decided_at: '2026-11-29T09:02:00Z', knocked_at: '2026-11-29T09:00:00Z', after_knock: 'r-1' }), status: 'accepted', code: null, envelope_row: 7, exec_status: 'succeeded' }];
  rows = rows.filter((r) => r.seq !== 1);
  await view.patch();
  expect(badges()).toEqual([['r-2', 'Done']]);
  expect(document.querySelector('#inbox-rows .row .story')?.textContent).toBe('allowed once by you');
});

test('a knock denied or blocked anywhere says so on its row', async () => {
  rows = [knock(3, { waiting: true }), knock(4, { waiting: true })];
  const view = new InboxView();
  replace(document.body, view.el);
  await view.load(false);
  rows = [knock(3, { decided: 'deny', decided_at: '2026-11-29T09:05:00Z' }), knock(4, { decided: 'block', decided_at: '2026-11-29T09:05:00Z' })];
  await view.restory();
  expect(badges()).toEqual([['r-4', 'Blocked by you'], ['r-3', 'Denied by you']]);
  // What the blocked sender sends after is refused as blocked, never as "not trusted".
  rows = [...rows, { ...knock(9, { outcome: 'blocked' }), message: 'sender is blocked by the owner of this inbox' }];
  await view.patch();
  expect(badges()[0]).toEqual(['r-9', 'Blocked by you']);
});

test('the detail says what became of it; the receipt’s words are what the sender was told', () => {
  const el = document.createElement('aside');
  const d = {
    receipt: { receipt_id: 'r-4', envelope_id: 'e-1', status: 'rejected', code: 'UNTRUSTED_SENDER', message: 'sender 4664fe4f… is not in this inbox’s trust registry; the owner has been asked', received_at: '2026-11-29T09:00:00Z', received_ms: 0, transport: 'http', sender: '4664fe4f'.repeat(8), scope: 'support', body: null, body_truncated: false, receipt: {}, prompt: 'hi', envelope_row: null, outcome: null },
    envelope: null, steps: [], sender_name: null, on_behalf_of_name: null, raw: null, extras: null, email: null, risk: [],
    story: { decided: 'block', decided_at: new Date().toISOString(), knocked_at: null, after_knock: null, waiting: false }, delivered_as: null,
  } as unknown as Detail;
  renderDetail(el, d, () => {}, () => {});
  expect(el.querySelector('h2')?.textContent).toBe('Blocked by you');
  expect(el.querySelector('#detail-story')?.textContent).toBe('You blocked its sender just now: nothing from it reaches you or asks again.');
  expect(el.querySelector('#detail-reason')?.textContent).toMatch(/^The sender was told: “sender 4664fe4f… is not in/);
  // A blocked sender's later message: its detail reads as its row does.
  renderDetail(el, { ...d, story: { ...d.story, decided: null, decided_at: null, outcome: 'blocked' } } as Detail, () => {}, () => {});
  expect(el.querySelector('h2')?.textContent).toBe('Blocked by you');
});

test('a knock from a sender trusted for other scopes is not called a stranger’s', () => {
  const el = document.createElement('aside');
  const base = {
    receipt: { receipt_id: 'r-5', envelope_id: 'e-5', status: 'rejected', code: 'POLICY_DENIED', message: 'scope "billing" is not allowed for this sender', received_at: '2026-11-29T09:00:00Z', received_ms: 0, transport: 'http', sender: 'ab'.repeat(32), scope: 'billing', body: null, body_truncated: false, receipt: {}, prompt: 'pay', envelope_row: null, outcome: null },
    envelope: null, steps: [], sender_name: 'Alice', on_behalf_of_name: null, raw: null, extras: null, email: null, risk: [], delivered_as: null,
  };
  renderDetail(el, { ...base, story: { decided: null, decided_at: null, knocked_at: null, after_knock: null, waiting: true, outcome: 'not_allowed' } } as unknown as Detail, () => {}, () => {});
  expect(el.querySelector('#detail-story')?.textContent).toBe('It asks about a scope you have not allowed its sender. It waits for you under Waiting for you.');
  const delivered = { ...base, receipt: { ...base.receipt, status: 'accepted', code: null }, story: { decided: 'allow_once', decided_at: '2026-11-29T09:02:00Z', knocked_at: '2026-11-29T09:00:00Z', after_knock: 'r-5', waiting: false, outcome: 'accepted' } };
  renderDetail(el, delivered as unknown as Detail, () => {}, () => {});
  expect(el.querySelector('#detail-story')?.textContent).not.toContain('not in your trust registry');
  expect(el.querySelector('#detail-story')?.textContent).toMatch(/^It knocked .*; you allowed it once /);
});

test('a row whose message raises warnings is marked, with how many', async () => {
  rows = [{ ...knock(5, { waiting: true }), flags: 2 }, { ...knock(6), sender: 'ab'.repeat(32), flags: 0 }];
  const view = new InboxView();
  replace(document.body, view.el);
  await view.load(false);
  const [plain, flagged] = [...document.querySelectorAll('#inbox-rows .row')];
  expect(flagged.classList.contains('flagged')).toBe(true);
  expect(flagged.querySelector('.flag-mark')?.textContent).toBe('⚠ 2 warnings');
  expect(plain.classList.contains('flagged')).toBe(false);
  expect(plain.querySelector('.flag-mark')).toBeNull();
});

test('a detail the filtered list no longer holds goes with it (Ctrl+K’s person)', async () => {
  rows = [knock(7), { ...knock(8), sender: 'ab'.repeat(32) }];
  const view = new InboxView();
  replace(document.body, view.el);
  await view.load(false);
  await view.show('r-7');
  expect(document.querySelector('#inbox-rows .row.selected')?.getAttribute('data-receipt')).toBe('r-7');
  rows = [{ ...knock(8), sender: 'ab'.repeat(32) }];
  view.fromContact(1, 'Alice');
  await vi.waitFor(() => expect(document.querySelectorAll('#inbox-rows .row')).toHaveLength(1));
  expect(document.getElementById('inbox-detail')?.textContent).toBe('Select a message to see everything about it.');
});
