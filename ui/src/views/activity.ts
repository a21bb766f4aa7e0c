// Activity: every decision and change the user made, in words, newest first — what they
// allowed, refused or changed, and when — with the log's own check (hash chain and the
// gate's signature).
import { api, asShape, errorText, type AuditEntry, type ContactView } from '../api';
import { h, replace } from '../dom';
import { failed } from './parts';
import { stateLines } from './state';
import { unnamedName, untilText, when } from '../format';

type Kind = 'allowed' | 'refused' | 'changed';

/** What each kind of entry says, and whether it let something in or kept it out. */
const WORDS: Record<string, [string, Kind]> = {
  'consent.allow_once': ['You let one message through from', 'allowed'],
  'consent.always_allow_scope': ['You allowed', 'allowed'],
  'consent.deny': ['You denied', 'refused'],
  'consent.block': ['You blocked', 'refused'],
  'consent.ask_later': ['You put off deciding about', 'changed'],
  'trust.add': ['You trusted', 'allowed'],
  'trust.update': ['You changed what you allow from', 'changed'],
  'trust.name': ['You named', 'changed'],
  'trust.remove': ['You stopped trusting', 'refused'],
  'trust.block': ['You blocked', 'refused'],
  'trust.unblock': ['You unblocked', 'allowed'],
  'trust.revoke': ['You revoked', 'refused'],
  'trust.unrevoke': ['You restored', 'allowed'],
  'uamp.token_issue': ['You issued a token to', 'allowed'],
  'uamp.token_revoke': ['You revoked the tokens of', 'refused'],
  'uamp.peer_add': ['You added the agent', 'changed'],
  'uamp.peer_remove': ['You removed the agent', 'changed'],
  'uamp.peer_token': ['You kept a token from the agent', 'changed'],
  'contact.verify': ['You verified', 'changed'],
  'contact.add_key': ['You added a key to', 'changed'],
  'contact.merge': ['You merged two contacts:', 'changed'],
  'contact.rename': ['You renamed', 'changed'],
  'contact.key_change': ['A contact’s key changed:', 'changed'],
  'contact.check_keys': ['You checked the keys of', 'changed'],
  'asop.rule_add': ['You added a rule for your agents', 'changed'],
  'asop.rule_remove': ['You removed a rule for your agents', 'changed'],
  'intentweb.pin': ['You pinned the key of', 'allowed'],
  'intentweb.site_add': ['You added the site', 'changed'],
  'intentweb.site_remove': ['You removed the site', 'changed'],
  'risk.dismiss': ['You set a warning aside on', 'changed'],
  'state.changed_outside': ['The gate’s database was changed outside Gatehouse (not acted on)', 'changed'],
  'state.accept': ['The gate’s state was accepted as its database held it', 'changed'],
  'first_run.sample': ['Gatehouse sent you its sample message', 'changed'],
  'first_run.done': ['You finished the welcome', 'changed'],
  'approver.invite': ['You invited a device to approve:', 'changed'],
  'approver.join': ['A device joined as an approver:', 'changed'],
  'approver.rename': ['You renamed the approver device', 'changed'],
  'approver.remove': ['You removed the approver device', 'refused'],
  'approver.mail': ['You set where an approver device is mailed:', 'changed'],
  'quorum.add': ['You made a rule that needs several people to agree', 'changed'],
  'quorum.remove': ['You removed a rule that needed several people', 'changed'],
  'mcp.tools_accept': ['You accepted the changed tools of', 'allowed'],
  'mcp.timeout': ['You changed how long an MCP server’s calls wait for you:', 'changed'],
  'mcp.remote_add': ['You added the MCP server', 'changed'],
  'mcp.remote_remove': ['You removed the MCP server', 'changed'],
  'mail.swarm_add': ['You added the agent swarm', 'changed'],
  'mail.swarm_remove': ['You removed the agent swarm', 'changed'],
  'email.account_add': ['You added the mail account', 'changed'],
  'email.account_remove': ['You removed the mail account', 'changed'],
  'email.envelope_sent': ['You sent a message by mail to', 'changed'],
  'reply.send': ['You sent a reply to', 'changed'],
  'executor.retry': ['You ran a message’s answer again:', 'changed'],
  'executors.update': ['You changed what runs the messages you allow', 'changed'],
  'settings.update': ['You changed your settings', 'changed'],
  'settings.retention': ['You changed how long history is kept', 'changed'],
  'settings.quiet_hours': ['You changed your quiet hours', 'changed'],
  'settings.ask_new_scopes': ['You changed what happens when someone you trust writes about something new', 'changed'],
  'a2a.agent_add': ['You added the A2A agent', 'changed'],
  'a2a.agent_remove': ['You removed the A2A agent', 'changed'],
  'a2a.plain_loopback': ['You changed whether agents on this computer may call over plain HTTP', 'changed'],
  'team.join': ['This desktop joined a team gate as an approver', 'changed'],
  'team.leave': ['This desktop left a team gate', 'changed'],
  'team.decide': ['You decided an item at a team gate:', 'changed'],
  'audit.pruned': ['Entries older than your retention were removed from the log', 'changed'],
};

/** An agent's step answered: allowed or not, by what the user chose. */
function kindOf(a: AuditEntry): Kind {
  if (a.action === 'asop.answer') return asShape<{ decision?: string }>(a.detail).decision === 'allow' ? 'allowed' : 'refused';
  return WORDS[a.action]?.[1] ?? 'changed';
}

const DAY = 24 * 3600 * 1000;
const PERIODS: Record<string, number> = { today: DAY, week: 7 * DAY, month: 30 * DAY };

export class ActivityView {
  readonly el = h('section', { className: 'activity', id: 'view-activity' });
  // Kept across redraws (new messages redraw the view): a check's answer and the filters stay.
  private readonly verdict = h('p', { role: 'status', id: 'audit-verdict' });
  private readonly show = h('select', { id: 'activity-show', 'aria-label': 'Show' },
    h('option', { value: '' }, 'Everything'), h('option', { value: 'allowed' }, 'What you allowed'),
    h('option', { value: 'refused' }, 'What you refused or blocked'), h('option', { value: 'changed' }, 'Other changes'));
  private readonly period = h('select', { id: 'activity-when', 'aria-label': 'When' },
    h('option', { value: '' }, 'Any time'), h('option', { value: 'today' }, 'Today'),
    h('option', { value: 'week' }, 'This week (7 days)'), h('option', { value: 'month' }, 'This month (30 days)'));

  constructor() {
    for (const s of [this.show, this.period]) s.addEventListener('change', () => { this.pages = 1; void this.load(); });
  }

  // The pages read so far: a redraw reads as many again, so "Show older" is not undone
  // by the next message.
  private pages = 1;

  /** Reads the newest pages from the store (the period is the store's filter, so a busy
   *  week is never cut at a fixed count); the kind is picked from what was read. */
  async load(): Promise<void> {
    // Only the newest read draws: one asked before it (another filter) may answer after.
    const mine = ++this.reads;
    try {
      const period = PERIODS[this.period.value];
      const since = period ? new Date(Date.now() - period).toISOString() : null;
      const [{ entries, more }, contacts] = await Promise.all([this.pagesSince(since), api.contactsList()]);
      if (mine !== this.reads) return;
      const names = new Map(contacts.flatMap((c: ContactView) => c.keys.map((k) => [k.key, c.name] as const)));
      // A check's answer is about the log as it was: once it has grown, it says so.
      const newest = entries[0]?.id ?? 0;
      if (this.checkedThrough !== null && newest > this.checkedThrough && !this.verdict.dataset.stale) {
        this.verdict.dataset.stale = 'yes';
        this.verdict.className = 'muted';
        this.verdict.textContent = `The log has grown since you checked it (${newest - this.checkedThrough} new ${newest - this.checkedThrough === 1 ? 'entry' : 'entries'}): check it again to include them.`;
      }
      const shown = entries.filter((a) => !this.show.value || kindOf(a) === this.show.value);
      const older = more ? h('button', { className: 'secondary', id: 'activity-older', onclick: () => { this.pages += 1; void this.load(); } },
        `Show older (${entries.length} read so far)`) : '';
      replace(this.el, h('h2', {}, 'Activity'),
        h('p', { className: 'muted' }, 'Every decision and change you made, newest first. Each entry carries the hash of the one before it, and the gate signs the log, so an edit made behind its back shows.'),
        h('div', { className: 'actions' }, this.show, this.period, h('button', { className: 'secondary', id: 'audit-check', onclick: () => void this.check() }, 'Check the log')), this.verdict,
        shown.length ? h('ul', { className: 'audit', id: 'audit-list' }, ...shown.map((a) =>
          h('li', { className: `audit-${kindOf(a)}`, 'data-kind': kindOf(a) }, h('time', { title: a.at }, when(a.at)), ' ', sentence(a, names),
            h('details', {}, h('summary', {}, 'details'), h('p', { className: 'muted small' }, 'Recorded as ', h('code', { className: 'action-code' }, a.action), ` (entry #${a.id})`),
              h('pre', { className: 'json' }, JSON.stringify(a.detail, null, 2))))))
          : h('p', { className: 'empty' }, entries.length || this.show.value || since ? 'Nothing of that kind in that time.' : 'Nothing yet.'),
        older);
    } catch (e) {
      if (mine === this.reads) replace(this.el, failed(e));
    }
  }

  /** Reads started so far (see `load`). */
  private reads = 0;

  /** As many pages as were shown, from `since` on, and whether older ones follow. */
  private async pagesSince(since: string | null): Promise<{ entries: AuditEntry[]; more: boolean }> {
    const entries: AuditEntry[] = [];
    let more = true;
    for (let page = 0; page < this.pages && more; page++) {
      const got = await api.auditList({ since, before: entries.length ? entries[entries.length - 1].id : null });
      entries.push(...got.entries);
      more = got.older;
    }
    return { entries, more };
  }

  /** The newest entry the last check covered. */
  private checkedThrough: number | null = null;

  private async check(): Promise<void> {
    const verdict = this.verdict;
    verdict.textContent = 'Checking…';
    delete verdict.dataset.stale;
    try {
      const v = await api.auditVerify();
      this.checkedThrough = v.last_id ?? 0;
      verdict.className = v.intact ? 'ok' : 'error';
      const fresh = v.last_id !== null && v.signed_through !== v.last_id ? v.last_id - (v.signed_through ?? 0) : 0;
      const unsigned = fresh > 0 ? ` The newest ${fresh === 1 ? 'entry is' : `${fresh} entries are`} not signed yet: the gate signs the log every 10 minutes and when you export it.` : '';
      const log = v.problem
        ? `Not intact: ${v.problem.reason}.`
        : `Intact: all ${v.entries} entries are as they were written (none changed, removed or reordered), and the gate’s key signed them.${unsigned}`;
      const state = v.state && (v.state.broken !== null || v.state.changes.length)
        ? [v.state.broken ? ` The gate’s state: ${v.state.broken}.` : ' The gate’s state was changed outside Gatehouse:', ...stateLines(v.state).map((l) => ` ${l}`)].join('')
        : '';
      verdict.textContent = log + state;
      // The list as the store holds it now, beside the answer.
      await this.load();
    } catch (e) { verdict.className = 'error'; verdict.textContent = errorText(e); }
  }
}

/** An entry in words: who did it (the user, or the approver device that decided), what,
 *  to whom (the contact's name where the key is known). */
function sentence(a: AuditEntry, names: Map<string, string>): HTMLElement {
  const d = asShape<{ name?: string; until?: string | null; decision?: string; result?: string; by?: { name?: string; approver?: string } }>(a.detail) ?? {};
  const who = a.subject ? names.get(a.subject) ?? d.name ?? unnamedName(a.subject) : d.name ?? '';
  // A decision made on an approver device is that device's, not the user's at this desk.
  const device = d.by?.approver ? d.by.name ?? 'an approver device' : null;
  const actor = (words: string) => (device && words.startsWith('You ') ? `${device} ${words.slice(4)}` : words);
  if (a.action === 'asop.answer') return h('span', {}, h('strong', {}, actor(d.decision === 'allow' ? 'You allowed a step of your agent' : `You answered a step of your agent: ${d.decision ?? '?'}`)));
  const words = WORDS[a.action]?.[0];
  if (!words) return h('span', {}, h('strong', {}, actor(`You made a change (${a.action})`)));
  return h('span', {}, h('strong', {}, actor(words)), who ? ` ${who}` : '', d.until ? h('span', { className: 'muted' }, ` ${untilText(d.until)}`) : '',
    typeof d.result === 'string' ? h('span', { className: 'muted small' }, ` — ${d.result}`) : '');
}
