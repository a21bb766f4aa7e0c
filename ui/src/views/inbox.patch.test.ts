// What arrives is put on top of the inbox list: only what is newer than the top row is
// read (a burst redraws a few rows, not the page), and the list keeps its length.
import { vi } from 'vitest';

type Filter = { after_seq?: number | null; before_seq?: number | null; limit?: number | null };
const asked: Filter[] = [];
let rows: number[] = [];
/** Set: a "Load more" (a page before a row) answers only when the test calls it. */
let holdOlder: ((answer: () => void) => void) | null = null;

vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: { filter: Filter }) => {
    if (cmd !== 'inbox_list') return Promise.reject({ code: 'UNMOCKED', message: cmd });
    const f = args.filter;
    asked.push(f);
    const page = rows
      .filter((s) => (f.after_seq == null || s > f.after_seq) && (f.before_seq == null || s < f.before_seq))
      .sort((a, b) => b - a)
      .slice(0, f.limit ?? 100);
    if (f.before_seq != null && holdOlder) {
      const hold = holdOlder;
      return new Promise((resolve) => hold(() => resolve(page.map(item))));
    }
    return Promise.resolve(page.map(item));
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { InboxView } from './inbox';
import { replace } from '../dom';

function item(seq: number) {
  return {
    seq, receipt_id: `r-${seq}`, envelope_id: `e-${seq}`, status: 'accepted', code: null, message: null, received_at: '2026-11-26T09:00:00Z',
    transport: 'http', sender: 'ab'.repeat(32), sender_name: 'Dr. Lee', scope: 'support', prompt_preview: `prompt ${seq}`, envelope_row: seq,
    exec_status: 'succeeded', payload_type: null, conversation_id: null, on_behalf_of: null, on_behalf_of_name: null,
    story: { decided: null, decided_at: null, knocked_at: null, after_knock: null, waiting: false },
  };
}
const shown = () => [...document.querySelectorAll<HTMLElement>('#inbox-rows .row')].map((r) => r.dataset.receipt);
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

beforeEach(() => { asked.length = 0; rows = []; holdOlder = null; });

async function opened(): Promise<InboxView> {
  const view = new InboxView();
  replace(document.body, view.el);
  await view.load(false);
  return view;
}

describe('the inbox when something arrives', () => {
  it('reads only what is newer than its top row and puts it on top', async () => {
    rows = upTo(3);
    const view = await opened();
    expect(shown()).toEqual(['r-3', 'r-2', 'r-1']);
    rows = upTo(5);
    asked.length = 0;
    await view.patch();
    expect(shown()).toEqual(['r-5', 'r-4', 'r-3', 'r-2', 'r-1']);
    expect(asked).toHaveLength(1);
    expect(asked[0].after_seq).toBe(3);
    // Nothing new: nothing drawn again.
    const top = document.querySelector('#inbox-rows .row');
    await view.patch();
    expect(document.querySelector('#inbox-rows .row')).toBe(top);
  });

  it('keeps the length it had, the oldest rows left to "Load more"', async () => {
    rows = upTo(50);
    const view = await opened();
    expect(document.querySelector<HTMLButtonElement>('#inbox-more')!.hidden).toBe(false);
    rows = upTo(52);
    await view.patch();
    const ids = shown();
    expect(ids).toHaveLength(50);
    expect(ids.slice(0, 3)).toEqual(['r-52', 'r-51', 'r-50']);
    expect(ids).not.toContain('r-1');
    expect(document.querySelector<HTMLButtonElement>('#inbox-more')!.hidden).toBe(false);
  });

  it('reads its page again when more than a page arrived, and when it showed nothing', async () => {
    const view = await opened();
    expect(document.querySelector('#inbox-rows .empty')).not.toBeNull();
    rows = upTo(2);
    await view.patch();
    expect(shown()).toEqual(['r-2', 'r-1']);
    expect(document.querySelector('#inbox-rows .empty')).toBeNull();
    rows = upTo(200);
    asked.length = 0;
    await view.patch();
    expect(shown()).toHaveLength(50);
    expect(shown()[0]).toBe('r-200');
    expect(asked.map((f) => f.after_seq ?? null)).toEqual([2, null]);
  });

  it('loses no row and no "Load more" when something arrives while older rows are on their way', async () => {
    rows = upTo(80);
    const view = await opened();
    let answerOlder: () => void = () => {};
    holdOlder = (answer) => { answerOlder = answer; };
    const more = view.load(true);
    rows = upTo(82);
    await view.patch();
    answerOlder();
    await more;
    const ids = shown();
    expect(ids.slice(0, 3)).toEqual(['r-82', 'r-81', 'r-80']);
    // Every row from the newest down to the oldest shown, none missing in between.
    const seqs = ids.map((id) => Number(id!.slice(2)));
    expect(seqs).toEqual(seqs.map((_, i) => 82 - i));
    expect(seqs[seqs.length - 1]).toBeLessThanOrEqual(31);
  });
});
