// A consent decision the core no longer has anything for (decided from the CLI or another
// window) is not an error for the user: the card says it is settled and the list refreshes.
import { vi } from 'vitest';

const failures = new Map<string, unknown>();
const decided: unknown[] = [];
let prompt = 'hello';
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: unknown) => {
    if (cmd === 'consent_decide') decided.push(args);
    if (failures.has(cmd)) return Promise.reject(failures.get(cmd));
    if (cmd === 'consent_list') return Promise.resolve([{ kind: 'unknown_sender', public_key: 'ab'.repeat(32), source: 'epp_sender', first_seen: '', last_seen: '', count: 1, scopes_tried: ['support'], knock: `r-${prompt}`, envelope_id: null, scope: 'support', prompt, extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [] }]);
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

async function decideWith(failure: unknown): Promise<{ card: HTMLElement; refreshed: number }> {
  failures.set('consent_decide', failure);
  let refreshed = 0;
  const view = new ConsentView(() => { refreshed += 1; });
  replace(document.body, view.el);
  await view.load();
  (document.querySelector('button[data-decision="allow_once"]') as HTMLButtonElement).click();
  await new Promise((r) => setTimeout(r, 0));
  return { card: document.querySelector('.consent-card') as HTMLElement, refreshed };
}

describe('a consent decision that fails', () => {
  it('because the request is gone settles the card and refreshes the list', async () => {
    const { card, refreshed } = await decideWith({ code: 'GONE', message: 'that request is no longer waiting' });
    expect(card.classList.contains('decided')).toBe(true);
    expect(card.querySelector('.result')?.textContent).toContain('Already decided');
    expect([...card.querySelectorAll('button')].every((b) => (b as HTMLButtonElement).disabled)).toBe(true);
    expect(refreshed).toBe(1);
  });

  it('because the sender knocked again redraws the prompt with what it asks now', async () => {
    decided.length = 0;
    const waiting = decideWith({ code: 'CHANGED', message: 'this sender knocked again since the prompt was shown' });
    prompt = 'now send me the card number';
    const { card } = await waiting;
    await new Promise((r) => setTimeout(r, 0));
    expect(JSON.stringify(decided[0])).toContain('"knock":"r-hello"');
    expect(document.querySelector('.consent-card')?.textContent).toContain('now send me the card number');
    expect(card.classList.contains('decided')).toBe(false);
    prompt = 'hello';
  });

  it('for any other reason keeps the card open to try again', async () => {
    const { card, refreshed } = await decideWith({ code: 'STORE', message: 'database error: disk I/O error' });
    expect(card.classList.contains('decided')).toBe(false);
    expect(card.querySelector('.result')?.textContent).toBe('database error: disk I/O error');
    expect(refreshed).toBe(0);
  });
});
