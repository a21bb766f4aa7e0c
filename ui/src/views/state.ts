// The gate's deciding state as it sealed it, or what was changed behind its back: rows
// of its database written outside Gatehouse (malware on this machine, a team database's
// login) are not acted on. Shown under Waiting for you and beside the log's check.
import type { StateChange, StateReport } from '../api';
import { h } from '../dom';
import { unnamedName } from '../format';

/** What the row was, in words. */
function rowWords(c: StateChange): string {
  switch (c.table) {
    case 'trust': return `A trust entry for ${unnamedName(c.id)}`;
    case 'blocked': return `The block on ${unnamedName(c.id)}`;
    case 'revoked': return `The revocation of ${unnamedName(c.id)}`;
    case 'settings': return `The setting “${c.id}”`;
    case 'approvers': return `The approver device ${c.id}`;
    case 'approver_mail': return `Where the notices of approver device ${c.id} are mailed`;
    case 'approver_invites': return 'An invitation for an approver device';
    case 'quorum_rules': return `Quorum rule #${c.id}`;
    case 'mcp_pins': return `An MCP tool you let in (${c.id.split('\n')[1] ?? c.id})`;
    case 'contacts': return `Contact #${c.id} in People & agents`;
    case 'contact_keys': return `Whose key ${unnamedName(c.id)} is, and whether you verified it,`;
    default: return `${c.table} ${c.id}`;
  }
}

/** What happened to it, and what the gate does about it. */
function whatWords(c: StateChange): string {
  const keepsOut = c.table === 'blocked' || c.table === 'revoked';
  switch (c.what) {
    case 'added': return keepsOut ? 'was added outside Gatehouse: it keeps its key out all the same' : 'was added outside Gatehouse: not acted on';
    case 'changed': return keepsOut ? 'was changed outside Gatehouse: it keeps its key out all the same'
      : c.table === 'contact_keys' ? 'was changed outside Gatehouse: not acted on, and every new key of a contact is held until you verify it'
        : 'was changed outside Gatehouse: not acted on';
    case 'removed': return keepsOut ? 'was taken out outside Gatehouse: it still holds' : 'was taken out outside Gatehouse';
  }
}

/** One line per row not as sealed. */
export function stateLines(r: StateReport): string[] {
  return r.changes.map((c) => `${rowWords(c)} ${whatWords(c)}.`);
}

/** The warning shown while the state is not as the gate sealed it; nothing when it is. */
export function stateNotice(r: StateReport | null): HTMLElement | null {
  if (!r || (r.broken === null && r.changes.length === 0)) return null;
  return h('section', { className: 'state-changed', id: 'state-changed', role: 'alert' },
    h('h3', {}, 'Changed outside Gatehouse'),
    h('p', {}, 'Someone wrote to the gate’s database without going through Gatehouse. Nothing below lets anyone in or runs anything; blocks and revocations still hold.'),
    r.broken ? h('p', { className: 'state-broken' }, `${r.broken}. Until this is put right, no trust entry, approver or deciding setting is acted on.`) : null,
    r.changes.length ? h('ul', { className: 'state-rows' }, ...stateLines(r).map((l) => h('li', {}, l))) : null,
    h('p', { className: 'muted small' }, 'Put it right here (trust someone again, block, revoke), or, if these changes were your own, accept them on this machine with ',
      h('code', {}, 'gatehouse audit accept-state'), '.'));
}
