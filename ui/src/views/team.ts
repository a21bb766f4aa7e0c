// Team gates this desktop approves for: what waits there, live (each gate says when it
// changed, and Rust sends the list read again), decided with this desktop's own key;
// joining one from an invitation's link, and leaving it, in Settings.
import { api, errorText, hasCode, type ApproverItem, type Decision, type Membership, type QuorumView, type TeamWaiting } from '../api';
import { h, Kept, replace } from '../dom';
import { consentSentence, type Prompt } from './sentence';
import { coveredList, lastingPicker } from './grants';
import { riskText } from './risk';

/** Past messages the store counts at most (store::MAX_COUNTED). */
const MAX_COUNTED = 1000;

/** The prompt's sentence, about the team's AI rather than the member's own. */
export function teamSentence(item: Prompt): string {
  return consentSentence(item).replace(/your AI/g, 'the team’s AI').replace('Your rules say to ask you', 'The gate’s rules say to ask').replace(/Your permission/g, 'The permission');
}

const DECIDED: Record<string, string> = { allow_once: 'allow once', always_allow_scope: 'always allow', deny: 'deny', block: 'block' };

/** Who must agree, and who did so far, in words. */
export function quorumText(q: QuorumView): [string, string] {
  const votes = q.votes.map((v) => {
    let said = v.decision;
    try { said = String((JSON.parse(v.decision) as { decision?: string }).decision ?? v.decision); } catch { /* shown as it is */ }
    return `${v.approver}: ${DECIDED[said] ?? said.replace(/_/g, ' ')}`;
  });
  return [`Needs ${q.need} of ${q.of.join(', ')} to agree${q.deny_ends ? '; one deny ends it' : ''}.`,
    votes.length ? `Decided so far — ${votes.join('; ')}` : 'No one has decided yet.'];
}

/** Fields the card draws in its own way above (the message with its flags, what
 * "always" would let in, claims and key changes as warnings). */
const DRAWN_ABOVE = new Set(['prompt', 'risk', 'covered', 'covered_total']);

/** Every other field the gate's approval digest covers, in the gate's words: this
 * desktop decides only on what it showed. */
export function shownList(it: ApproverItem): HTMLElement {
  const lines = it.shown.filter((l) => !l.warn && !DRAWN_ABOVE.has(l.field));
  return h('dl', { className: 'shown small' }, ...lines.flatMap((l) => [h('dt', {}, l.label), h('dd', {}, l.text)]));
}

export class TeamSection {
  readonly el = h('section', { id: 'team-waiting' });
  private gates = new Map<string, TeamWaiting>();
  /** The last decision's outcome, kept while the gate's list is drawn again under it. */
  private notice = h('p', { className: 'notice', id: 'team-notice', role: 'status' });
  /** Cards are kept while their item stays the same (a length being chosen survives). */
  private cards = new Kept();

  /** Reads every team gate again (the tab was opened). */
  async load(): Promise<void> {
    try {
      const all = await api.teamWaiting();
      this.gates = new Map(all.map((t) => [t.membership.id, t]));
      this.draw();
    } catch (e) {
      replace(this.el, h('p', { className: 'error' }, errorText(e)));
    }
  }

  /** One gate said what waits there now. */
  update(t: TeamWaiting): void {
    this.gates.set(t.membership.id, t);
    this.draw();
  }

  /** Items waiting at team gates, for the tab's count. */
  count(): number {
    return [...this.gates.values()].reduce((n, t) => n + t.items.length, 0);
  }

  private draw(): void {
    replace(this.el, this.notice, ...[...this.gates.values()].map((t) => this.gate(t)));
    this.cards.sweep();
  }

  private gate(t: TeamWaiting): HTMLElement {
    const m = t.membership;
    const state = m.removed ? h('p', { className: 'error' }, 'This desktop was removed from this gate: it can no longer decide there. Leave it in Settings, or ask its owner for a new invitation.')
      : t.error ? h('p', { className: 'error', role: 'status' }, `${errorText(t.error)} — trying again.`)
        : t.items.length ? null : h('p', { className: 'empty' }, 'Nothing waits at this gate.');
    // This desktop holds the gate's newest signed checkpoint: a log that no longer
    // extends it was rewound behind the gate's back.
    const rewound = t.log_problem ? h('p', { className: 'state-changed log-rewound', role: 'alert' },
      `This gate’s activity log was changed behind its back: ${t.log_problem}. Tell the gate’s owner.`) : null;
    return h('div', { className: 'team-gate', 'data-gate': m.id },
      h('h3', {}, `Team gate ${m.gate_url}`, h('span', { className: 'muted small' }, ` — you decide here as “${m.name}”`)),
      rewound, state,
      ...t.items.map((it) => this.cards.get(`${m.id} ${JSON.stringify(it)}`, () => this.card(m, it))));
  }

  private card(m: Membership, it: ApproverItem): HTMLElement {
    const item = it.item as Prompt;
    const result = h('p', { className: 'result', role: 'status' });
    const scope = item.kind === 'unknown_sender' ? (item.scope ?? item.scopes_tried[0] ?? '') : item.kind === 'key_change' ? '' : item.scope;
    const decide = async (d: Decision) => {
      try {
        const length = d === 'always_allow_scope' && picker ? picker.value() : null;
        if (d === 'always_allow_scope' && picker && !length) throw new Error('Choose the date the permission ends, or another length.');
        const out = await api.teamDecide(m.id, it.target, it.digest, d, length);
        result.textContent = out.message;
        result.classList.remove('error');
        this.notice.textContent = out.message;
        card.classList.add('decided');
        for (const b of card.querySelectorAll('button')) (b as HTMLButtonElement).disabled = true;
      } catch (e) {
        result.textContent = errorText(e);
        result.classList.add('error');
        // Gone or changed at the gate: its stream brings what waits there now.
        if (hasCode(e, 'GONE') || hasCode(e, 'CHANGED')) card.classList.add('decided');
      }
    };
    const button = (d: Decision, label: string, cls: string): HTMLButtonElement =>
      h('button', { className: cls, 'data-decision': d, onclick: () => void decide(d) }, label);
    const allow = button('always_allow_scope', `Always allow for “${scope}”`, 'secondary');
    const picker = item.kind === 'key_change' ? null : lastingPicker(scope, allow);
    const [needs, sofar] = it.quorum ? quorumText(it.quorum) : [null, null];
    // This device's vote is in: the gate counts it once (the others' are awaited).
    const voted = it.quorum?.votes.some((v) => v.approver === m.name) ?? false;
    const prompt = item.kind === 'key_change' ? null : item.prompt;
    // As the gate's own window offers them: a refused UAMP or ASOP knock kept no message.
    const once = !(item.kind === 'key_change' || (item.kind === 'unknown_sender' && (item.source === 'uamp_agent' || item.source === 'asop_agent' || item.source === 'mcp_server' || item.source === 'a2a_agent' || item.source === 'other_door')));
    // A knock at a door this gate does not run is denied or blocked, never let in.
    const lettable = !(item.kind === 'unknown_sender' && item.source === 'other_door');
    // A warning among the lines (a flag, a claim to be someone, a key that changed): the
    // main action is not an allow, as on the gate's own window and the phone.
    const flagged = it.shown.some((l) => l.warn);
    const card: HTMLElement = h('article', { className: `consent-card team ${item.kind}`, 'data-digest': it.digest, tabindex: 0, 'aria-label': teamSentence(item) },
      h('p', { className: 'ask' }, teamSentence(item)),
      ...(item.kind === 'unknown_sender' ? item.claims : []).map((c) => h('p', { className: 'claim-warning', role: 'alert' },
        h('strong', {}, `⚠ This new key ${c.how}.`), ` If ${c.contact_name} changed keys, check with them before you trust it.`)),
      item.kind === 'key_change' ? h('p', { className: 'key-change', role: 'alert' }, '⚠ It signed with a key not kept for it. New keys are taken on the gate’s own window, from its DID document; from here you can keep its keys or block it.') : null,
      prompt && item.kind !== 'key_change' ? riskText('blockquote', {}, prompt, item.risk, null) : null,
      item.kind === 'held' || item.kind === 'unknown_sender' ? coveredList(scope, item.covered, Number(item.covered_total), MAX_COUNTED) : null,
      shownList(it),
      needs ? h('p', { className: 'quorum' }, needs) : null,
      sofar ? h('p', { className: 'muted votes' }, sofar) : null,
      it.looking.length ? h('p', { className: 'muted small looking' }, `Also looking: ${it.looking.join(', ')}.`) : null,
      h('div', { className: 'actions' },
        once ? button('allow_once', 'Allow once', flagged ? 'secondary' : 'primary') : null,
        item.kind === 'key_change' || !lettable ? null : allow, lettable ? picker?.el : null,
        button('deny', item.kind === 'key_change' ? 'Keep its keys' : 'Deny', flagged ? 'primary' : 'secondary'), button('block', 'Block', 'danger')),
      result);
    if (voted) {
      card.classList.add('decided');
      for (const b of card.querySelectorAll('button')) (b as HTMLButtonElement).disabled = true;
      result.textContent = 'You voted; it waits for the others.';
    }
    return card;
  }
}

function row(m: Membership, msg: HTMLElement, redraw: () => Promise<void>): HTMLElement {
  const leave = h('button', { className: 'secondary', onclick: async () => {
    try {
      await api.teamLeave(m.id);
      msg.textContent = `Left ${m.gate_url}: this desktop's key for it is deleted. Its owner can remove the device there.`;
      await redraw();
    } catch (e) { msg.textContent = errorText(e); }
  } }, 'Leave');
  leave.setAttribute('aria-label', `Leave ${m.gate_url}`);
  return h('li', { 'data-id': m.id }, h('strong', {}, m.gate_url), ` as “${m.name}”`,
    h('span', { className: 'muted small' }, m.removed ? ' — removed by its owner' : ` — joined ${m.joined_at}`), ' ', leave);
}

/** Settings: join a team gate from an invitation's link, and the gates joined. */
export async function teamCard(): Promise<HTMLElement> {
  const card = h('section', { className: 'card', id: 'team' });
  const msg = h('p', { role: 'status', id: 'team-msg' });
  const list = h('ul', { id: 'team-list' });
  const redraw = async (): Promise<void> => {
    try {
      const all = await api.teamList();
      replace(list, ...(all.length ? all.map((m) => row(m, msg, redraw)) : [h('li', { className: 'muted' }, 'None yet.')]));
    } catch (e) { msg.textContent = errorText(e); }
  };
  const link = h('input', { id: 'team-link', type: 'url', placeholder: 'https://gate.example.org/approve#code=…', size: 48 });
  const name = h('input', { id: 'team-name', type: 'text', placeholder: 'Ana’s laptop', maxLength: 80 });
  const form = h('form', { onsubmit: async (e: Event) => {
    e.preventDefault();
    msg.textContent = 'Making this desktop’s key and joining…';
    try {
      const m = await api.teamJoin(link.value, name.value);
      msg.textContent = `Joined ${m.gate_url} as “${m.name}”. What waits there appears in Waiting for you.`;
      link.value = '';
      await redraw();
    } catch (err) { msg.textContent = errorText(err); }
  } },
    h('label', {}, h('span', {}, 'Invitation link'), link),
    h('label', {}, h('span', {}, 'Name this desktop'), name),
    h('div', { className: 'actions' }, h('button', { className: 'primary', type: 'submit', id: 'team-join' }, 'Join')));
  await redraw();
  replace(card,
    h('h3', {}, 'Join a team gate'),
    h('p', { className: 'muted small' }, 'Paste the invitation a team gate’s owner sent you. This desktop makes a key of its own (kept in your keychain) and decides there with it. Your own gate keeps working as it is.'),
    form, h('h4', {}, 'Team gates you approve for'), list, msg);
  return card;
}
