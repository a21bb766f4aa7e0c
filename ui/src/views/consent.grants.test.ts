// How long an allow lasts is chosen on the prompt and sent with the decision; a prompt can
// be put off; what a grant for good would have let in is listed before it is given.
import { vi } from 'vitest';

const decided: unknown[] = [];
const item = {
  kind: 'unknown_sender', public_key: 'ab'.repeat(32), source: 'epp_sender', first_seen: '', last_seen: '', count: 1, scopes_tried: ['support'],
  envelope_id: 'e3', scope: 'support', prompt: 'hello', extras: null, risk: [], later: null, claims: [],
  covered: [{ envelope_id: 'e2', received_at: '2026-11-25T10:00:00Z', excerpt: 'an earlier question', outcome: 'refused' }], covered_total: 2,
};
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { decision?: unknown; lasting?: unknown }) => {
    if (cmd === 'consent_list') return Promise.resolve([item]);
    if (cmd === 'consent_decide') { decided.push([args.decision, args.lasting]); return Promise.resolve({ message: 'done', receipt: null }); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

async function shown(): Promise<HTMLElement> {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  return document.querySelector('.consent-card') as HTMLElement;
}

const tick = () => new Promise((r) => setTimeout(r, 0));

test('the allow button says and sends how long it lasts', async () => {
  decided.length = 0;
  const card = await shown();
  const allow = card.querySelector('button[data-decision="always_allow_scope"]') as HTMLButtonElement;
  expect(allow.textContent).toBe('Always allow for “support”');
  const select = card.querySelector('select.grant-for') as HTMLSelectElement;
  select.value = 'hour';
  select.dispatchEvent(new Event('change'));
  expect(allow.textContent).toBe('Allow “support” for 1 hour');
  allow.click();
  await tick();
  expect(decided).toEqual([['always_allow_scope', { for: 'hour' }]]);
});

test('until a date needs the date before anything is sent', async () => {
  decided.length = 0;
  const card = await shown();
  const select = card.querySelector('select.grant-for') as HTMLSelectElement;
  const date = card.querySelector('input.grant-date') as HTMLInputElement;
  expect(date.hidden).toBe(true);
  select.value = 'until';
  select.dispatchEvent(new Event('change'));
  expect(date.hidden).toBe(false);
  (card.querySelector('button[data-decision="always_allow_scope"]') as HTMLButtonElement).click();
  await tick();
  expect(decided).toEqual([]);
  expect(card.querySelector('.result')?.textContent).toContain('Choose the date');
  date.value = '2031-01-02';
  date.dispatchEvent(new Event('input'));
  (card.querySelector('button[data-decision="always_allow_scope"]') as HTMLButtonElement).click();
  await tick();
  expect(decided).toEqual([['always_allow_scope', { for: 'until', date: '2031-01-02' }]]);
});

test('ask me later puts the prompt off (Alt+L) and the past a grant covers is listed', async () => {
  decided.length = 0;
  const card = await shown();
  expect(card.querySelector('.covered summary')?.textContent).toContain('2 earlier messages');
  expect(card.querySelector('.covered li')?.textContent).toContain('an earlier question');
  card.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyL', key: 'l', altKey: true, bubbles: true }));
  await tick();
  expect(decided).toEqual([['ask_later', null]]);
});

test('a redraw (another arrival) keeps the choice being made on a prompt', async () => {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  const select = document.querySelector('.consent-card select.grant-for') as HTMLSelectElement;
  select.value = 'tonight';
  select.dispatchEvent(new Event('change'));
  await view.load();
  expect((document.querySelector('.consent-card select.grant-for') as HTMLSelectElement).value).toBe('tonight');
  expect(document.querySelector('.consent-card button[data-decision="always_allow_scope"]')?.textContent).toBe('Allow “support” until tonight');
});
