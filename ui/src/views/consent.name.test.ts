// A stranger is named on its own prompt: the name goes with letting it in (for good or a
// while), never with a decision that keeps nothing; until then the prompt says how it is shown.
import { vi } from 'vitest';

const knock = { kind: 'unknown_sender', public_key: '4664fe4f'.repeat(8), source: 'epp_sender', first_seen: '2026-11-25T10:00:00Z', last_seen: '2026-11-25T10:00:00Z', count: 1, scopes_tried: ['support'], knock: 'r-1', envelope_id: 'e-1', scope: 'support', prompt: 'Where is my order?', extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [] };
const calls: unknown[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string, args: unknown) => {
    if (cmd === 'consent_list') return Promise.resolve([knock]);
    if (cmd === 'quiet_hours_get') return Promise.resolve({ hours: null, quiet_now: false, collected: 0 });
    if (cmd === 'consent_decide') { calls.push(args); return Promise.resolve({ message: 'Done.' }); }
    if (cmd === 'contacts_list') return Promise.resolve([{ id: 7, name: 'Alice', created_at: '', verified: false, key_changed: false, namesakes: [], keys: [] }]);
    if (cmd === 'contact_add_key') { calls.push({ adopt: args }); return Promise.resolve('Added to Alice as one of their keys.'); }
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { replace } from '../dom';

async function card(): Promise<HTMLElement> {
  const view = new ConsentView(() => {});
  replace(document.body, view.el);
  await view.load();
  return document.querySelector<HTMLElement>('.consent-card.unknown_sender')!;
}

test('the name typed on a prompt goes with letting the sender in', async () => {
  const c = await card();
  expect(c.querySelector('.name-it')?.textContent).toContain('Kept once you let it in, for good or for a while; until then it is “Sender 4664fe4f”');
  c.querySelector<HTMLInputElement>('input.sender-name')!.value = '  Alice ';
  c.querySelector<HTMLButtonElement>('button[data-decision="always_allow_scope"]')!.click();
  await vi.waitFor(() => expect(calls).toHaveLength(1));
  expect(calls[0]).toMatchObject({ decision: 'always_allow_scope', name: 'Alice' });
});

test('allowing once keeps no name, so none is sent', async () => {
  calls.length = 0;
  const c = await card();
  c.querySelector<HTMLInputElement>('input.sender-name')!.value = 'Alice';
  c.querySelector<HTMLButtonElement>('button[data-decision="allow_once"]')!.click();
  await vi.waitFor(() => expect(calls).toHaveLength(1));
  expect(calls[0]).toMatchObject({ decision: 'allow_once', name: null });
});

test('a stranger can be picked as a new key of someone the user knows, on its prompt', async () => {
  calls.length = 0;
  const c = await card();
  const pick = c.querySelector<HTMLSelectElement>('select.pick-person')!;
  const go = c.querySelector<HTMLButtonElement>('button[data-action="pick-person"]')!;
  expect([...pick.options].map((o) => o.textContent)).toEqual(['one of your contacts…', 'Alice']);
  expect(go.disabled, 'nothing is picked yet').toBe(true);
  pick.value = '7';
  pick.dispatchEvent(new Event('change'));
  go.click();
  await vi.waitFor(() => expect(calls).toEqual([{ adopt: { contactId: 7, key: '4664fe4f'.repeat(8) } }]));
  await vi.waitFor(() => expect(document.getElementById('consent-notice')?.textContent).toBe('Added to Alice as one of their keys.'));
});
