import { consentSentence } from './consent';

describe('consent prompts', () => {
  it('tell a person who is asking and about what', () => {
    const s = consentSentence({ kind: 'unknown_sender', public_key: 'd04ab232'.repeat(8), first_seen: '', last_seen: '', count: 3, scopes_tried: ['support'], envelope_id: null, scope: 'support', prompt: 'hi' });
    expect(s).toContain('not approved');
    expect(s).toContain('d04a b232');
    expect(s).toContain('“support”');
    expect(s).toContain('3 attempts');
    const held = consentSentence({ kind: 'held', row_id: 1, envelope_id: 'e', sender: 'ab'.repeat(32), sender_name: 'Dr. Lee', scope: 'lab-results', prompt: 'x', payload_type: null, on_behalf_of: null, received_at: '' });
    expect(held).toBe('Dr. Lee sent your AI a message about “lab-results”. Your rules say to ask you before it is passed on.');
    const agent = consentSentence({ kind: 'held_ask', stream_id: 's', sender: 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH', sender_name: null, scope: 'ask', prompt: 'x', received_at: '' });
    expect(agent).toContain('key did:key:…wWsdvktH');
    expect(agent).toContain('over UAMP');
    expect(agent).toContain('“ask”');
  });
});
