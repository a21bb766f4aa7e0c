// The core reads the same table (names::shown): one unnamed form in every view.
import unnamed from '../../tests/data/unnamed-names.json';
import { keyGroups, localTime, bytesText, delegationLine, describeCode, execLabel, fingerprint, isHexKey, isSenderId, mailAddress, mailGraph, streamStateText, optionalNumber, parseScopes, scopesText, senderLabel, taskStateText, tierText, transportLabel, when, floodText } from './format';

describe('format', () => {
  it('shortens keys to a readable fingerprint', () => {
    expect(fingerprint('d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737')).toBe('d04a b232 742b b4ab');
    expect(fingerprint(null)).toBe('unknown');
    expect(fingerprint('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK')).toBe('did:key:…EGta2doK');
    // Two did:web senders that end alike stay apart: a name is shown whole.
    expect(fingerprint('did:web:evil-bank.example')).toBe('did:web:evil-bank.example');
    expect(fingerprint('did:web:bank.example')).not.toBe(fingerprint('did:web:evil-bank.example'));
    expect(fingerprint('asop:mailer-1')).toBe('agent mailer-1');
  });
  it('accepts EPP keys and UAMP DIDs as sender ids, nothing else', () => {
    expect(isSenderId('ab'.repeat(32))).toBe(true);
    expect(isSenderId('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK')).toBe(true);
    expect(isSenderId('did:web:agents.example.com')).toBe(true);
    expect(isSenderId('did:web:evil.example/<script>')).toBe(false);
    expect(isSenderId('did:key:hello')).toBe(false);
  });
  it('says sizes and stream states in words', () => {
    expect(bytesText(512)).toBe('512 bytes');
    expect(bytesText(2048)).toBe('2.0 KB');
    expect(bytesText(3 * 1024 * 1024)).toBe('3.0 MB');
    expect(streamStateText('IN_PROGRESS')).toBe('Running');
    expect(streamStateText('ERROR')).toBe('Failed');
  });
  it('names senders by their given name, else the one unnamed form the core uses', () => {
    expect(senderLabel('Dr. Lee', 'ab'.repeat(32))).toBe('Dr. Lee');
    expect(senderLabel('  ', 'ab'.repeat(32))).toBe('Sender abababab');
    const table = unnamed as { key: string; shown: string }[];
    expect(table.length).toBeGreaterThanOrEqual(6);
    for (const row of table) expect(senderLabel(null, row.key), row.key).toBe(row.shown);
  });
  it('says who acts for whom', () => {
    expect(delegationLine('Doctor', 'Patient', 'cd'.repeat(32))).toBe('Doctor, on behalf of Patient');
    expect(delegationLine('Doctor', null, null)).toBe('Doctor');
  });
  it('explains every error code in words', () => {
    for (const c of ['INVALID_FORMAT', 'UNSUPPORTED_VERSION', 'WRONG_RECIPIENT', 'EXPIRED', 'INVALID_SIGNATURE', 'REPLAY_DETECTED', 'UNTRUSTED_SENDER', 'POLICY_DENIED', 'SIZE_EXCEEDED', 'RATE_LIMITED']) {
      expect(describeCode(c)).not.toBe(c);
    }
    expect(describeCode(null)).toBe('Accepted');
  });
  it('labels transports and executor states', () => {
    expect(transportLabel('folder:a.json')).toBe('Folder: a.json');
    expect(transportLabel('http')).toBe('Internet (HTTP)');
    expect(transportLabel('a2a')).toBe('An A2A agent');
    expect(fingerprint(`a2a:key:${'c9fb'.repeat(16)}`)).toBe('c9fb c9fb c9fb c9fb');
    expect(execLabel('held')).toBe('Waiting for you');
  });
  it('parses scopes and limits from form text', () => {
    expect(parseScopes(' support, billing  code-review ')).toEqual(['support', 'billing', 'code-review']);
    expect(scopesText(['*'])).toBe('everything');
    expect(optionalNumber('')).toBeNull();
    expect(optionalNumber('12')).toBe(12);
    expect(() => optionalNumber('1.5')).toThrow();
    expect(isHexKey('ab'.repeat(32))).toBe(true);
    expect(isHexKey('xyz')).toBe(false);
  });
  it('shows recent times relatively', () => {
    const now = new Date('2026-11-22T12:00:00Z');
    expect(when('2026-11-22T11:59:50Z', now)).toBe('just now');
    expect(when('2026-11-22T11:40:00Z', now)).toBe('20 min ago');
    expect(when('not a date', now)).toBe('not a date');
    // Times to come read forward, never "just now".
    expect(when('2026-11-22T12:30:00Z', now)).toBe('in 30 min');
    expect(when('2026-11-22T12:00:20Z', now)).toBe('now');
    expect(when('2026-11-29T12:00:00Z', now)).toMatch(/^on /);
  });
});

describe('MAIL', () => {
  it('splits stored addresses into type, name and swarm', () => {
    expect(mailAddress('agent:forecast@swarm-b')).toEqual({ type: 'agent', name: 'forecast', swarm: 'swarm-b' });
    expect(mailAddress('user:u-1')).toEqual({ type: 'user', name: 'u-1', swarm: null });
    expect(mailAddress('agent:odd@')).toEqual({ type: 'agent', name: 'odd@', swarm: null });
  });
  it('names tiers and states', () => {
    expect(tierText(1)).toBe('system');
    expect(tierText(3)).toBe('interrupt');
    expect(taskStateText('interrupted')).toBe('Interrupted');
  });
  it('counts who talked to whom once per pair', () => {
    const g = mailGraph([
      { sender: 'user:u', recipients: ['agent:sup'] },
      { sender: 'agent:sup', recipients: ['agent:w'] },
      { sender: 'agent:sup', recipients: ['agent:w'] },
      { sender: 'agent:w', recipients: ['agent:sup'] },
    ]);
    expect(g.nodes).toEqual(['user:u', 'agent:sup', 'agent:w']);
    expect(g.edges).toContainEqual({ from: 'agent:sup', to: 'agent:w', count: 2 });
    expect(g.edges.length).toBe(3);
  });
});

describe('flood notice', () => {
  it('says how much a flood brought that was answered but not kept, and nothing otherwise', () => {
    expect(floodText({ refusals: 0, knocks: 0, last: null })).toBe('');
    const now = new Date('2026-11-24T12:10:00Z');
    expect(floodText({ refusals: 9400, knocks: 1, last: '2026-11-24T12:00:00Z' }, now)).toBe(
      `Flood: 9400 refused requests and 1 knock from unknown senders answered but not kept (last ${when('2026-11-24T12:00:00Z', now)})`);
  });
});

describe('keys and times as a person reads them', () => {
  it('breaks a key only between groups of eight, and copies it whole', () => {
    const p = document.createElement('p');
    p.append(...keyGroups('4664fe4f0123456789abcdef01'));
    expect(p.textContent).toBe('4664fe4f0123456789abcdef01');
    expect(p.innerHTML).toBe('4664fe4f<wbr>01234567<wbr>89abcdef<wbr>01');
  });
  it('says a time in this computer’s local time, to the second', () => {
    const iso = '2026-11-29T10:13:50.908Z';
    expect(localTime(iso)).toBe(new Date(iso).toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }));
    expect(localTime(iso)).not.toContain('T10:13');
    expect(localTime('not a time')).toBe('not a time');
  });
});
