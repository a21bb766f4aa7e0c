// Companies (IntentWeb): the IntentSites you talk to — what each can do, from its manifest
// (under People & agents) — and your conversations with them (threads in Conversations):
// what you asked, what they need (a checklist you fill), their answers (rendered safely),
// and the outcome.
import { api, asShape, errorText, type FlowType, type IwCapability, type IwManifest, type IwMessage, type IwSite, type IwVerdict, type IwView } from '../api';
import { h, Kept, refill, replace, sanitizedHtml } from '../dom';
import { fingerprint, when } from '../format';
import { act, failed } from './parts';
import { START, type Host, type Thread } from './conversations';

const FLOW_TEXT: Record<string, string> = {
  intent_request: 'your request',
  information_request: 'needs information',
  information_response: 'your answer',
  clarification_request: 'asks to clarify',
  execution_result: 'done',
  error: 'error',
};

// The store keeps these as the JSON Gatehouse checked; these are their shapes.
const manifestOf = (s: IwSite) => asShape<IwManifest>(s.manifest);
const verdictOf = (m: IwMessage) => asShape<IwVerdict | null>(m.verdict);
interface EnvelopeView { required_information?: string[]; explicability?: Record<string, unknown>[]; status?: string; external_id?: string }
const envelopeOf = (m: IwMessage) => asShape<EnvelopeView>(m.envelope);

function verdictBadge(m: IwMessage, pinned: string | null): HTMLElement | null {
  const verdict = verdictOf(m);
  if (m.direction === 'out') return h('span', { className: 'badge verdict-signed', title: 'signed with your key' }, 'signed by you');
  if (!m.accepted) return h('span', { className: 'badge verdict-refused' }, 'refused');
  switch (verdict?.kind) {
    case 'verified': return h('span', { className: 'badge verdict-verified', title: verdict.kid }, '✓ verified');
    case 'new_key': return verdict.kid === pinned
      ? h('span', { className: 'badge verdict-verified', title: verdict.kid }, 'first contact — key pinned since')
      : h('span', { className: 'badge verdict-new', title: verdict.kid }, 'first contact — not pinned');
    case 'unsigned': return h('span', { className: 'badge verdict-new' }, 'unsigned');
    case 'first_scheme': return h('span', { className: 'badge verdict-new', title: `${verdict.kid}: an older signature that covers the message only` }, 'message signed, the rest not');
    default: return null;
  }
}

export class IntentView {
  private detailBox = h('div', { className: 'detail', id: 'iw-detail' }, h('p', { className: 'muted' }, 'Choose a conversation.'));
  private composerSite = h('select', { id: 'iw-site' });
  private composerCap = h('select', { id: 'iw-capability' });
  private composerText = h('textarea', { id: 'iw-intent', rows: 2, cols: 60, placeholder: 'What would you like to do? e.g. “Book a table for 2 tomorrow at 7pm”' });
  private composerMsg = h('p', { role: 'status', id: 'iw-start-msg' });
  private sites: IwSite[] = [];
  // Built once (or once per conversation step): the view is redrawn whenever anything
  // arrives, and what is being typed or chosen must survive that.
  private addForm = this.addCard();
  private composerForm = this.composer();
  private replies = new Kept();
  private siteList = h('div');
  /** The companies you talk to: under People & agents. */
  readonly sitesEl = h('section', { id: 'iw-sites', 'aria-label': 'Companies' }, this.addForm, this.siteList);
  readonly label = 'IntentWeb';
  private nobody = h('p', { className: 'muted', id: 'iw-nobody' }, 'No company yet: add one under People & agents (Add someone → A company’s web address).');

  constructor(private host: Host) {}

  /** Where a conversation with a company starts (shown once there is one to ask). */
  startParts(): HTMLElement[] {
    return [this.composerFor(), this.nobody];
  }

  async threads(q: string): Promise<Thread[]> {
    const needle = q.toLowerCase();
    return (await api.iwConversations()).map((c): Thread => ({
      kind: 'site', id: c.interaction_id, who: c.company ?? c.origin, at: c.updated_at, preview: c.initial,
      state: c.state === 'completed' ? `Done${c.external_id ? ` — ${c.external_id}` : ''}` : c.state === 'failed' ? 'Failed' : 'In progress',
      stateClass: `iw-${c.state}`,
    })).filter((t) => !needle || `${t.who} ${t.preview}`.toLowerCase().includes(needle));
  }

  async open(id: string): Promise<HTMLElement> {
    await this.show(id);
    return this.detailBox;
  }

  /** Puts the cursor where a company's address goes ("Add someone"). */
  focusAdd(): void {
    this.sitesEl.scrollIntoView({ block: 'nearest' });
    this.sitesEl.querySelector<HTMLInputElement>('#iw-origin')?.focus();
  }

  async prepare(): Promise<void> {
    await this.loadSites();
  }

  /** The companies, read again (their cards, and the composer's choice). */
  async loadSites(): Promise<void> {
    try {
      this.sites = await api.iwSites();
      replace(this.siteList, ...this.sites.map((s) => this.siteCard(s)));
      this.composerFor();
    } catch (e) {
      replace(this.siteList, failed(e));
    }
  }

  private addCard(): HTMLElement {
    const origin = h('input', { id: 'iw-origin', type: 'text', placeholder: 'https://company.example', size: 34 });
    const msg = h('p', { role: 'status', id: 'iw-add-msg' });
    const add = h('button', { className: 'primary', id: 'iw-add', type: 'submit' }, 'Look up');
    return h('form', { className: 'card inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      add.disabled = true;
      msg.className = '';
      msg.textContent = 'Fetching its intent manifest…';
      try {
        const s = await api.iwSiteAdd(origin.value);
        msg.className = 'notice';
        msg.textContent = `Added ${s.company}.`;
        origin.value = '';
        await this.loadSites();
      } catch (err) { msg.className = 'error'; msg.textContent = errorText(err); }
      add.disabled = false;
    } }, h('h3', {}, 'Add a company by its address'), origin, add, msg);
  }

  private siteCard(s: IwSite): HTMLElement {
    const m = manifestOf(s);
    const loc = m.location && typeof m.location === 'object' ? Object.entries(m.location as Record<string, unknown>).map(([k, v]) => `${k.replace(/_/g, ' ')}: ${String(v)}`) : m.location ? [String(m.location)] : [];
    return h('div', { className: 'card site', 'data-origin': s.origin },
      h('div', { className: 'row-top' },
        h('h3', {}, m.company),
        h('span', { className: 'mono muted small' }, s.origin),
        s.site_key ? h('span', { className: 'badge verdict-verified', title: s.site_key }, `key pinned ${fingerprint(s.site_key)}`) : h('span', { className: 'badge verdict-new' }, 'key not pinned yet'),
        h('button', { className: 'secondary small', onclick: act(() => api.iwSiteAdd(s.origin), () => this.loadSites()) }, 'Refresh'),
        h('button', { className: 'secondary small', onclick: act(() => api.iwSiteRemove(s.origin), () => this.loadSites(), `Remove ${m.company}? Conversations with it are kept.`) }, 'Remove')),
      m.about ? h('p', {}, m.about) : null,
      loc.length ? h('p', { className: 'muted small' }, loc.join(' · ')) : null,
      h('p', { className: 'muted small' }, `Manifest updated ${m.last_updated}; fetched ${when(s.fetched_at)}`),
      h('div', { className: 'capabilities' }, ...m.capabilities.map((c) => this.capabilityCard(s, c))));
  }

  private capabilityCard(s: IwSite, c: IwCapability): HTMLElement {
    const list = (title: string, items: string[], cls = '') => items.length ? h('div', { className: cls }, h('h5', {}, title), h('ul', {}, ...items.map((i) => h('li', {}, i)))) : null;
    const hours = Object.entries(c.operating_hours);
    return h('div', { className: 'capability', 'data-intent': c.intent },
      h('h4', {}, c.intent),
      h('p', {}, c.description),
      c.examples.length ? h('div', { className: 'examples' }, ...c.examples.map((ex) => h('button', { className: 'chip', type: 'button', onclick: () => this.prefill(s.origin, c.intent, ex) }, ex))) : null,
      list('Needs', c.requires),
      list('Conditions', c.constraints),
      list('Notes', c.notes),
      hours.length ? h('dl', { className: 'hours' }, ...hours.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])) : null);
  }

  private prefill(origin: string, capability: string, text: string): void {
    // The composer is in Conversations: the window goes there first.
    window.dispatchEvent(new CustomEvent(START, { detail: 'start-company' }));
    this.composerSite.value = origin;
    this.fillCapabilities();
    this.composerCap.value = capability;
    this.composerText.value = text;
    this.composerText.scrollIntoView({ block: 'center' });
    this.composerText.focus();
  }

  private fillCapabilities(): void {
    const site = this.sites.find((s) => s.origin === this.composerSite.value);
    refill(this.composerCap, [['', '(let the site work it out)'], ...(site ? manifestOf(site).capabilities : []).map((c): [string, string] => [c.intent, c.intent])]);
  }

  /** The composer, shown once there is a company to ask; the chosen company and
   *  capability stay chosen. */
  private composerFor(): HTMLElement {
    refill(this.composerSite, this.sites.map((s) => [s.origin, s.company]));
    this.fillCapabilities();
    this.composerForm.hidden = !this.sites.length;
    this.nobody.hidden = !!this.sites.length;
    return this.composerForm;
  }

  private composer(): HTMLElement {
    // Another company: its capabilities, none chosen yet.
    this.composerSite.onchange = () => { this.composerCap.value = ''; this.fillCapabilities(); };
    const start = h('button', { className: 'primary', id: 'iw-start', type: 'submit' }, 'Start');
    return h('form', { className: 'card', id: 'iw-composer', onsubmit: async (e: Event) => {
      e.preventDefault();
      start.disabled = true;
      this.composerMsg.className = '';
      this.composerMsg.textContent = 'Sending your signed request…';
      try {
        const t = await api.iwStart({ origin: this.composerSite.value, capability: this.composerCap.value || null, message: this.composerText.value });
        this.composerMsg.textContent = '';
        this.composerText.value = '';
        this.host.select('site', t.conversation.interaction_id);
        await this.host.reload();
      } catch (err) { this.composerMsg.className = 'error'; this.composerMsg.textContent = errorText(err); }
      start.disabled = false;
    } },
      h('h3', {}, 'Ask a company'),
      h('div', { className: 'actions' }, this.composerSite, this.composerCap),
      h('div', { className: 'actions' }, this.composerText, start),
      this.composerMsg);
  }

  private async show(id: string): Promise<void> {
    try {
      const v = await api.iwConversation(id);
      const c = v.conversation;
      replace(this.detailBox,
        h('h2', {}, v.company ?? c.origin),
        h('p', { className: 'muted small mono' }, `${c.interaction_id}${c.capability ? ` · ${c.capability}` : ''}`),
        c.state === 'completed' ? h('div', { className: 'receipt-card', id: 'iw-outcome' },
          h('div', { className: 'big' }, c.external_id ?? 'Done'), h('div', {}, `Status: ${c.status ?? 'completed'}`)) : null,
        c.state === 'failed' ? h('div', { className: 'error-card', id: 'iw-outcome' }, `Ended with an error${c.status ? ` (${c.status})` : ''}.`) : null,
        h('ol', { className: 'iw-thread', id: 'iw-thread' }, ...v.messages.map((m) => this.message(v, m))),
        // Kept while the conversation has not moved on, so half-filled answers survive.
        c.state === 'open' ? this.replies.get(`${c.interaction_id}:${v.messages.length}`, () => this.replyBox(v)) : null);
      this.replies.sweep();
    } catch (e) {
      replace(this.detailBox, failed(e));
    }
  }

  private message(v: IwView, m: IwMessage): HTMLElement {
    const body = m.direction === 'in' && m.html != null ? sanitizedHtml('md', m.html) : h('div', { className: 'prompt' }, m.message);
    // Links never navigate the window; each opens in the browser only if the user agrees.
    body.addEventListener('click', (e) => {
      const a = (e.target as HTMLElement).closest('a');
      if (!a) return;
      e.preventDefault();
      const href = a.getAttribute('href');
      if (href && confirm(`Open ${href} in your browser?`)) void api.iwOpenLink(href).catch((err) => alert(errorText(err)));
    });
    const verdict = verdictOf(m);
    const kid = verdict?.kind === 'new_key' ? verdict.kid : null;
    const env = envelopeOf(m);
    const expl = env.explicability ?? [];
    return h('li', { className: `iw-msg ${m.direction}${m.accepted ? '' : ' refused'}`, 'data-flow': m.flow_type },
      h('div', { className: 'mail-head' },
        h('span', { className: 'msg-type' }, FLOW_TEXT[m.flow_type] ?? m.flow_type),
        verdictBadge(m, v.pinned_key),
        h('time', {}, when(m.at))),
      m.warning && !(kid && v.pinned_key === kid) ? h('p', { className: m.accepted ? 'warning small' : 'error small iw-warning' }, m.warning) : null,
      kid && v.pinned_key !== kid ? h('button', { className: 'secondary small iw-pin', onclick: act(() => api.iwPin(v.conversation.origin, kid), async () => { await this.loadSites(); await this.host.reload(); }) }, `Pin this key (${fingerprint(kid)})`) : null,
      body,
      // Fields the site did not sign are its claims: shown as such, never as the outcome.
      env.status && m.direction === 'in' ? h('p', { className: 'muted small iw-status' },
        `${verdict?.kind === 'verified' || verdict?.kind === 'new_key' ? '' : 'The site claims (not signed): '}status: ${env.status}${env.external_id ? ` · ${env.external_id}` : ''}`) : null,
      expl.length ? h('details', { className: 'explicability' }, h('summary', {}, 'Why (explicability)'),
        h('pre', { className: 'json' }, JSON.stringify(expl, null, 2))) : null);
  }

  /** What the site still needs, as a checklist; or a free answer. */
  private replyBox(v: IwView): HTMLElement {
    const last = [...v.messages].reverse().find((m) => m.direction === 'in' && m.accepted);
    const needs = last?.flow_type === 'information_request' ? envelopeOf(last).required_information ?? [] : [];
    const msg = h('p', { role: 'status', id: 'iw-reply-msg' });
    const send = async (text: string, flow: FlowType | null) => {
      msg.className = '';
      msg.textContent = 'Sending…';
      try {
        await api.iwReply({ interaction_id: v.conversation.interaction_id, message: text, flow_type: flow });
        msg.textContent = '';
        await this.host.reload();
      } catch (err) { msg.className = 'error'; msg.textContent = errorText(err); }
    };
    const inputs = needs.map((n, i) => h('input', { type: 'text', className: 'iw-need', 'data-need': n, id: `iw-need-${i}`, size: 28 }));
    const checklist = needs.length ? h('form', { className: 'card checklist', id: 'iw-checklist', onsubmit: async (e: Event) => {
      e.preventDefault();
      const lines = needs.map((n, i) => [n, inputs[i].value.trim()] as const).filter(([, val]) => val);
      if (!lines.length) { msg.className = 'error'; msg.textContent = 'Fill at least one item.'; return; }
      await send(lines.map(([n, val]) => `${n}: ${val}`).join('\n'), 'information_response');
    } },
      h('h4', {}, 'They still need'),
      ...needs.map((n, i) => h('label', { className: 'need' }, h('span', {}, n), inputs[i])),
      h('button', { className: 'primary', id: 'iw-send-answers', type: 'submit' }, 'Send answers')) : null;
    const free = h('input', { type: 'text', id: 'iw-free', size: 50, placeholder: last?.flow_type === 'clarification_request' ? 'Your clarification' : 'Your answer' });
    return h('div', { className: 'iw-reply' }, checklist,
      h('form', { className: 'inline', onsubmit: async (e: Event) => { e.preventDefault(); if (free.value.trim()) await send(free.value, 'information_response'); } },
        free, h('button', { className: 'secondary', id: 'iw-send-free', type: 'submit' }, 'Answer')),
      msg);
  }
}
