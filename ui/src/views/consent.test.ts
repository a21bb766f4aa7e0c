import { consentSentence } from './consent';

describe('consent prompts', () => {
  it('tell a person who is asking and about what', () => {
    const s = consentSentence({ kind: 'unknown_sender', public_key: 'd04ab232'.repeat(8), source: 'epp_sender', first_seen: '', last_seen: '', count: 3, scopes_tried: ['support'], knock: null, envelope_id: null, scope: 'support', prompt: 'hi', extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [], tools: [], known_as: null });
    expect(s).toContain('not approved');
    expect(s).toContain('(Sender d04ab232)');
    expect(s).toContain('“support”');
    expect(s).toContain('3 attempts');
    const known = consentSentence({ kind: 'unknown_sender', public_key: 'd04ab232'.repeat(8), source: 'epp_sender', first_seen: '', last_seen: '', count: 1, scopes_tried: ['billing'], knock: null, envelope_id: null, scope: 'billing', prompt: 'pay', extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [], tools: [], known_as: 'Alice' });
    expect(known).toBe('Alice, whom you trust for other things, wants to send your AI a message about “billing”, which you have not allowed it. Allow it once, or for good, or deny it.');
    const held = consentSentence({ kind: 'held', row_id: 1, envelope_id: 'e', sender: 'ab'.repeat(32), sender_name: 'Dr. Lee', scope: 'lab-results', prompt: 'x', payload_type: null, on_behalf_of: null, received_at: '', extras: null, risk: [], covered: [], covered_total: 0, grant_ended: null, later: null, key_change: false });
    expect(held).toBe('Dr. Lee sent your AI a message about “lab-results”. Your rules say to ask you before it is passed on.');
    const agent = consentSentence({ kind: 'held_ask', stream_id: 's', sender: 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH', sender_name: null, scope: 'ask', prompt: 'x', received_at: '', risk: [], grant_ended: null, later: null, key_change: false });
    expect(agent).toContain('Agent …wWsdvktH (an AI agent');
    expect(agent).toContain('over UAMP');
    expect(agent).toContain('“ask”');
  });

  it('word a knock by where it came from, never by the scope a sender chose', () => {
    const knock = (source: 'epp_sender' | 'uamp_agent' | 'intent_site' | 'asop_agent' | 'mcp_server' | 'a2a_agent', public_key: string, scope: string) =>
      consentSentence({ kind: 'unknown_sender', public_key, source, first_seen: '', last_seen: '', count: 1, scopes_tried: [scope], knock: null, envelope_id: null, scope, prompt: null, extras: null, risk: [], covered: [], covered_total: 0, later: null, claims: [], tools: [], known_as: null });
    // A stranger's envelope whose scope names another door is still a stranger's message.
    for (const scope of ['asop', 'intentweb']) {
      const s = knock('epp_sender', 'ab'.repeat(32), scope);
      expect(s).toContain('Someone you have not approved');
      expect(s).not.toContain('Your agent');
      expect(s).not.toContain('company');
    }
    expect(knock('asop_agent', 'asop:mailer-1', 'asop')).toContain('Your agent “mailer-1”');
    expect(knock('intent_site', 'cd'.repeat(32), 'intentweb')).toContain('A company you contacted over IntentWeb');
    expect(knock('uamp_agent', 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH', 'ask')).toContain('over UAMP');
    const a2a = knock('a2a_agent', `a2a:key:${'ef'.repeat(32)}`, 'travel');
    expect(a2a).toContain('over A2A');
    expect(a2a).toContain('nothing it says about itself is checked');
    expect(a2a).not.toContain('a2a:key:');
    const mcp = knock('mcp_server', `mcp:files:${'0a'.repeat(32)}`, 'mcp');
    expect(mcp).toContain('MCP server files (0a0a0a0a), which your AI app runs');
    expect(mcp).not.toContain('mcp:files:');
  });
});

test('what an EPP v1.1 sender declared is shown in plain words, payment fields as inert', async () => {
  const { extrasCard } = await import('./inbox');
  const card = extrasCard({
    integrity: 'sha256',
    capabilities: ['read files in ~/Documents/orders', 'take these actions: notify'],
    provenance: [{ role: 'auditor', identity: 'ca93ac1705187071'.repeat(4), statement: 'Reviewed', timestamp: '' }],
    inert: [{ field: 'payment', summary: '0.50 USDC on solana', json: '{}' }],
  });
  expect(card.querySelector('.extras-capabilities')?.textContent).toContain('read files in ~/Documents/orders');
  expect(card.querySelector('.extras-provenance')?.textContent).toContain('auditor');
  expect(card.querySelector('.extras-provenance')?.textContent).toContain('Reviewed');
  expect(card.querySelector('.extras-inert')?.textContent).toContain('never pays');
  expect(card.querySelector('.extras-integrity')?.textContent).toContain('sha256');
});
