// A team gate's item, decided on this desktop: every field the gate's approval digest
// covers is on the card (the gate sends them as lines in words, `shown`).
import { vi } from 'vitest';

vi.mock('@tauri-apps/api/core', () => ({ invoke: () => Promise.reject({ code: 'INTERNAL', message: 'unmocked' }) }));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { TeamSection } from './team';
import { replace } from '../dom';
import type { ApproverItem, TeamWaiting } from '../api';

const key = 'ab'.repeat(32);
const line = (field: string, label: string, text: string, warn = false) => ({ field, label, text, warn });
const item = {
  target: { kind: 'unknown_sender', public_key: key, knock: 'rcpt-1' },
  digest: 'd'.repeat(64),
  item: {
    kind: 'unknown_sender', public_key: key, source: 'epp_sender', first_seen: '2026-11-27T08:00:00Z', last_seen: '2026-11-28T08:00:00Z', count: 2,
    scopes_tried: ['billing'], knock: 'rcpt-1', envelope_id: 'env-1', scope: 'billing', prompt: 'Pay the invoice from my new account',
    extras: { integrity: 'sha-256', capabilities: ['read files in ~/Documents'], provenance: [], inert: [] }, risk: [], covered: [], covered_total: 0, later: null,
    claims: [{ contact_id: 7, contact_name: 'Alice', verified: false, how: 'says it acts on behalf of Alice, with a key that is not theirs' }],
  },
  shown: [
    line('claims', 'Claims', 'says it acts on behalf of Alice, with a key that is not theirs (a contact)', true),
    line('source', 'Who', 'a sender (EPP) not in your trust registry'),
    line('public_key', 'Key', key),
    line('scope', 'Asks for', 'billing'),
    line('count', 'Knocked', '2 time(s)'),
    line('first_seen', 'First seen', '2026-11-27T08:00:00Z'),
    line('last_seen', 'Last seen', '2026-11-28T08:00:00Z'),
    line('scopes_tried', 'Scopes tried', 'billing'),
    line('prompt', 'Message', 'Pay the invoice from my new account'),
    line('extras', 'Integrity', 'the payload matched its sha-256 hash'),
    line('extras', 'Asks to use', 'read files in ~/Documents'),
    line('envelope_id', 'Message id', 'env-1'),
    line('knock', 'Knock', 'rcpt-1'),
  ],
  quorum: null,
  looking: [],
} as unknown as ApproverItem;

test('every line the approval digest covers is drawn on the card this desktop decides from', () => {
  const team = new TeamSection();
  replace(document.body, team.el);
  const waiting = { membership: { id: 'ap-1', gate_url: 'https://gate.example', gate_key: 'cd'.repeat(32), name: 'Ana', joined_at: '' }, items: [item] } as unknown as TeamWaiting;
  team.update(waiting);
  const card = document.querySelector('.consent-card.team') as HTMLElement;
  const text = card.textContent ?? '';
  for (const l of item.shown) {
    // Claims are drawn as the card's own warning; every other line in the gate's words.
    const needle = l.field === 'claims' ? 'acts on behalf of Alice' : l.text;
    expect(text, `${l.field}: ${l.text}`).toContain(needle);
  }
  // A warning among the lines: the main action is not an allow.
  const primary = card.querySelector('.actions button.primary') as HTMLButtonElement;
  expect(primary.dataset.decision).toBe('deny');
  expect((card.querySelector('button[data-decision="allow_once"]') as HTMLButtonElement).className).not.toContain('primary');
});

test('a gate whose log no longer extends what this desktop holds says so above what waits there', () => {
  const team = new TeamSection();
  replace(document.body, team.el);
  const waiting = { membership: { id: 'ap-2', gate_url: 'https://gate.example', gate_key: 'cd'.repeat(32), name: 'Ana', joined_at: '' }, items: [], error: null,
    log_problem: 'entries after #1 were removed: the gate signed the log up to #2' } as unknown as TeamWaiting;
  team.update(waiting);
  const warning = document.querySelector('[data-gate="ap-2"] .log-rewound');
  expect(warning?.getAttribute('role')).toBe('alert');
  expect(warning?.textContent).toBe('This gate’s activity log was changed behind its back: entries after #1 were removed: the gate signed the log up to #2. Tell the gate’s owner.');
  team.update({ ...waiting, log_problem: null } as unknown as TeamWaiting);
  expect(document.querySelector('[data-gate="ap-2"] .log-rewound')).toBeNull();
});
