// The inbox: every envelope and every rejection, newest first, with filters, full-text
// search and keyset paging; a detail panel; the conversation thread.
import { api, asShape, errorText, onExecProgress, type ConversationMessage, type Detail, type ExecProgress, type Declared, type ExecStatus, type InboxFilter_Deserialize, type InboxItem, type Reply } from '../api';
import { h, replace } from '../dom';
import { failed } from './parts';
import { arrivalFields } from './email';
import { riskText } from './risk';
import { delegationLine, describeAbsentStep, describeCode, describeStep, execLabel, flagText, keyGroups, localTime, senderLabel, transportLabel, when } from '../format';

// Three windowfuls at a time; "Load more" fetches the next (each row costs the webview
// memory, and a first screen does not need a hundred).
const PAGE = 50;

export class InboxView {
  readonly el = h('section', { className: 'inbox', id: 'view-inbox' });
  private list = h('ul', { className: 'rows', id: 'inbox-rows' });
  private detail = h('aside', { className: 'detail', id: 'inbox-detail' }, h('p', { className: 'muted' }, 'Select a message to see everything about it.'));
  private more = h('button', { className: 'secondary', id: 'inbox-more', onclick: () => void this.load(true) }, 'Load more');
  private filter: InboxFilter_Deserialize = {};
  private items: InboxItem[] = [];
  private selected: string | null = null;
  // Each click starts a fetch; only the latest may draw, or a slow answer to an earlier
  // click would cover the view the user asked for last.
  private drawing = 0;
  // The same for the list: a page asked for later wins over an older page or patch. A
  // patch (what arrived) never cancels a page, and trims nothing while older rows are on
  // their way (they attach after the last row shown).
  private listing = 0;
  private appending = false;
  private showing: 'detail' | 'conversation' = 'detail';
  private search = h('input', { type: 'search', id: 'inbox-search', placeholder: 'Search prompts…', 'aria-label': 'Search prompts' });
  private status = h('select', { id: 'inbox-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'All'), h('option', { value: 'accepted' }, 'Accepted'), h('option', { value: 'rejected' }, 'Rejected'),
    h('option', { value: 'held' }, 'Waiting for you'), h('option', { value: 'failed' }, 'Executor failed'));
  private transport = h('select', { id: 'inbox-transport', 'aria-label': 'How it arrived' },
    h('option', { value: '' }, 'Any way'), h('option', { value: 'http' }, 'Internet (HTTP)'), h('option', { value: 'folder' }, 'Folder'), h('option', { value: 'email' }, 'Email'), h('option', { value: 'a2a' }, 'An A2A agent'), h('option', { value: 'uamp' }, 'A UAMP agent'), h('option', { value: 'consent' }, 'Let in by you'));
  private scope = h('input', { type: 'text', id: 'inbox-scope', placeholder: 'Scope', 'aria-label': 'Scope', size: 10 });
  private sender = h('input', { type: 'text', id: 'inbox-sender', placeholder: 'Sender key', 'aria-label': 'Sender key', size: 14 });
  /** A contact whose whole history (every key of theirs) is shown, from Contacts. */
  private contact: { id: number; name: string } | null = null;
  private contactChip = h('span', { className: 'chip', id: 'inbox-contact', hidden: true });
  private apply = (): void => {};

  constructor() {
    const apply = () => {
      this.filter = {
        search: this.search.value || null, status: this.status.value || null, transport: this.transport.value || null,
        scope: this.scope.value.trim() || null, sender: this.sender.value.trim() || null, contact: this.contact?.id ?? null,
      };
      this.contactChip.hidden = !this.contact;
      replace(this.contactChip, this.contact ? `From ${this.contact.name}, all their keys ` : null,
        this.contact ? h('button', { className: 'link', 'aria-label': 'Show every sender', onclick: () => { this.contact = null; apply(); } }, '✕') : null);
      void this.load(false);
    };
    this.apply = apply;
    let t: number | undefined;
    this.search.addEventListener('input', () => { clearTimeout(t); t = window.setTimeout(apply, 200); });
    for (const el of [this.status, this.transport]) el.addEventListener('change', apply);
    for (const el of [this.scope, this.sender]) el.addEventListener('change', apply);
    void onExecProgress((p) => this.progress(p));
    this.el.append(
      h('div', { className: 'filters' }, this.search, this.status, this.transport, this.scope, this.sender, this.contactChip),
      h('div', { className: 'split' }, h('div', { className: 'list' }, this.list, this.more), this.detail),
    );
  }

  /** Everything from a contact, whichever of their keys sent it. */
  fromContact(id: number, name: string): void {
    this.contact = { id, name };
    this.sender.value = '';
    this.apply();
  }

  async load(append: boolean): Promise<void> {
    const before = append && this.items.length ? this.items[this.items.length - 1].seq : null;
    const turn = ++this.listing;
    this.appending = append;
    try {
      const page = await api.inboxList({ ...this.filter, before_seq: before, limit: PAGE });
      if (turn !== this.listing) return;
      this.items = append ? this.items.concat(page) : page;
      if (!append) replace(this.list);
      // Another filter (a search, Ctrl+K's person): a detail the list no longer holds goes.
      if (!append && this.selected && !page.some((i) => i.receipt_id === this.selected)) this.unselect();
      for (const item of page) this.list.append(this.row(item));
      if (!this.items.length) this.list.append(h('li', { className: 'empty' }, 'Nothing here yet. Messages appear as soon as they arrive.'));
      this.more.hidden = page.length < PAGE;
    } catch (e) {
      replace(this.list, h('li', { className: 'error' }, errorText(e)));
    } finally {
      if (turn === this.listing) this.appending = false;
    }
  }

  /** Something arrived: only what is newer than the top row is read and put on top, the
   *  list kept to the length it had (a burst of arrivals redraws a few rows, not the
   *  page). More new rows than a page, or nothing shown yet: the page is read again. */
  async patch(): Promise<void> {
    const newest = this.items[0]?.seq;
    if (newest === undefined) return this.load(false);
    const turn = this.listing;
    try {
      const fresh = await api.inboxList({ ...this.filter, before_seq: null, after_seq: newest, limit: PAGE });
      if (turn !== this.listing || !fresh.length) return;
      if (fresh.length >= PAGE) return this.load(false);
      const keep = Math.max(PAGE, this.items.length);
      this.list.querySelector('.empty')?.remove();
      // A knock let in is the message it became: one row per arrival.
      const became = new Set(fresh.map((i) => i.story.after_knock).filter(Boolean));
      if (became.size) {
        for (const r of this.list.querySelectorAll<HTMLElement>('.row')) if (became.has(r.dataset.receipt ?? '')) r.remove();
        this.items = this.items.filter((i) => !became.has(i.receipt_id));
      }
      this.list.prepend(...fresh.map((item) => this.row(item)));
      this.items = fresh.concat(this.items);
      if (this.items.length > keep && !this.appending) {
        const gone = new Set(this.items.splice(keep).map((i) => i.receipt_id));
        for (const r of this.list.querySelectorAll<HTMLElement>('.row')) if (gone.has(r.dataset.receipt ?? '')) r.remove();
        this.more.hidden = false;
      }
    } catch (e) {
      if (turn === this.listing) replace(this.list, h('li', { className: 'error' }, errorText(e)));
    }
  }

  /** A decision was made (here or anywhere): the rows on the first page say what became
   *  of each knock now (waits, denied, blocked, or gone: it is the message it became).
   *  What is newer is for `patch`; rows past the first page stay as they are. */
  async restory(): Promise<void> {
    if (!this.items.length) return;
    const turn = this.listing;
    try {
      const top = await api.inboxList({ ...this.filter, before_seq: null, limit: PAGE });
      if (turn !== this.listing) return;
      const now = new Map(top.map((i) => [i.receipt_id, i]));
      const floor = top.length < PAGE ? -Infinity : top[top.length - 1].seq;
      const rows = new Map([...this.list.querySelectorAll<HTMLElement>('.row')].map((r) => [r.dataset.receipt, r]));
      this.items = this.items.flatMap((item) => {
        const row = rows.get(item.receipt_id);
        const fresh = now.get(item.receipt_id);
        if (!fresh) {
          if (item.seq < floor) return [item];
          row?.remove();
          return [];
        }
        if (JSON.stringify(fresh) !== JSON.stringify(item)) row?.replaceWith(this.row(fresh));
        return [fresh];
      });
    } catch { /* the next arrival or opening the tab reads the list again */ }
  }

  private row(item: InboxItem): HTMLElement {
    const who = senderLabel(item.sender_name, item.sender);
    const badge = storyBadge(item) ?? (item.status === 'accepted' ? (execLabel(item.exec_status) || 'Accepted') : describeCode(item.code));
    const li = h('li', {
      className: `row ${item.status}${item.exec_status === 'held' || item.story.waiting ? ' held' : ''}${item.flags ? ' flagged' : ''}${this.selected === item.receipt_id ? ' selected' : ''}`,
      'data-receipt': item.receipt_id, tabindex: 0,
      onclick: () => void this.show(item.receipt_id),
      onkeydown: (e: Event) => { if ((e as KeyboardEvent).key === 'Enter') void this.show(item.receipt_id); },
    },
      h('div', { className: 'row-top' },
        h('span', { className: `badge ${item.status}` }, badge),
        h('span', { className: 'who' }, item.sender ? delegationLine(who, item.on_behalf_of_name, item.on_behalf_of) : 'Unreadable input'),
        item.scope ? h('span', { className: 'scope' }, item.scope) : null,
        item.payload_type ? h('span', { className: 'ptype' }, item.payload_type) : null,
        item.flags ? h('span', { className: 'flag-mark' }, flagText(item.flags)) : null,
        item.story.knocked_at ? h('span', { className: 'story muted small' }, item.story.decided === 'allow_once' ? 'allowed once by you' : 'let in by you') : null,
        h('time', { datetime: item.received_at, title: item.received_at }, when(item.received_at))),
      h('div', { className: 'preview' }, item.prompt_preview ?? item.message ?? ''),
    );
    return li;
  }

  /** A running executor: its answer grows in the open detail; its end updates the row
   *  and, when it is the message on screen, the whole detail (result, draft reply). */
  private progress(p: ExecProgress): void {
    const live = this.detail.dataset.row === String(p.envelope_row) ? this.detail.querySelector<HTMLElement>('#detail-live') : null;
    if (p.kind !== 'finished') this.setRowStatus(p.envelope_row, 'running');
    if (p.kind !== 'finished' && live) {
      live.textContent = p.kind === 'partial' ? p.text : p.note;
      // It was drawn queued; words mean it runs now.
      const exec = this.detail.querySelector<HTMLElement>('#detail-exec');
      if (exec?.dataset.executor) exec.textContent = `${exec.dataset.executor} — ${execLabel('running')}`;
    } else if (p.kind === 'finished') {
      this.setRowStatus(p.envelope_row, p.status);
      // Also when its detail is still on its way (it may have been read before the end).
      const selectedRow = this.items.find((i) => i.receipt_id === this.selected)?.envelope_row;
      if (this.selected && this.showing === 'detail' && (live || selectedRow === p.envelope_row)) void this.show(this.selected);
    }
  }

  private setRowStatus(envelopeRow: number, status: ExecStatus): void {
    for (const item of this.items) {
      if (item.envelope_row !== envelopeRow || item.exec_status === status) continue;
      item.exec_status = status;
      this.list.querySelector(`.row[data-receipt="${CSS.escape(item.receipt_id)}"]`)?.replaceWith(this.row(item));
    }
  }

  private unselect(): void {
    this.selected = null;
    this.drawing++;
    delete this.detail.dataset.row;
    replace(this.detail, h('p', { className: 'muted' }, 'Select a message to see everything about it.'));
  }

  async show(receiptId: string): Promise<void> {
    this.selected = receiptId;
    for (const r of this.list.querySelectorAll('.row')) r.classList.toggle('selected', (r as HTMLElement).dataset.receipt === receiptId);
    const turn = ++this.drawing;
    this.showing = 'detail';
    try {
      const d = await api.inboxDetail(receiptId);
      if (d.envelope) this.setRowStatus(d.envelope.id, d.envelope.exec_status);
      if (turn === this.drawing) renderDetail(this.detail, d, (c) => void this.showConversation(c), () => void this.show(receiptId));
    } catch (e) {
      if (turn === this.drawing) replace(this.detail, failed(e));
    }
  }

  private async showConversation(conversationId: string): Promise<void> {
    const turn = ++this.drawing;
    this.showing = 'conversation';
    try {
      const msgs = await api.conversation(conversationId);
      if (turn !== this.drawing) return;
      delete this.detail.dataset.row;
      replace(this.detail, ...conversationParts(conversationId, msgs, '← Back to the message', () => this.selected && void this.show(this.selected)));
    } catch (e) {
      if (turn === this.drawing) replace(this.detail, failed(e));
    }
  }
}

/** A message's whole conversation, oldest first, with a way back to the message. */
export function conversationParts(conversationId: string, msgs: ConversationMessage[], back: string, onBack: () => void): HTMLElement[] {
  return [
    h('button', { className: 'link', onclick: onBack }, back),
    h('h2', {}, 'Conversation'),
    h('p', { className: 'muted mono' }, conversationId),
    h('ol', { className: 'thread', id: 'conversation-thread' }, ...msgs.map((m) =>
      h('li', { className: `msg depth-${Math.min(m.depth, 6)}` },
        h('div', { className: 'row-top' },
          h('span', { className: 'who' }, delegationLine(senderLabel(m.sender_name, m.envelope.sender), m.on_behalf_of_name, m.envelope.on_behalf_of)),
          m.envelope.payload_type ? h('span', { className: 'ptype' }, m.envelope.payload_type) : null,
          h('time', {}, when(m.envelope.received_at))),
        h('p', { className: 'prompt' }, m.envelope.prompt),
        m.envelope.transport === 'reply' ? replyReceipt(m.envelope.exec_result) : null))),
  ];
}

function field(label: string, value: string | null | undefined, mono = false, id?: string, data: Record<string, string> = {}): HTMLElement[] {
  // A key or an id breaks between groups, never mid-group.
  const dd = h('dd', { className: mono ? 'mono key' : '', id }, ...(mono && value ? keyGroups(value) : [value ?? '—']));
  Object.assign(dd.dataset, data);
  return [h('dt', {}, label), dd];
}

/** A time in this computer's local time, the exact instant kept in its tooltip. */
function timeField(label: string, iso: string | null | undefined): HTMLElement[] {
  if (!iso) return field(label, null);
  return [h('dt', {}, label), h('dd', {}, h('time', { datetime: iso, title: iso }, localTime(iso)))];
}

async function copy(text: string, button: HTMLButtonElement): Promise<void> {
  try {
    const { writeText } = await import('@tauri-apps/plugin-clipboard-manager');
    await writeText(text);
    button.textContent = 'Copied';
  } catch (e) {
    button.textContent = `Copy failed: ${errorText(e)}`;
  }
}

export function renderDetail(el: HTMLElement, d: Detail, openConversation: (id: string) => void, refresh: () => void): void {
  const env = d.envelope;
  if (env) el.dataset.row = String(env.id); else delete el.dataset.row;
  const working = env?.exec_status === 'queued' || env?.exec_status === 'running';
  const r = d.receipt;
  const who = senderLabel(d.sender_name, r.sender);
  const copyBtn = h('button', { className: 'secondary', id: 'detail-copy-raw' }, 'Copy raw JSON');
  copyBtn.addEventListener('click', () => void copy(d.raw ?? '', copyBtn));
  const story = storyText(d);
  replace(el,
    h('h2', {}, storyHeading(d) ?? (r.status === 'accepted' ? 'Accepted' : `Rejected: ${describeCode(r.code)}`)),
    story ? h('p', { className: 'story', id: 'detail-story' }, story) : null,
    // The receipt's words are what the sender was told when it came, not what is now.
    r.message ? h('p', { className: 'reason', id: 'detail-reason' }, r.status === 'rejected' ? `The sender was told: “${r.message}”` : r.message) : null,
    h('h3', {}, 'Message'),
    riskText('p', { id: 'detail-prompt' }, env?.prompt ?? r.prompt ?? '(no readable prompt)', d.risk, env?.envelope_id ?? r.envelope_id),
    working ? h('div', { className: 'card live' },
      h('h3', {}, `${env!.executor === 'model' ? 'The model is answering' : 'The executor is at work'}…`),
      h('div', { className: 'prompt', id: 'detail-live', 'aria-live': 'polite' }, env!.exec_status === 'queued' ? 'Queued behind earlier messages.' : 'Waiting for the first words…')) : null,
    answerOf(env) !== null ? h('div', { className: 'card answer', id: 'detail-answer' },
      h('h3', {}, env!.executor === 'model' ? 'The model’s answer' : 'The answer'),
      h('div', { className: 'prompt' }, answerOf(env)!)) : null,
    h('dl', {},
      ...field('From', r.sender ? delegationLine(who, d.on_behalf_of_name, env?.on_behalf_of) : null),
      ...field('Sender key', r.sender, true),
      ...field('Scope', r.scope),
      ...field('Type', env?.payload_type),
      ...field('Arrived by', transportLabel(r.transport)),
      ...(d.email ? arrivalFields(d.email).flatMap(([k, v]) => field(k, v, false, `detail-email-${k.toLowerCase().replace(/[^a-z]+/g, '-')}`)) : []),
      ...timeField('Received', r.received_at),
      ...field('Envelope id', r.envelope_id, true),
      ...(env ? [
        ...timeField('Sent at', env.timestamp), ...timeField('Expires', env.expires_at),
        ...field('Conversation', env.conversation_id, true), ...field('In reply to', env.in_reply_to, true),
        ...field('Signed form', env.signed_form === 'reference' ? 'reference (sorted, ASCII-escaped)' : 'an accepted variant'),
        ...field('Executor', `${env.executor} — ${execLabel(env.exec_status) || env.exec_status}`, false, 'detail-exec', { executor: env.executor }),
      ] : [])),
    d.extras ? extrasCard(d.extras, 'detail-extras') : null,
    env?.conversation_id ? h('button', { className: 'link', id: 'detail-conversation', onclick: () => openConversation(env.conversation_id!) }, 'Show the whole conversation') : null,
    h('h3', {}, 'Verification'),
    h('ol', { className: 'steps', id: 'detail-steps' }, ...d.steps.map((s) =>
      h('li', { className: `step ${s.state}` }, h('span', { className: 'mark' }, s.state === 'passed' ? '✓' : s.state === 'failed' ? '✗' : s.state === 'absent' ? '–' : '·'), s.state === 'absent' ? describeAbsentStep(s.name) : describeStep(s.name),
        s.state === 'failed' ? h('strong', {}, ' — failed here') : null))),
    env?.exec_result ? h('details', { open: true }, h('summary', {}, 'Executor result'), h('pre', { className: 'json' }, JSON.stringify(env.exec_result, null, 2))) : null,
    env?.exec_status === 'failed' ? retryButton(env.id, refresh) : null,
    h('details', {}, h('summary', {}, 'Receipt sent to the sender'), h('pre', { className: 'json' }, JSON.stringify(r.receipt, null, 2))),
    d.raw ? h('details', {}, h('summary', {}, 'Raw JSON', r.body_truncated ? ' (truncated)' : ''), h('pre', { className: 'json', id: 'detail-raw' }, d.raw), copyBtn) : null,
  );
  if (env) void showReplies(el, env.id, env.conversation_id ? null : () => openConversation(env.envelope_id));
}

/** An envelope's EPP v1.1 fields, in plain words and as claims (none is signed by the sender): what it says it will use, who attests to it, payment fields that do nothing. */
export function extrasCard(x: Declared, id?: string): HTMLElement {
  // Consent cards show one each, so the parts are named by class; only the detail's has an id.
  return h('div', { className: 'card extras', ...(id ? { id } : {}) },
    h('h3', {}, 'What the envelope says about itself'),
    // EPP v1.1's fields are outside the sender's signature: claims, whoever added them.
    h('p', { className: 'muted small extras-unsigned' }, 'Not signed by the sender: anyone who passed the envelope on could have added, changed or removed this.'),
    x.capabilities.length ? h('div', {}, h('p', {}, 'It says it will ask your AI to:'),
      h('ul', { className: 'extras-capabilities' }, ...x.capabilities.map((c) => h('li', {}, c)))) : null,
    x.integrity ? h('p', { className: 'extras-integrity' }, `Its content matched the ${x.integrity} hash it came with.`) : null,
    x.provenance.length ? h('div', {}, h('p', {}, 'Attestations (each signed by its own key; a key you have not verified vouches for nothing):'),
      h('ol', { className: 'extras-provenance' }, ...x.provenance.map((a) => h('li', {},
        'key ', h('span', { className: 'mono', title: a.identity }, `${a.identity.slice(0, 16)}…`), ' says it is the ', h('strong', {}, `“${a.role}”`),
        a.statement ? ` and writes “${a.statement}”` : '')))) : null,
    x.inert.length ? h('div', { className: 'extras-inert' }, h('p', { className: 'muted' }, 'Payment fields, shown only: Gatehouse never pays or acts on them.'),
      h('ul', {}, ...x.inert.map((i) => h('li', {}, `${i.field}: ${i.summary || i.json}`)))) : null);
}

/** What the sender's inbox said to an answer sent back (its receipt). */
function replyReceipt(receipt: unknown): HTMLElement {
  const r = (receipt ?? {}) as { status?: string; code?: string; receipt_id?: string };
  const text = r.status === 'accepted' ? 'Their inbox accepted it' : `Their inbox answered: ${r.status ?? 'nothing readable'}${r.code ? ` — ${describeCode(r.code)}` : ''}`;
  return h('p', { className: `muted small reply-receipt ${r.status === 'accepted' ? 'ok' : 'bad'}`, title: r.receipt_id ? `Receipt ${r.receipt_id}` : '' }, text, r.receipt_id ? h('span', { className: 'mono' }, ` · receipt ${r.receipt_id}`) : null);
}

/** The text an executor answered with (a model's, a peer's), shown above the details. */
function answerOf(env: Detail['envelope']): string | null {
  if (env?.exec_status !== 'succeeded') return null;
  const a = (env.exec_result as { answer?: unknown } | null)?.answer;
  return typeof a === 'string' ? a : null;
}

/** A failed executor (an unreachable model, a refused swarm token) can be run again. */
function retryButton(envelopeRow: number, refresh: () => void): HTMLElement {
  const msg = h('span', { role: 'status', className: 'muted small' });
  const b = h('button', { className: 'secondary', id: 'detail-retry', onclick: async () => {
    b.disabled = true;
    // Queued again: redraw, so the answer can be followed as it is written.
    try { await api.executorRetry(envelopeRow); refresh(); } catch (e) { msg.textContent = ` ${errorText(e)}`; b.disabled = false; }
  } }, 'Run the executor again');
  return h('p', {}, b, msg);
}

/** The answers going back to the sender: drafts to review (and edit), sent ones with the
 *  receipt their inbox gave, failed ones to send again. */
async function showReplies(el: HTMLElement, envelopeRow: number, openThread: (() => void) | null): Promise<void> {
  const box = h('div', { id: 'detail-replies' });
  el.appendChild(box);
  const draw = async () => {
    let list: Reply[];
    try { list = await api.repliesFor(envelopeRow); } catch (e) { replace(box, failed(e)); return; }
    if (!list.length) { replace(box); return; }
    // A message that started no conversation starts one when answered: show it.
    const thread = openThread && list.some((r) => r.state === 'sent')
      ? h('button', { className: 'link', id: 'detail-conversation', onclick: openThread }, 'Show the whole conversation') : null;
    replace(box, h('h3', {}, 'Answer to the sender'), thread, ...list.map((r) => {
      const text = h('textarea', { className: 'reply-text', rows: 4, cols: 60 }, r.text);
      const msg = h('p', { role: 'status', className: r.error ? 'error' : '' }, r.error ?? '');
      const send = h('button', { className: 'primary reply-send', onclick: async () => {
        send.disabled = true;
        msg.className = '';
        msg.textContent = 'Signing and sending…';
        try { await api.replySend(r.id, text.value); } catch (e) { msg.className = 'error'; msg.textContent = errorText(e); }
        await draw();
      } }, r.state === 'failed' ? 'Send again' : 'Approve and send');
      return h('div', { className: `card reply reply-${r.state}`, 'data-reply': r.id },
        h('p', { className: 'muted small' }, r.state === 'sent'
          ? r.endpoint.startsWith('mailto:')
            ? `Mailed to ${r.endpoint.slice('mailto:'.length)}, signed by you; their receipt comes back by mail`
            : `Sent to ${r.endpoint}, signed by you — their inbox answered: ${asShape<{ status?: string } | null>(r.receipt)?.status ?? '?'}`
          : r.state === 'failed' ? `Not delivered to ${r.endpoint}.` : `A draft: read it, change it if you like, and approve it to send it to ${r.endpoint}.`),
        r.state === 'sent' ? h('div', { className: 'prompt' }, r.text) : text,
        r.state === 'sent' ? null : h('div', { className: 'actions' }, send),
        msg);
    }));
  };
  await draw();
}

/** What became of an arrival, in the words its row and its detail both use: it waits,
 *  or the user denied or blocked it (a blocked sender's later messages read as blocked,
 *  whatever code their door answered with). */
function storyWords(status: string, story: InboxItem['story']): string | null {
  if (story.waiting) return 'Waits for you';
  if (status !== 'rejected') return null;
  if (story.decided === 'deny') return 'Denied by you';
  if (story.decided === 'block' || story.outcome === 'blocked') return 'Blocked by you';
  return null;
}

function storyBadge(item: InboxItem): string | null {
  return storyWords(item.status, item.story);
}

function storyHeading(d: Detail): string | null {
  // A knock let in (its own detail, opened from elsewhere) is the message it became.
  return d.delivered_as && !d.story.waiting ? 'Let in by you' : storyWords(d.receipt.status, d.story);
}

/** What happened to it, in a sentence, when a decision of the user's is part of it. */
function storyText(d: Detail): string | null {
  const s = d.story;
  const at = (t: string | null | undefined) => (t ? when(t) : '');
  const how = s.decided === 'allow_once' ? 'allowed it once' : 'let its sender in for this scope';
  // A knock is a stranger's, or that of a sender the user trusts for other scopes (its
  // detail then has its name): said by what is known, never assumed.
  if (s.waiting) return d.sender_name
    ? 'It asks about a scope you have not allowed its sender. It waits for you under Waiting for you.'
    : 'It knocked: its sender is not in your trust registry yet. It waits for you under Waiting for you.';
  if (s.knocked_at) return `It knocked ${at(s.knocked_at)}; you ${how} ${at(s.decided_at)}.`;
  if (d.delivered_as) return `You ${how} ${at(s.decided_at)}: it is in your inbox as the message it became.`;
  if (s.decided === 'deny') return `You denied it ${at(s.decided_at)}. If its sender writes again, you are asked again.`;
  if (s.decided === 'block') return `You blocked its sender ${at(s.decided_at)}: nothing from it reaches you or asks again.`;
  return null;
}
