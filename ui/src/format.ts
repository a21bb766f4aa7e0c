// Pure helpers that turn protocol data into words a person understands.

export function fingerprint(key: string | null | undefined): string {
  if (!key) return 'unknown';
  // A did:web's name was chosen by its owner: only the whole of it says who it is (as the
  // core's trust::fingerprint). An agent of the user's is its id.
  if (key.startsWith('did:web:')) return key;
  if (key.startsWith('asop:')) return `agent ${key.slice(5)}`;
  // An A2A agent is the hash of what it proved (a token, a certificate's key).
  if (key.startsWith('a2a:')) return fingerprint(key.replace(/^a2a:(key|token):/, ''));
  // Another DID (a UAMP agent's did:key) reads by its method and its last characters.
  if (key.startsWith('did:')) return `${key.split(':').slice(0, 2).join(':')}:…${key.slice(-8)}`;
  return (key.slice(0, 16).match(/.{1,4}/g) ?? []).join(' ');
}

/** How an identity the user has not named is shown, everywhere: its kind and the start of
 *  its key (the core's `names::shown`; both read tests/data/unnamed-names.json). */
export function unnamedName(key: string | null | undefined): string {
  if (!key) return 'An unknown sender';
  const hex = (s: string) => [...s].slice(0, 8).join('');
  const mcp = /^mcp:(.+):([0-9a-fA-F]{64})$/.exec(key);
  if (mcp) return `MCP server ${mcp[1]} (${hex(mcp[2])})`;
  const a2a = /^a2a:(?:key|token):(.*)$/.exec(key);
  if (a2a) return `A2A agent ${hex(a2a[1])}`;
  if (key.startsWith('asop:')) {
    const id = [...key.slice(5)];
    return `Your agent ${id.slice(0, 32).join('')}${id.length > 32 ? '…' : ''}`;
  }
  if (key.startsWith('did:web:')) return `Agent ${key}`;
  if (key.startsWith('did:')) return `Agent …${[...key].slice(-8).join('')}`;
  return `Sender ${hex(key)}`;
}

/** The name the user gave a sender, else the one unnamed form. */
export function senderLabel(name: string | null | undefined, key: string | null | undefined): string {
  return name && name.trim() ? name.trim() : unnamedName(key);
}

export function when(iso: string, now: Date = new Date()): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const s = Math.round((now.getTime() - t.getTime()) / 1000);
  // Times to come (a grant's end, a prompt put off) read forward.
  if (s < 0 && s > -45) return 'now';
  if (s < 0 && s > -3600) return `in ${Math.round(-s / 60)} min`;
  if (s < 0 && s > -86400 && t.getDate() === now.getDate()) return `at ${t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`;
  if (s < 0) return `on ${t.toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })}`;
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400 && t.getDate() === now.getDate()) return t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return t.toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** When something ends, in the user's local time, with how far off it is while it is to come. */
export function untilText(iso: string, now: Date = new Date()): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return `until ${iso}`;
  const sameDay = t.toDateString() === now.toDateString();
  const at = sameDay ? t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : t.toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  const left = t.getTime() - now.getTime();
  const ahead = left <= 0 ? '' : left < 3_600_000 ? ` (in ${Math.max(1, Math.round(left / 60_000))} min)` : left < 86_400_000 ? ` (in ${Math.round(left / 3_600_000)} h)` : '';
  return `until ${at}${ahead}`;
}

const CODE_WORDS: Record<string, string> = {
  INVALID_FORMAT: 'Not a valid envelope',
  UNSUPPORTED_VERSION: 'Unsupported protocol version',
  WRONG_RECIPIENT: 'Addressed to someone else',
  EXPIRED: 'Expired before it arrived',
  INVALID_SIGNATURE: 'Signature does not match',
  REPLAY_DETECTED: 'Already received (replay)',
  UNTRUSTED_SENDER: 'Sender not trusted',
  POLICY_DENIED: 'Not allowed by your rules',
  SIZE_EXCEEDED: 'Too large',
  RATE_LIMITED: 'Sender over its limit',
  INTERNAL_ERROR: 'Gatehouse could not process it',
  INTEGRITY_MISMATCH: 'Changed after it was hashed',
  PROVENANCE_INVALID: 'Its attestations do not check out',
  SENDER_REVOKED: 'Sender’s key revoked by you',
};

export function describeCode(code: string | null | undefined): string {
  if (!code) return 'Accepted';
  return CODE_WORDS[code] ?? code;
}

const STEP_WORDS: Record<string, string> = {
  size: 'Size within the inbox limit',
  format: 'Well-formed envelope',
  version: 'Protocol version 1',
  recipient: 'Addressed to this inbox',
  expiry: 'Not expired',
  signature: 'Signature verified',
  integrity: 'Content matches its hash',
  provenance: 'Attestations verified',
  replay: 'Not a replay',
  trust: 'Sender trusted',
  revocation: 'Sender’s key not revoked',
  policy: 'Allowed by the sender’s rules',
};

/** A step the envelope gave nothing to check for (no integrity hash, no attestations). */
export function describeAbsentStep(step: string): string {
  if (step === 'integrity') return 'No content hash sent (optional)';
  if (step === 'provenance') return 'No attestations sent (optional)';
  return describeStep(step);
}

export function describeStep(step: string): string {
  return STEP_WORDS[step] ?? step;
}

export function transportLabel(t: string): string {
  if (t === 'http') return 'Internet (HTTP)';
  if (t === 'consent') return 'Let in by you';
  if (t === 'email') return 'Email';
  if (t === 'a2a') return 'An A2A agent';
  if (t.startsWith('folder:')) return `Folder: ${t.slice(7)}`;
  return t;
}

export function execLabel(s: string | null | undefined): string {
  switch (s) {
    case 'held': return 'Waiting for you';
    case 'queued': return 'Queued';
    case 'running': return 'Running';
    case 'succeeded': return 'Done';
    case 'failed': return 'Executor failed';
    case 'denied': return 'Denied by you';
    default: return '';
  }
}

/** "Doctor, on behalf of Patient". */
export function delegationLine(sender: string, onBehalfOfName: string | null | undefined, onBehalfOfKey: string | null | undefined): string {
  if (!onBehalfOfKey) return sender;
  return `${sender}, on behalf of ${senderLabel(onBehalfOfName, onBehalfOfKey)}`;
}

export function scopesText(scopes: string[]): string {
  if (scopes.includes('*')) return 'everything';
  return scopes.join(', ');
}

export function parseScopes(text: string): string[] {
  return text.split(/[,\s]+/).map((s) => s.trim()).filter(Boolean);
}

export function optionalNumber(text: string): number | null {
  const t = text.trim();
  if (!t) return null;
  const n = Number(t);
  if (!Number.isInteger(n) || n < 0) throw new Error(`"${text}" is not a whole number`);
  return n;
}

export function isHexKey(s: string): boolean {
  return /^[0-9a-fA-F]{64}$/.test(s.trim());
}

/** A sender's identity: an EPP key (64 hex) or a UAMP agent's did:key / did:web. */
export function isSenderId(s: string): boolean {
  const t = s.trim();
  return isHexKey(t) || /^did:key:z[1-9A-HJ-NP-Za-km-z]{40,}$/.test(t) || /^did:web:[A-Za-z0-9.%:_-]+$/.test(t);
}

/** A byte count as a person reads it. */
export function bytesText(n: number): string {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} bytes`;
}

/** What a UAMP stream's state means to the user. */
export function streamStateText(state: string): string {
  return ({ NEW: 'Waiting to start', IN_PROGRESS: 'Running', COMPLETED: 'Completed', CANCELLED: 'Cancelled', ERROR: 'Failed' } as Record<string, string>)[state] ?? state;
}

/** A stored MAIL address `type:address`, with the swarm of an interswarm `name@swarm`. */
export function mailAddress(s: string): { type: string; name: string; swarm: string | null } {
  const i = s.indexOf(':');
  const type = i > 0 ? s.slice(0, i) : 'agent';
  const addr = i > 0 ? s.slice(i + 1) : s;
  const at = addr.lastIndexOf('@');
  return at > 0 && at < addr.length - 1 ? { type, name: addr.slice(0, at), swarm: addr.slice(at + 1) } : { type, name: addr, swarm: null };
}

/** The spec's five priority tiers in words. */
export function tierText(tier: number): string {
  return ['', 'system', 'admin or user', 'interrupt', 'broadcast', 'request or response'][tier] ?? `tier ${tier}`;
}

export function taskStateText(state: string): string {
  return ({ running: 'Running', completed: 'Completed', failed: 'Failed', interrupted: 'Interrupted', imported: 'Imported' } as Record<string, string>)[state] ?? state;
}

/** Who talked to whom in a task: one edge per sender → recipient pair, with a count. */
export function mailGraph(messages: { sender: string; recipients: string[] }[]): { nodes: string[]; edges: { from: string; to: string; count: number }[] } {
  const nodes: string[] = [];
  const edges = new Map<string, { from: string; to: string; count: number }>();
  const node = (n: string) => { if (!nodes.includes(n)) nodes.push(n); };
  for (const m of messages) {
    node(m.sender);
    for (const r of m.recipients) {
      node(r);
      const k = `${m.sender}\u0000${r}`;
      const e = edges.get(k) ?? { from: m.sender, to: r, count: 0 };
      e.count += 1;
      edges.set(k, e);
    }
  }
  return { nodes, edges: [...edges.values()] };
}

/** What a flood left uncounted, in words; empty when nothing was dropped. */
export function floodText(unkept: { refusals: number; knocks: number; last: string | null }, now: Date = new Date()): string {
  const { refusals, knocks, last } = unkept;
  if (!refusals && !knocks) return '';
  const parts = [refusals ? `${refusals} refused request${refusals === 1 ? '' : 's'}` : '', knocks ? `${knocks} knock${knocks === 1 ? '' : 's'} from unknown senders` : ''].filter(Boolean);
  return `Flood: ${parts.join(' and ')} answered but not kept${last ? ` (last ${when(last, now)})` : ''}`;
}

/** A message that raises warnings says how many (its detail shows them). */
export function flagText(n: number): string {
  return `⚠ ${n} warning${n === 1 ? '' : 's'}`;
}

/** A time as this computer's clock reads it, to the second ("29 Nov 2026, 11:13:50"). */
export function localTime(iso: string): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  return t.toLocaleString([], { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** A long key or id that may break only between groups of eight (never leaving a few
 *  characters alone on a line); copied, it is the key as it is, without spaces. */
export function keyGroups(key: string): Node[] {
  const parts: Node[] = [];
  for (let i = 0; i < key.length; i += 8) {
    if (i) parts.push(document.createElement('wbr'));
    parts.push(document.createTextNode(key.slice(i, i + 8)));
  }
  return parts;
}
