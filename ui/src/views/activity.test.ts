// Activity in words: what was allowed, refused or changed, filtered by kind and by time;
// the names are the contacts' where the key is known.
import { vi } from 'vitest';

const day = 24 * 3600 * 1000;
const at = (daysAgo: number) => new Date(Date.now() - daysAgo * day).toISOString();
const entry = (id: number, action: string, daysAgo: number, subject: string | null, detail: unknown = {}) => ({ id, at: at(daysAgo), action, subject, detail, prev_hash: '', hash: '' });
const entries = [
  entry(5, 'trust.block', 0, 'bb'.repeat(32)),
  entry(4, 'consent.always_allow_scope', 1, 'aa'.repeat(32), { result: 'Trusted for “support”.' }),
  entry(3, 'asop.answer', 2, null, { decision: 'allow' }),
  entry(2, 'asop.answer', 2, null, { decision: 'deny' }),
  entry(1, 'trust.add', 20, null, { name: 'Dana' }),
];
const contacts = [{ id: 1, name: 'Alice', created_at: '', verified: false, key_changed: false, namesakes: [], keys: [{ key: 'aa'.repeat(32) }] }];
// The store's side of `audit_list`: entries from `since` on, below `before`, `pageSize` at a time.
let pageSize = 200;
const asked: { since: string | null; before: number | null }[] = [];
function auditPage(q: { since: string | null; before: number | null }) {
  asked.push(q);
  const from = entries.filter((e) => (q.since === null || e.at >= q.since) && (q.before === null || e.id < q.before));
  return { entries: from.slice(0, pageSize), older: from.length > pageSize };
}
// How long each next `audit_list` answer takes (ms), to answer out of order.
const delays: number[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { query: { since: string | null; before: number | null } }) => {
    const answer = cmd === 'audit_list' ? auditPage(args.query) : cmd === 'contacts_list' ? contacts : null;
    const wait = cmd === 'audit_list' ? delays.shift() ?? 0 : 0;
    return new Promise((resolve) => setTimeout(() => resolve(answer), wait));
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ActivityView } from './activity';
import { replace } from '../dom';

const shown = () => [...document.querySelectorAll<HTMLElement>('#audit-list li')].map((l) => l.querySelector('span')?.textContent ?? '');
function choose(id: string, value: string) {
  const s = document.querySelector(id) as HTMLSelectElement;
  s.value = value;
  s.dispatchEvent(new Event('change'));
}

test('entries in words, with the contact’s name', async () => {
  const v = new ActivityView();
  replace(document.body, v.el);
  await v.load();
  expect(shown()[1]).toBe('You allowed Alice — Trusted for “support”.');
  expect(shown()[4]).toBe('You trusted Dana');
});

test('what was allowed this week leaves out refusals and older allowances', async () => {
  const v = new ActivityView();
  replace(document.body, v.el);
  await v.load();
  choose('#activity-show', 'allowed');
  choose('#activity-when', 'week');
  await vi.waitFor(() => expect(document.querySelectorAll('#audit-list li')).toHaveLength(2));
  expect([...document.querySelectorAll<HTMLElement>('#audit-list li')].map((l) => l.dataset.kind)).toEqual(['allowed', 'allowed']);
  expect(document.querySelector('#audit-list')?.textContent).not.toContain('Dana');
  choose('#activity-show', 'refused');
  await vi.waitFor(() => expect(shown()).toEqual(['You blocked Sender bbbbbbbb', 'You answered a step of your agent: deny']));
});

test('the period is asked of the store, and older entries are a click away, kept across a redraw', async () => {
  pageSize = 2;
  const v = new ActivityView();
  replace(document.body, v.el);
  await v.load();
  expect(shown()).toHaveLength(2);
  expect(asked.at(-1)).toEqual({ since: null, before: null });
  (document.querySelector('#activity-older') as HTMLButtonElement).click();
  await vi.waitFor(() => expect(shown()).toHaveLength(4));
  expect(asked.at(-1)).toEqual({ since: null, before: 4 });
  await v.load();
  expect(shown()).toHaveLength(4);
  (document.querySelector('#activity-older') as HTMLButtonElement).click();
  await vi.waitFor(() => expect(shown()).toHaveLength(5));
  expect(document.querySelector('#activity-older')).toBeNull();
  choose('#activity-when', 'week');
  await vi.waitFor(() => expect(shown()).toHaveLength(2));
  const since = Date.parse(asked.at(-1)?.since ?? '');
  expect(Math.abs(since - (Date.now() - 7 * day))).toBeLessThan(60_000);
  pageSize = 200;
});

test('a slow answer for a filter chosen before does not overwrite the one chosen after', async () => {
  const v = new ActivityView();
  replace(document.body, v.el);
  await v.load();
  // "Allowed" is asked first and answers last; "this week" is asked after and answers first.
  delays.push(150, 0);
  choose('#activity-show', 'allowed');
  choose('#activity-when', 'week');
  await new Promise((r) => setTimeout(r, 300));
  expect(document.querySelectorAll('#audit-list li')).toHaveLength(2);
  expect(document.querySelector('#audit-list')?.textContent).not.toContain('Dana');
});
