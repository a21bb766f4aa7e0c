// Activity: every decision and change the user made, in words, newest first — what they
// allowed, refused or changed, and when — with the log's own check (hash chain and the
// gate's signature).
import { api, asShape, errorText, type AuditEntry, type ContactView } from '../api';
import { h, replace } from '../dom';
import { failed } from './parts';
import { stateLines } from './state';
import { fingerprint, when } from '../format';

type Kind = 'allowed' | 'refused' | 'changed';

/** What each kind of entry says, and whether it let something in or kept it out. */
const WORDS: Record<string, [string, Kind]> = {
  'consent.allow_once': ['You let one message through from', 'allowed'],
  'consent.always_allow_scope': ['You allowed', 'allowed'],
  'consent.deny': ['You denied', 'refused'],
  'consent.block': ['You blocked', 'refused'],
  'consent.ask_later': ['You put off deciding about', 'changed'],
  'trust.add': ['You trusted', 'allowed'],
  'trust.update': ['You changed what may be asked by', 'changed'],
  'trust.remove': ['You stopped trusting', 'refused'],
  'trust.block': ['You blocked', 'refused'],
  'trust.unblock': ['You unblocked', 'allowed'],
  'trust.revoke': ['You revoked', 'refused'],
  'trust.unrevoke': ['You restored', 'allowed'],
  'uamp.token_issue': ['You issued a token to', 'allowed'],
  'uamp.token_revoke': ['You revoked the tokens of', 'refused'],
  'contact.verify': ['You verified', 'changed'],
  'contact.add_key': ['You added a key to', 'changed'],
  'contact.merge': ['You merged two contacts:', 'changed'],
  'contact.rename': ['You renamed', 'changed'],
  'asop.rule_add': ['You added a rule for your agents', 'changed'],
  'asop.rule_remove': ['You removed a rule for your agents', 'changed'],
  'intentweb.pin': ['You pinned the key of', 'allowed'],
  'risk.dismiss': ['You set a warning aside on', 'changed'],
  'state.changed_outside': ['The gate’s database was changed outside Gatehouse (not acted on)', 'changed'],
  'state.accept': ['The gate’s state was accepted as its database held it', 'changed'],
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
      const shown = entries.filter((a) => !this.show.value || kindOf(a) === this.show.value);
      const older = more ? h('button', { className: 'secondary', id: 'activity-older', onclick: () => { this.pages += 1; void this.load(); } },
        `Show older (${entries.length} read so far)`) : '';
      replace(this.el, h('h2', {}, 'Activity'),
        h('p', { className: 'muted' }, 'Every decision and change you made, newest first. Each entry carries the hash of the one before it, and the gate signs the log, so an edit made behind its back shows.'),
        h('div', { className: 'actions' }, this.show, this.period, h('button', { className: 'secondary', id: 'audit-check', onclick: () => void this.check() }, 'Check the log')), this.verdict,
        shown.length ? h('ul', { className: 'audit', id: 'audit-list' }, ...shown.map((a) =>
          h('li', { className: `audit-${kindOf(a)}`, 'data-kind': kindOf(a) }, h('time', { title: a.at }, when(a.at)), ' ', sentence(a, names), ' ', h('code', { className: 'action-code' }, a.action),
            h('details', {}, h('summary', {}, 'details'), h('pre', { className: 'json' }, JSON.stringify(a.detail, null, 2))))))
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

  private async check(): Promise<void> {
    const verdict = this.verdict;
    verdict.textContent = 'Checking…';
    try {
      const v = await api.auditVerify();
      verdict.className = v.intact ? 'ok' : 'error';
      const unsigned = v.last_id !== null && v.signed_through !== v.last_id ? ` Entries after #${v.signed_through ?? 0} are not signed yet (the gate signs every 10 minutes and on export).` : '';
      const log = v.problem
        ? `Not intact: ${v.problem.reason}.`
        : `Intact: ${v.entries} entries, none changed, removed or moved; signed by this gate's key.${unsigned}`;
      const state = v.state && (v.state.broken !== null || v.state.changes.length)
        ? [v.state.broken ? ` The gate’s state: ${v.state.broken}.` : ' The gate’s state was changed outside Gatehouse:', ...stateLines(v.state).map((l) => ` ${l}`)].join('')
        : '';
      verdict.textContent = log + state;
      // The list as the store holds it now, beside the answer.
      await this.load();
    } catch (e) { verdict.className = 'error'; verdict.textContent = errorText(e); }
  }
}

/** An entry in words: what was done, to whom (the contact's name where the key is known). */
function sentence(a: AuditEntry, names: Map<string, string>): HTMLElement {
  const d = asShape<{ name?: string; until?: string | null; decision?: string; result?: string }>(a.detail) ?? {};
  const who = a.subject ? names.get(a.subject) ?? d.name ?? fingerprint(a.subject) : d.name ?? '';
  if (a.action === 'asop.answer') return h('span', {}, h('strong', {}, d.decision === 'allow' ? 'You allowed a step of your agent' : `You answered a step of your agent: ${d.decision ?? '?'}`));
  const words = WORDS[a.action]?.[0];
  if (!words) return h('span', {}, h('strong', {}, a.action.replace(/[._]/g, ' ')));
  return h('span', {}, h('strong', {}, words), who ? ` ${who}` : '', d.until ? h('span', { className: 'muted' }, ` until ${when(d.until)}`) : '',
    typeof d.result === 'string' ? h('span', { className: 'muted small' }, ` — ${d.result}`) : '');
}
