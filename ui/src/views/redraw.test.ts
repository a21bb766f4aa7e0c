// Views are redrawn whenever anything arrives (main.ts). What the user is typing, has
// chosen, or is still waiting for must come through such a redraw intact.
import { vi } from 'vitest';

const answers = new Map<string, unknown>();
const pending = new Map<string, (v: unknown) => void>();

vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => {
    // A command marked pending answers only when the test says so (a slow peer).
    if (pending.has(`${cmd}?`)) return new Promise((resolve) => pending.set(cmd, resolve));
    if (!answers.has(cmd)) return Promise.reject({ code: 'UNMOCKED', message: cmd });
    return Promise.resolve(structuredClone(answers.get(cmd)));
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { ConsentView } from './consent';
import { GuardianView } from './guardian';
import { PeopleView } from './people';
import { threads } from './threads';
import { h, Kept, replace } from '../dom';

const q = <T extends HTMLElement>(css: string) => document.querySelector(css) as T;
function type(css: string, text: string): HTMLInputElement {
  const el = q<HTMLInputElement>(css);
  el.focus();
  el.value = text;
  return el;
}
/** The view on screen, drawn once. */
async function opened<V extends { el: HTMLElement; load(): Promise<void> }>(view: V): Promise<V> {
  replace(document.body, view.el);
  await view.load();
  return view;
}
/** Conversations on screen, as the window composes it, with one starter open. */
async function conversations(starter?: string) {
  for (const [cmd, empty] of [['uamp_peers', []], ['uamp_streams', []], ['mail_swarms', []], ['mail_tasks', []], ['iw_sites', []], ['iw_conversations', []], ['inbox_list', []]] as const) {
    if (!answers.has(cmd)) answers.set(cmd, empty);
  }
  const t = threads();
  await opened(t.conversations);
  if (starter) q<HTMLButtonElement>(`#${starter}`).click();
  return t.conversations;
}
/** People & agents on screen. */
async function people() {
  for (const cmd of ['contacts_list', 'trust_list', 'blocked_list', 'trust_timed_grants', 'uamp_peers', 'a2a_agents', 'iw_sites']) {
    if (!answers.has(cmd)) answers.set(cmd, []);
  }
  return opened(new PeopleView(() => {}, threads().intent));
}

const manifest = { description: 'makes images', intents: ['ask'], body_types: ['text/plain'] };
const peer = (did: string, name: string) => ({ did, name, url: 'https://127.0.0.1:9', cert_sha256: 'ab'.repeat(32), manifest, added_at: '', has_token: false });
const swarm = (name: string) => ({ name, base_url: `http://${name}`, added_at: '', info: null, has_token: true });
const step = (row: number) => ({ row, session_id: 's', turn_id: null, step_id: null, agent_id: 'a', agent_name: null, method: 'tools/call', summary: `step ${row}`, reasoning: null, request: {}, decision: 'pending', message: null, rule_id: null, decided_by: null, created_at: '', decided_at: null });
const site = (origin: string, company: string, intents: string[]) => ({
  origin, company, last_updated: '', fetched_at: '', site_key: null,
  manifest: { manifest_version: '1', company, last_updated: '', about: null, schema_type: null, location: null, contact: { intent_endpoint: '', website: null, phone: null, email: null, other: {} },
    capabilities: intents.map((intent) => ({ intent, description: intent, examples: [], requires: [], constraints: [], notes: [], operating_hours: {} })) },
});

beforeEach(() => { answers.clear(); pending.clear(); replace(document.body); });

describe('Kept', () => {
  it('gives back the same part for a key until a drawing no longer asks for it', () => {
    const kept = new Kept();
    const a = kept.get('a', () => h('input'));
    kept.get('b', () => h('input'));
    kept.sweep();
    expect(kept.get('a', () => h('input'))).toBe(a);
    kept.sweep();
    const b2 = kept.get('b', () => h('input', { id: 'new' }));
    expect(b2.id).toBe('new');
  });

  it('a redraw that puts a focused field back leaves the caret where it was', () => {
    const box = h('div');
    const field = h('input', { type: 'text' });
    replace(document.body, box);
    replace(box, field);
    field.focus();
    field.value = 'https://exam';
    field.setSelectionRange(5, 5);
    replace(box, h('p', {}, 'new list'), field);
    expect(document.activeElement).toBe(field);
    expect(field.selectionStart).toBe(5);
  });
});

describe('a redraw keeps', () => {
  it('a UAMP peer address being typed, and the manifest a slow lookup brings back', async () => {
    const view = await people();
    const url = type('#peer-url', 'https://peer.example:8766');
    pending.set('uamp_discover?', () => {});
    q<HTMLButtonElement>('#peer-lookup').click();
    await view.load();
    expect(q<HTMLInputElement>('#peer-url')).toBe(url);
    expect(url.value).toBe('https://peer.example:8766');
    expect(document.activeElement).toBe(url);
    pending.get('uamp_discover')!({ did: 'did:key:z6Mkpeer', url: url.value, cert_sha256: 'ef'.repeat(32), manifest });
    await vi.waitFor(() => expect(q('#found-cert')?.textContent).toBe('ef'.repeat(32)));
    // The confirmation survives the next redraw too, with the name being typed.
    type('#peer-name', 'Image maker');
    await view.load();
    expect(q<HTMLInputElement>('#peer-name').value).toBe('Image maker');
  });

  it('the UAMP ask being written and the peer chosen for it', async () => {
    answers.set('uamp_peers', [peer('did:key:a', 'Alpha'), peer('did:key:b', 'Beta')]);
    const view = await conversations('start-ask');
    q<HTMLSelectElement>('#ask-peer').value = 'did:key:b';
    type('#ask-text', 'a gradient, please');
    await view.load();
    expect(q<HTMLSelectElement>('#ask-peer').value).toBe('did:key:b');
    expect(q<HTMLTextAreaElement>('#ask-text').value).toBe('a gradient, please');
    // A peer removed elsewhere is no longer offered.
    answers.set('uamp_peers', [peer('did:key:a', 'Alpha')]);
    await view.load();
    expect([...q<HTMLSelectElement>('#ask-peer').options].map((o) => o.value)).toEqual(['did:key:a']);
  });

  it('a MAIL swarm being connected and a task being written', async () => {
    answers.set('mail_swarms', [swarm('one'), swarm('two')]);
    const view = await conversations('start-task');
    type('#swarm-url', 'https://swarm.example:8000');
    type('#swarm-name', 'Research');
    type('#swarm-token', 'user-token');
    q<HTMLSelectElement>('#mail-swarm').value = 'two';
    type('#mail-body', 'What will the weather be in Lyon tomorrow?');
    await view.load();
    expect(q<HTMLInputElement>('#swarm-url').value).toBe('https://swarm.example:8000');
    expect(q<HTMLInputElement>('#swarm-name').value).toBe('Research');
    expect(q<HTMLInputElement>('#swarm-token').value).toBe('user-token');
    expect(q<HTMLSelectElement>('#mail-swarm').value).toBe('two');
    expect(q<HTMLTextAreaElement>('#mail-body').value).toBe('What will the weather be in Lyon tomorrow?');
    expect(document.activeElement).toBe(q('#mail-body'));
  });

  it('the send form stays hidden until there is a swarm to send to', async () => {
    const view = await conversations('start-task');
    expect(q<HTMLFormElement>('#mail-compose').hidden).toBe(true);
    answers.set('mail_swarms', [swarm('one')]);
    await view.load();
    expect(q<HTMLFormElement>('#mail-compose').hidden).toBe(false);
    expect(q<HTMLSelectElement>('#mail-swarm').value).toBe('one');
  });

  it("a redaction pattern typed for an agent's waiting step, until that step is decided", async () => {
    const waiting = (...rows: number[]) => rows.map((r) => ({ kind: 'guardian_step', step: step(r), risk: [] }));
    answers.set('consent_list', waiting(7, 8));
    const view = await opened(new ConsentView(() => {}));
    const pattern = q<HTMLInputElement>('[data-row="8"] .asop-pattern');
    pattern.focus();
    pattern.value = '\\d{16}';
    q<HTMLInputElement>('#asop-always-8').checked = true;
    await view.load();
    expect(q<HTMLInputElement>('[data-row="8"] .asop-pattern').value).toBe('\\d{16}');
    expect(q<HTMLInputElement>('#asop-always-8').checked).toBe(true);
    expect(document.activeElement).toBe(pattern);
    // Step 8 decided elsewhere: it leaves, and a new step 8 would start blank.
    answers.set('consent_list', waiting(7));
    await view.load();
    expect(q('[data-row="8"]')).toBeNull();
    answers.set('consent_list', waiting(7, 8));
    await view.load();
    expect(q<HTMLInputElement>('[data-row="8"] .asop-pattern').value).toBe('');
  });

  it('a guardian rule being written', async () => {
    answers.set('asop_rules', []);
    answers.set('asop_sessions', []);
    const view = await opened(new GuardianView());
    type('#rule-agent', 'mailer-1');
    q<HTMLSelectElement>('#rule-action').value = 'deny';
    await view.load();
    expect(q<HTMLInputElement>('#rule-agent').value).toBe('mailer-1');
    expect(q<HTMLSelectElement>('#rule-action').value).toBe('deny');
  });

  it('the IntentWeb company and capability chosen, and the request being written', async () => {
    answers.set('iw_sites', [site('https://a.example', 'Alpha', ['book']), site('https://b.example', 'Bistro', ['reserve', 'cancel'])]);
    const view = await conversations('start-company');
    const siteSel = q<HTMLSelectElement>('#iw-site');
    siteSel.value = 'https://b.example';
    siteSel.dispatchEvent(new Event('change'));
    q<HTMLSelectElement>('#iw-capability').value = 'cancel';
    type('#iw-intent', 'Cancel my table');
    await view.load();
    expect(q<HTMLSelectElement>('#iw-site').value).toBe('https://b.example');
    expect(q<HTMLSelectElement>('#iw-capability').value).toBe('cancel');
    expect(q<HTMLTextAreaElement>('#iw-intent').value).toBe('Cancel my table');
    expect(document.activeElement).toBe(q('#iw-intent'));
  });

  it("a company's address being typed under People & agents", async () => {
    answers.set('iw_sites', [site('https://a.example', 'Alpha', ['book'])]);
    const view = await people();
    type('#iw-origin', 'https://c.exa');
    await view.load();
    expect(q<HTMLInputElement>('#iw-origin').value).toBe('https://c.exa');
    expect(document.activeElement).toBe(q('#iw-origin'));
    expect(q('#iw-sites')?.textContent).toContain('Alpha');
  });

  it('answers half-filled in a checklist, until the conversation moves on', async () => {
    const conv = { interaction_id: 'i-1', origin: 'https://b.example', endpoint: '', capability: 'reserve', initial: 'A table', query_hash: '', state: 'open', status: null, external_id: null, created_at: '', updated_at: '', company: 'Bistro' };
    const msg = (row: number, direction: 'in' | 'out', flow_type: string, envelope: Record<string, unknown> = {}) =>
      ({ row, interaction_id: 'i-1', direction, flow_type, message: flow_type, html: null, envelope, verdict: { kind: 'verified', kid: 'k' }, warning: null, accepted: true, at: '' });
    answers.set('iw_sites', [site('https://b.example', 'Bistro', ['reserve'])]);
    answers.set('iw_conversations', [conv]);
    answers.set('iw_conversation', { conversation: conv, company: 'Bistro', pinned_key: 'k', messages: [msg(1, 'out', 'intent_request'), msg(2, 'in', 'information_request', { required_information: ['Name', 'Phone'] })] });
    const view = await conversations();
    q<HTMLLIElement>('[data-thread="site:i-1"]').click();
    await vi.waitFor(() => expect(q('#iw-need-1')).not.toBeNull());
    type('#iw-need-0', 'Jane Smith');
    type('#iw-need-1', '555-0100');
    await view.load();
    expect(q<HTMLInputElement>('#iw-need-0').value).toBe('Jane Smith');
    expect(q<HTMLInputElement>('#iw-need-1').value).toBe('555-0100');
    expect(document.activeElement).toBe(q('#iw-need-1'));
    // The site asked something else since: the new question starts blank.
    answers.set('iw_conversation', { conversation: conv, company: 'Bistro', pinned_key: 'k', messages: [msg(1, 'out', 'intent_request'), msg(2, 'in', 'information_request', { required_information: ['Name', 'Phone'] }), msg(3, 'out', 'information_response'), msg(4, 'in', 'information_request', { required_information: ['Party size'] })] });
    await view.load();
    expect(q<HTMLInputElement>('#iw-need-0').value).toBe('');
    expect(q('#iw-need-1')).toBeNull();
  });

  it('a conversation search being typed', async () => {
    const view = await conversations();
    const search = type('#conversation-search', 'Lyon');
    await view.load();
    expect(document.activeElement).toBe(search);
    expect(search.value).toBe('Lyon');
  });
});
