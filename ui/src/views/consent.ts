// Consent prompts, in plain words: who wants to reach your AI, about what, and what
// each button does.
import { api, asShape, errorText, hasCode, type AsopStep, type Claim, type ConsentItem, type ConsentTarget, type Decision, type Flag } from '../api';
import { h, Kept, replace } from '../dom';
import { failed } from './parts';
import { extrasCard } from './inbox';
import { riskText } from './risk';
import { coveredList, lasting as lastingOf, lastingPicker, letInLabel, type LastingChoice } from './grants';
import { quietBanner } from './quiet';
import { stateNotice } from './state';
import { unnamedName, when } from '../format';
import { TeamSection } from './team';
import { toolChangeCard, toolsList } from './tools';

/** The keys (with Alt) that decide a prompt from the keyboard. */
export const SHORTCUTS: Record<Decision, string> = { allow_once: 'O', always_allow_scope: 'A', ask_later: 'L', deny: 'D', block: 'B' };

import { consentSentence, type Prompt } from './sentence';
export { consentSentence };

/** Past messages the store counts at most for "what always would have let in" (store::MAX_COUNTED). */
const MAX_COUNTED = 1000;


export class ConsentView {
  readonly el = h('section', { className: 'consent', id: 'view-consent' });
  /** The outcome of the last decision, kept while the list refreshes under it; it goes
   *  once anything new waits (it is never read as being about the next item). */
  private notice = h('p', { className: 'notice', id: 'consent-notice', role: 'status' });
  /** What was drawn last, and what was drawn when the notice was said. */
  private drawn = new Set<string>();
  private noticeAmong: Set<string> | null = null;
  /** An agent's question is kept while it waits, so a pattern being typed survives redraws. */
  private asks = new Kept();
  /** Prompts are kept while they stay the same, so a redraw (another arrival) does not undo
   *  a choice being made on one (how long to allow, a date). */
  private cards = new Kept();
  /** What waits at the team gates this desktop approves for, below the user's own. */
  readonly team = new TeamSection();
  /** The user's contacts, offered on a stranger's prompt: it may be a new key of one. */
  private people: { id: number; name: string }[] = [];
  constructor(private onChange: () => void) {}

  /** `fresh`: the tab was opened, and the team gates are asked again too (their own
   *  streams keep them current otherwise). */
  async load(fresh = false): Promise<void> {
    if (fresh) {
      void this.team.load();
      // Opened: what was drawn before may be out of date (a key verified meanwhile, a
      // prompt decided elsewhere): it stays in view, so nothing jumps, but cannot be
      // clicked until the list read now is drawn.
      this.el.setAttribute('aria-busy', 'true');
      this.el.setAttribute('inert', '');
    }
    try {
      // One list of everything that waits (the count on the tab is its length).
      const [all, quiet, state, people] = await Promise.all([api.consentList(), api.quietHoursGet().catch(() => null), api.stateCheck().catch(() => null), api.contactsList().catch(() => [])]);
      this.people = people.map((c) => ({ id: c.id, name: c.name }));
      const asks = all.flatMap((it) => (it.kind === 'guardian_step' ? [it] : []));
      const changes = all.flatMap((it) => (it.kind === 'tool_change' ? [it] : []));
      const changeCard = (it: (typeof changes)[number]) => this.cards.get(JSON.stringify(it), () => toolChangeCard(it, (c, r, t) => this.settled(c, r, t), (c, r, e) => this.failed(c, r, e)));
      const prompts = all.filter((it): it is Prompt => it.kind !== 'guardian_step' && it.kind !== 'tool_change');
      const items = prompts.filter((it) => !it.later);
      const later = prompts.filter((it) => it.later);
      // Each item by what it is about (not by how it reads now: a prompt put off, or
      // counted again, is the same prompt).
      const keys = new Set([...asks.map((a) => `step:${a.step.row}`), ...changes.map((c) => `tools:${c.server}`), ...prompts.map(promptId)]);
      if (this.noticeAmong && [...keys].some((k) => !this.noticeAmong!.has(k))) {
        this.notice.textContent = '';
        this.notice.classList.remove('warning');
        this.noticeAmong = null;
      }
      this.drawn = keys;
      replace(this.el, h('h2', {}, 'Waiting for you'), stateNotice(state), quietBanner(quiet), this.notice,
        items.length || asks.length || changes.some((c) => !c.later) ? null : h('p', { className: 'empty' }, later.length
          ? 'Nothing else is waiting: what you put off is below.'
          : 'Nothing is waiting. When an unknown sender knocks, a message needs your consent, or one of your agents asks before it acts, it appears here.'),
        ...asks.map((a) => this.asks.get(String(a.step.row), () => this.askCard(a.step, a.risk))),
        ...changes.filter((c) => !c.later).map(changeCard),
        ...items.map((it) => this.cards.get(JSON.stringify(it), () => this.card(it))),
        later.length + changes.filter((c) => c.later).length ? h('details', { className: 'later', id: 'consent-later' },
          h('summary', {}, `Put off (${later.length + changes.filter((c) => c.later).length}) — nothing was allowed or denied; each asks again when its time comes`),
          ...changes.filter((c) => c.later).map(changeCard),
          ...later.map((it) => this.cards.get(JSON.stringify(it), () => this.card(it)))) : null,
        this.team.el);
      this.asks.sweep();
      this.cards.sweep();
      this.wakeAt([...later, ...changes].map((it) => it.later ?? '').filter(Boolean));
    } catch (e) {
      replace(this.el, failed(e));
    } finally {
      if (fresh) {
        this.el.removeAttribute('aria-busy');
        this.el.removeAttribute('inert');
      }
    }
  }

  /** Brings a sender's prompt into view with the keyboard on it (a notification was
   *  clicked); without a sender, or once it is gone, the first that waits. */
  focusPrompt(sender: string | null): void {
    const cards = [...this.el.querySelectorAll<HTMLElement>('.consent-card:not(.decided)')];
    const card = cards.find((c) => sender !== null && c.dataset.sender === sender) ?? cards[0];
    if (!card) return;
    const later = card.closest('details');
    if (later) later.open = true;
    card.scrollIntoView({ block: 'center' });
    card.focus();
  }

  private wake: number | undefined;
  /** A prompt put off comes back on its own: the list is drawn again when the first is due. */
  private wakeAt(times: string[]): void {
    window.clearTimeout(this.wake);
    const due = Math.min(...times.map((t) => Date.parse(t)));
    if (!Number.isFinite(due)) return;
    // Timers past ~24.8 days overflow; a day is plenty, the list is drawn again then.
    this.wake = window.setTimeout(() => { void this.load(); this.onChange(); }, Math.min(Math.max(due - Date.now(), 0) + 1000, 86_400_000));
  }

  /** The card's question is settled: it says how, buttons go, the list refreshes. */
  private settled(card: HTMLElement, result: HTMLElement, text: string): void {
    result.textContent = text;
    this.say(text, false);
    card.classList.add('decided');
    for (const b of card.querySelectorAll('button')) (b as HTMLButtonElement).disabled = true;
    this.onChange();
  }

  /** Says what became of a decision above the list, for as long as nothing new waits. */
  private say(text: string, warning: boolean): void {
    this.notice.textContent = text;
    this.notice.classList.toggle('warning', warning);
    this.noticeAmong = new Set(this.drawn);
  }

  /** A decision that did not go through. If the request is gone (decided from the CLI or
   *  another window, or withdrawn), there is nothing left to decide: the card is settled
   *  as such; any other failure stays on the card to try again. */
  private failed(card: HTMLElement, result: HTMLElement, e: unknown): void {
    if (hasCode(e, 'GONE')) {
      this.settled(card, result, 'Already decided or withdrawn — nothing is waiting here any more.');
      return;
    }
    if (hasCode(e, 'CHANGED')) {
      // The sender asked again meanwhile: the card is redrawn with what it asks now, and
      // the warning is about that card (said once it is drawn, so it stays with it).
      // Nothing was decided: said as a warning, not in a decision's green.
      const why = errorText(e);
      void this.load().then(() => this.say(why, true));
      return;
    }
    result.textContent = errorText(e);
    result.classList.add('error');
  }

  /** One of the user's agents waits (its request held) for a decision on a step; `risk`:
   * the flags in what the agent says its tool does (allowing one takes a deliberate click). */
  private askCard(a: AsopStep, risk: Flag[]): HTMLElement {
    const params = asShape<{ params?: Record<string, unknown> } | null>(a.request)?.params ?? {};
    const call = params.toolCallRequest as { inputs?: { name: string; value: unknown }[]; toolId?: string } | undefined;
    const inputs = call?.inputs ?? [];
    // What the agent (or the MCP server) says the tool does: its own words, a claim.
    const tools = ((params.context as { agent?: { tools?: { id?: string; description?: string }[] } } | undefined)?.agent?.tools) ?? [];
    const described = tools.find((t) => t.id !== undefined && t.id === call?.toolId)?.description;
    const flagged = risk.some((f) => !f.dismissed);
    const always = h('input', { type: 'checkbox', id: `asop-always-${a.row}`, className: 'asop-always' });
    const untilDate = h('input', { type: 'date', className: 'asop-until', 'aria-label': 'The rule lasts until this date', hidden: true });
    const length = h('select', { className: 'asop-for', 'aria-label': 'How long the rule lasts', onchange: () => { untilDate.hidden = length.value !== 'until'; } },
      h('option', { value: 'always' }, 'for good'), h('option', { value: 'hour' }, 'for 1 hour'), h('option', { value: 'tonight' }, 'until tonight'),
      h('option', { value: 'until' }, 'until a date…'));
    const pattern = h('input', { type: 'text', className: 'asop-pattern', placeholder: 'pattern to redact, e.g. \\d{16}', size: 24 });
    const result = h('p', { className: 'result', role: 'status' });
    const answer = async (decision: 'allow' | 'deny' | 'modify') => {
      try {
        const choice = length.value as LastingChoice;
        const lasting = always.checked && choice !== 'always' ? lastingOf(choice, untilDate.value) : null;
        if (always.checked && choice === 'until' && !lasting) throw new Error('Choose the date the rule ends, or another length.');
        await api.asopAnswer(a.row, { decision, always: always.checked, redact: decision === 'modify' ? pattern.value : null, note: null, lasting });
        const said = { allow: 'Allowed', deny: 'Denied', modify: 'Allowed with redactions' }[decision];
        const rule = lasting ? { always: '', hour: ' for 1 hour', tonight: ' until tonight', until: ` until ${untilDate.value}` }[lasting.for] : '';
        this.settled(card, result, `${said}${always.checked ? ` — and made a rule${rule}` : ''}. The agent has its answer.`);
      } catch (e) {
        this.failed(card, result, e);
      }
    };
    const card = h('article', { className: 'consent-card asop-ask', 'data-kind': 'asop', 'data-row': a.row },
      h('p', { className: 'ask' }, a.summary),
      a.reasoning ? h('blockquote', { className: 'prompt' }, `Its reasoning: ${a.reasoning}`) : null,
      described ? h('div', { className: 'tool-said' }, h('p', { className: 'muted' }, 'The tool says of itself:'),
        riskText('blockquote', {}, described, risk, null, 'This tool’s description')) : null,
      inputs.length ? h('table', { className: 'asop-args' }, h('tbody', {}, ...inputs.map((i) => h('tr', {}, h('th', {}, i.name), h('td', { className: 'mono' }, typeof i.value === 'string' ? i.value : JSON.stringify(i.value)))))) : null,
      h('p', { className: 'muted small' }, `${a.method} · session ${a.session_id ?? '—'} · asked ${when(a.created_at)}. The agent waits for your answer.`),
      h('div', { className: 'actions' },
        h('button', { className: flagged ? 'secondary warning' : 'primary', 'data-answer': 'allow', onclick: () => void answer('allow') }, flagged ? 'Allow anyway' : 'Allow'),
        h('button', { className: flagged ? 'primary' : 'secondary', 'data-answer': 'deny', onclick: () => void answer('deny') }, 'Deny'),
        pattern, h('button', { className: 'secondary', 'data-answer': 'modify', onclick: () => void answer('modify') }, 'Allow, redacted'),
        h('label', { className: 'small' }, always, ' Always (make it a rule)'), length, untilDate),
      result);
    return card;
  }

  private card(item: Prompt): HTMLElement {
    // A stranger's prompt names the knock it shows: if the sender knocks again before the
    // click, nothing is decided and the newer knock is shown.
    const target: ConsentTarget = item.kind === 'unknown_sender' ? { kind: 'unknown_sender', public_key: item.public_key, knock: item.knock }
      : item.kind === 'held_ask' ? { kind: 'held_ask', stream_id: item.stream_id }
        : item.kind === 'key_change' ? { kind: 'key_change', sender: item.sender } : { kind: 'held', row_id: item.row_id };
    const scope = item.kind === 'unknown_sender' ? (item.scope ?? item.scopes_tried[0] ?? '') : item.kind === 'key_change' ? '' : item.scope;
    const result = h('p', { className: 'result', role: 'status' });
    const decide = async (d: Decision) => {
      try {
        const length = d === 'always_allow_scope' && picker ? picker.value() : null;
        if (d === 'always_allow_scope' && picker && !length) throw new Error('Choose the date the permission ends, or another length.');
        // A stranger let in is kept under the name given on its prompt (else its unnamed form).
        const name = d === 'always_allow_scope' && naming ? naming.value.trim() || null : null;
        const out = await api.consentDecide(target, d, length, name);
        this.settled(card, result, out.message);
        // A prompt put off moves out of the way at once, to the list of those put off.
        if (d === 'ask_later') await this.load();
      } catch (e) {
        this.failed(card, result, e);
      }
    };
    // Alt+O, Alt+A, Alt+D, Alt+B decide from the keyboard while the prompt has focus; a
    // single key could decide by accident, so the shortcuts need Alt.
    const button = (d: Decision, label: string, cls: string, help: string): HTMLButtonElement =>
      // No hover tooltip: one outlived its button (the card is redrawn under the pointer)
      // and covered the warnings. What it does is for assistive technology; the keys are
      // said under the buttons.
      h('button', { className: cls, 'data-decision': d, 'aria-description': help, 'aria-keyshortcuts': `Alt+${SHORTCUTS[d]}`, onclick: () => void decide(d) }, label);
    const prompt = item.kind === 'key_change' ? null : item.prompt;
    // Agents and IntentSites knock with their key alone, and a key change is about keys:
    // there is no message to show.
    const keyOnly = item.kind === 'key_change' || (item.kind === 'unknown_sender' && (item.source === 'asop_agent' || item.source === 'mcp_server' || item.source === 'intent_site'));
    // Agents are registered for good (and removed at any time; their steps can be allowed
    // for a while); anything else may be allowed, or an IntentSite pinned, for a while.
    const mcp = item.kind === 'unknown_sender' && item.source === 'mcp_server';
    const allow = mcp ? button('always_allow_scope', 'Let it in', 'secondary', 'Its tools as shown reach your AI; each call is decided by your rules, or asked about.')
      : button('always_allow_scope', `Always allow for “${scope}”`, 'secondary', 'Let this sender through for this scope, for as long as you choose.');
    const picker = item.kind === 'key_change' || (item.kind === 'unknown_sender' && item.source === 'asop_agent') ? null : lastingPicker(scope, allow, mcp ? letInLabel : undefined);
    // A knock at a door this gate does not run is denied or blocked, never let in.
    const lettable = !(item.kind === 'unknown_sender' && item.source === 'other_door');
    // A stranger is named where the person meets it: on its prompt, kept once it is let in.
    const naming = item.kind === 'unknown_sender' && lettable && !item.known_as
      ? h('input', { type: 'text', className: 'sender-name', maxLength: 80, placeholder: 'e.g. Alice', 'aria-label': 'Name this sender' })
      : null;
    // Safe by default: on a message with a warning (a risk flag not set aside, a claim to
    // be someone the user knows), Deny is the main action; allowing takes a deliberate
    // click on a plain button.
    const flagged = (item.kind !== 'key_change' && item.risk.some((f) => !f.dismissed)) || (item.kind === 'unknown_sender' && item.claims.length > 0);
    const card: HTMLElement = h('article', { className: `consent-card ${item.kind}`, 'data-kind': item.kind, 'data-sender': item.kind === 'unknown_sender' ? item.public_key : item.sender, tabindex: 0, 'aria-label': consentSentence(item),
      onkeydown: (ev: Event) => {
        const e = ev as KeyboardEvent;
        if (!e.altKey || e.ctrlKey || e.metaKey) return;
        const d = (Object.keys(SHORTCUTS) as Decision[]).find((k) => e.code === `Key${SHORTCUTS[k]}`);
        const b = d ? card.querySelector<HTMLButtonElement>(`button[data-decision="${d}"]`) : null;
        if (b && !b.disabled) { e.preventDefault(); b.click(); }
      } },
      h('p', { className: 'ask' }, consentSentence(item)),
      item.kind === 'unknown_sender' ? this.claims(item.public_key, item.claims, (): HTMLElement => card) : null,
      // (A team node of an older release sends no tools.)
      item.kind === 'unknown_sender' && item.tools?.length ? toolsList(item.tools) : null,
      item.kind === 'key_change' ? keyChangeWarning(item) : null,
      item.kind === 'held' && item.key_change ? h('p', { className: 'key-change', role: 'alert' },
        '⚠ This is a new key of a contact you verified, and it is not verified itself. Nothing from it gets through until you check it with them: People & agents → the contact → Verify.') : null,
      item.kind === 'held_ask' && item.key_change ? h('p', { className: 'key-change', role: 'alert' },
        '⚠ This agent’s keys changed after you verified it. Nothing from it gets through until you verify it again: People & agents → the contact → Verify.') : null,
      prompt && item.kind !== 'key_change' ? riskText('blockquote', {}, prompt, item.risk, item.kind === 'held_ask' ? item.stream_id : item.envelope_id)
        : keyOnly ? null : h('p', { className: 'muted' }, 'The message itself could not be kept (too large).'),
      (item.kind === 'held' || item.kind === 'unknown_sender') && item.extras ? extrasCard(item.extras) : null,
      item.kind === 'held' || item.kind === 'unknown_sender' ? coveredList(scope, item.covered, Number(item.covered_total), MAX_COUNTED) : null,
      item.later ? h('p', { className: 'muted small later-until' }, `Put off: asks again ${when(item.later)}.`) : null,
      naming ? h('label', { className: 'name-it' }, h('span', {}, 'Name it'), naming,
        h('span', { className: 'muted small' }, `Kept once you let it in, for good or for a while; until then it is “${unnamedName(item.kind === 'unknown_sender' ? item.public_key : '')}”.`)) : null,
      naming && item.kind === 'unknown_sender' && isPersonKey(item.source) ? this.pickPerson(item.public_key, result, (): HTMLElement => card) : null,
      h('p', { className: 'muted small' },
        item.kind === 'unknown_sender' || item.kind === 'key_change' ? `First seen ${when(item.first_seen)}, last ${when(item.last_seen)}.` : `Received ${when(item.received_at)}.`),
      h('div', { className: 'actions' },
        // A UAMP or A2A agent's refused message was not kept, so there is nothing to let through once.
        item.kind === 'key_change' || (item.kind === 'unknown_sender' && (item.source === 'uamp_agent' || item.source === 'asop_agent' || item.source === 'mcp_server' || item.source === 'a2a_agent' || item.source === 'other_door')) ? null
          : button('allow_once', 'Allow once', flagged ? 'secondary' : 'primary', 'Let this one message through; ask again next time.'),
        // New keys come only from the agent's own DID document, fetched when the user asks.
        item.kind === 'key_change' ? h('button', { className: 'primary', 'data-action': 'check-keys', onclick: async () => {
          try {
            const out = await api.contactCheckKeys(item.sender);
            this.settled(card, result, out.message);
          } catch (e) { this.failed(card, result, e); }
        } }, 'Check its DID document') : lettable ? allow : null,
        lettable ? picker?.el : null,
        item.later ? null : button('ask_later', 'Ask me later', 'secondary', 'Put this off for an hour: nothing is allowed or denied meanwhile.'),
        item.kind === 'key_change' ? button('deny', 'Keep its keys', 'secondary', 'Keep the keys you trusted it with; messages signed with another key stay refused.')
          : button('deny', 'Deny', flagged ? 'primary' : 'secondary', 'Do not let this message through.'),
        button('block', 'Block', 'danger', 'Never let this sender through or ask again.')),
      result);
    const keys = [...card.querySelectorAll<HTMLButtonElement>('.actions button[data-decision]')].map((b) => `Alt+${SHORTCUTS[b.dataset.decision as Decision]} ${b.textContent?.toLowerCase()}`);
    result.before(h('p', { className: 'muted small keys' }, `From the keyboard: ${keys.join(' · ')}.`));
    // A new key of a verified contact cannot be let through until it is verified.
    if ((item.kind === 'held' || item.kind === 'held_ask') && item.key_change) {
      for (const b of card.querySelectorAll<HTMLButtonElement>('button[data-decision="allow_once"], button[data-decision="always_allow_scope"]')) b.disabled = true;
    }
    return card;
  }

  /** A new key claiming to be (or act for) a contact: a prominent warning, and the one
   *  way to make it theirs, by the user's word. */
  private claims(key: string, claims: Claim[], card: () => HTMLElement): HTMLElement | null {
    if (!claims.length) return null;
    const result = h('p', { className: 'result', role: 'status' });
    return h('div', { className: 'claim-warning', role: 'alert' },
      ...claims.map((c) => h('div', {},
        h('p', {}, h('strong', {}, `⚠ This new key ${c.how}.`), ' ',
          c.verified ? `You verified ${c.contact_name}: if they changed keys, it stays blocked until you verify the new one with them.`
            : `If ${c.contact_name} changed keys, check with them before you trust it.`),
        h('button', { className: 'secondary adopt', 'data-adopt': c.contact_id, onclick: () => void this.adopt(c.contact_id, key, result, card()) }, `It is ${c.contact_name}’s new key`))),
      result);
  }

  /** The user says this key is one of `contactId`'s: it joins them (held until verified
   *  when they were verified), and what it sent is let in under their entry. */
  private async adopt(contactId: number, key: string, result: HTMLElement, card: HTMLElement): Promise<void> {
    try {
      result.textContent = await api.contactAddKey(contactId, key);
      card.classList.add('decided');
      // What the key sent now waits, held, and the words are about it: they are said
      // with it drawn, so its arrival does not take them away.
      await this.load();
      this.say(result.textContent, false);
      this.onChange();
    } catch (e) { this.failed(card, result, e); }
  }

  /** "Or it is someone you know": a stranger's key picked as a new key of a contact. */
  private pickPerson(key: string, result: HTMLElement, card: () => HTMLElement): HTMLElement | null {
    if (!this.people.length) return null;
    const who = h('select', { className: 'pick-person', 'aria-label': 'Which of your contacts this is' },
      h('option', { value: '' }, 'one of your contacts…'), ...this.people.map((p) => h('option', { value: String(p.id) }, p.name)));
    const go = h('button', { className: 'secondary', 'data-action': 'pick-person', disabled: true, onclick: () => void this.adopt(Number(who.value), key, result, card()) }, 'It is their new key');
    who.addEventListener('change', () => { go.disabled = !who.value; });
    return h('div', { className: 'name-it' }, h('span', {}, 'Or it is'), who, go,
      h('span', { className: 'muted small' }, 'Only if you know it is: check with them. It joins them, and if you verified them, what it sends waits until you verify it too.'));
  }
}

/** What a prompt is about: the same prompt however it reads now. */
function promptId(it: Prompt): string {
  switch (it.kind) {
    case 'unknown_sender': return `knock:${it.public_key}`;
    case 'held': return `held:${it.row_id}`;
    case 'held_ask': return `ask:${it.stream_id}`;
    case 'key_change': return `keys:${it.sender}`;
  }
}

/** Why a trusted agent's key change matters, and what checking does. */
export function keyChangeWarning(item: Extract<ConsentItem, { kind: 'key_change' }>): HTMLElement {
  const why = item.reason === 'invalid_signature' ? 'does not match the key you trusted under that name' : 'is not among the keys you trusted';
  // The key id is what the refused message said (a forger chooses it): shown as its words,
  // quoted and cut short, never as part of Gatehouse's own sentence.
  const named = item.key_id.includes('#') ? item.key_id.slice(item.key_id.indexOf('#')) : item.key_id;
  const shown = named.length > 40 ? `${named.slice(0, 40)}…` : named;
  return h('div', { className: 'key-change', role: 'alert' },
    h('p', {}, h('strong', {}, `⚠ The key it signed with ${why}.`)),
    // A signature may name no key id at all (its one kept key was meant, and did not match).
    item.key_id ? h('p', { className: 'claim small' }, `The message calls that key “${shown}” (its own words, not checked).`) : null,
    h('p', {}, 'Gatehouse takes new keys only from its own DID document, fetched when you ask: check it, and what it now holds replaces the keys you had. ',
      item.verified ? 'You verified this agent: after a change, nothing from it gets through until you verify it again with its owner.' : ''));
}

/** Who can be a person's key: a sender or an agent that speaks for someone (not an MCP
 *  server, one of the user's own agents or a company's site). */
function isPersonKey(source: string): boolean {
  return source === 'epp_sender' || source === 'uamp_agent' || source === 'a2a_agent';
}
