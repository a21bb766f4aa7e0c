// People & agents: one card per contact holding every identity with what it may do, a
// blocked identity said on its card, and Add someone starting from what the user has.
import { vi } from 'vitest';

const policy = (scopes: string[]) => ({ allowed_scopes: scopes, max_envelope_size: 10 * 1024 * 1024, rate_limit: { max_per_hour: null, max_per_day: 20 }, 'x-hold-for-consent': false, 'x-allow-delegation': true, 'x-grant-until': { billing: '2999-01-01T00:00:00Z' } });
const key = (k: string, source: string) => ({ key: k, fingerprint: k.slice(0, 8), source, scopes: [], added_at: '', verified_at: null, changed_from: null, blocked: false, safety_code: '', reverify: null });
const answers: Record<string, unknown> = {
  contacts_list: [
    { id: 1, name: 'Alice', created_at: '', verified: false, key_changed: false, namesakes: [], keys: [key('aa'.repeat(32), 'epp_sender'), key('did:key:z6MkAlice', 'uamp_agent')] },
    { id: 2, name: 'Newsbot', created_at: '', verified: false, key_changed: false, namesakes: [], keys: [key('bb'.repeat(32), 'epp_sender')] },
  ],
  trust_list: [
    { public_key: 'aa'.repeat(32), name: 'Alice', added_at: '', fingerprint: 'aaaa', used_today: 3, policy: policy(['support', 'billing']) },
    { public_key: 'did:key:z6MkAlice', name: 'Alice', added_at: '', fingerprint: 'did', used_today: 0, policy: policy(['inform']) },
  ],
  blocked_list: [{ public_key: 'bb'.repeat(32), reason: 'blocked from the trust manager', blocked_at: '' }],
  trust_timed_grants: [], uamp_peers: [], a2a_agents: [], iw_sites: [],
};
const calls: string[] = [];
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => (calls.push(cmd), cmd in answers ? Promise.resolve(structuredClone(answers[cmd])) : Promise.reject({ code: 'INTERNAL', message: cmd })),
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { PeopleView } from './people';
import { threads } from './threads';
import { replace } from '../dom';

async function opened(): Promise<PeopleView> {
  const v = new PeopleView(() => {}, threads().intent);
  replace(document.body, v.el);
  await v.load();
  return v;
}
const card = (name: string) => [...document.querySelectorAll<HTMLElement>('#contacts .contact')].find((c) => c.querySelector('h3')?.textContent?.includes(name))!;

test('each identity of a contact with what it may do; a blocked one says so', async () => {
  await opened();
  const alice = card('Alice');
  const keys = [...alice.querySelectorAll<HTMLElement>('li[data-key]')];
  expect(keys).toHaveLength(2);
  expect(keys[0].querySelector('.key-policy')?.textContent).toContain('support, billing');
  expect(keys[0].textContent).toContain('“billing”: until');
  expect(keys[0].textContent).toContain('20/day · 3 today');
  // Only an agent's DID can be given a token.
  expect(keys[0].querySelector('.token-issue')).toBeNull();
  expect(keys[1].querySelector('.token-issue')).not.toBeNull();
  expect(card('Newsbot').textContent).toContain('Blocked: nothing it sends gets through.');
  expect(card('Newsbot').querySelector('button.block')).toBeNull();
});

test('Block asks in place first, and Cancel leaves everything as it was', async () => {
  await opened();
  const block = card('Alice').querySelector<HTMLButtonElement>('li[data-key] button.block')!;
  block.click();
  expect(block.hidden).toBe(true);
  const ask = card('Alice').querySelector('.ask-first')!;
  expect(ask.textContent).toContain('Block Alice? Nothing it sends will get through.');
  (ask.querySelector('button.secondary') as HTMLButtonElement).click();
  expect(card('Alice').querySelector('.ask-first')).toBeNull();
  expect(block.hidden).toBe(false);
});

test('what they shared fills the trust form with their key and address', async () => {
  const v = await opened();
  v.addSomeone();
  (document.querySelector('#add-shared') as HTMLButtonElement).click();
  const text = document.querySelector('#add-shared-text') as HTMLTextAreaElement;
  text.value = 'not what Gatehouse shares';
  (document.querySelector('#add-shared-use') as HTMLButtonElement).click();
  expect(document.querySelector('#add-shared-msg')?.textContent).toContain('gatehouse:contact?key=');
  text.value = `gatehouse:contact?key=${'cc'.repeat(32)}&address=http%3A%2F%2F10.0.0.5%3A8765%2Fepp%2Fv1%2Fsubmit`;
  (document.querySelector('#add-shared-use') as HTMLButtonElement).click();
  expect((document.querySelector('#trust-key') as HTMLInputElement).value).toBe('cc'.repeat(32));
  expect((document.querySelector('#trust-reply-endpoint') as HTMLInputElement).value).toBe('http://10.0.0.5:8765/epp/v1/submit');
});

test('a message arriving redraws the contacts and today’s use, not the agents and companies', async () => {
  const v = await opened();
  calls.length = 0;
  (answers.trust_list as { used_today: number }[])[0].used_today = 4;
  await v.load(false);
  expect(calls.sort()).toEqual(['blocked_list', 'contacts_list', 'trust_list', 'trust_timed_grants']);
  expect(card('Alice').textContent).toContain('20/day · 4 today');
  calls.length = 0;
  await v.load();
  expect(calls).toEqual(expect.arrayContaining(['uamp_peers', 'a2a_agents', 'iw_sites']));
  (answers.trust_list as { used_today: number }[])[0].used_today = 3;
});
