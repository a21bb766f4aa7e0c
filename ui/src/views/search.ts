// Search everything from one box (Ctrl+K): people (by name or key), messages (the inbox's
// full-text search) and conversations of every kind. Choosing a result opens it where it
// lives; the keyboard alone is enough (arrows, Enter, Escape).
import { api, errorText, type ContactView } from '../api';
import { h, replace } from '../dom';
import { flagText, senderLabel, when } from '../format';
import type { Kind, Thread } from './conversations';

/** Results shown per group. */
const PER_GROUP = 5;

export interface SearchTargets {
  /** Everything a contact sent (the inbox, every key of theirs). */
  person(c: ContactView): void;
  message(receiptId: string): void;
  thread(kind: Kind, id: string): void;
  threads(q: string): Promise<Thread[]>;
  labelOf(kind: Kind): string;
}

export class SearchBox {
  private input = h('input', { type: 'search', id: 'search-box', placeholder: 'Search people, messages, conversations…', 'aria-label': 'Search everything', autocomplete: 'off' });
  private results = h('ul', { id: 'search-results', role: 'listbox', 'aria-label': 'Results' });
  private status = h('p', { className: 'muted small', role: 'status', id: 'search-status' });
  readonly el = h('dialog', { id: 'search', 'aria-label': 'Search' }, this.input, this.status, this.results);
  private contacts: ContactView[] = [];
  private turn = 0;

  constructor(private to: SearchTargets) {
    let t: number | undefined;
    this.input.addEventListener('input', () => { clearTimeout(t); t = window.setTimeout(() => void this.run(), 150); });
    this.el.addEventListener('keydown', (e) => this.key(e));
    // Ctrl+K (⌘K on a Mac) from anywhere in the window.
    window.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'k') { e.preventDefault(); void this.open(); }
    });
  }

  async open(): Promise<void> {
    if (!this.el.open) this.el.showModal();
    this.input.select();
    try { this.contacts = await api.contactsList(); } catch { this.contacts = []; }
    if (this.input.value.trim()) await this.run();
  }

  private close(): void {
    this.el.close();
  }

  private async run(): Promise<void> {
    const q = this.input.value.trim();
    const turn = ++this.turn;
    if (!q) { replace(this.results); this.status.textContent = ''; return; }
    this.status.textContent = 'Searching…';
    const needle = q.toLowerCase();
    const people = this.contacts.filter((c) => c.name.toLowerCase().includes(needle) || c.keys.some((k) => k.key.toLowerCase().includes(needle))).slice(0, PER_GROUP);
    const [messages, threads] = await Promise.all([
      api.inboxList({ search: q, limit: PER_GROUP }).catch((e) => e),
      this.to.threads(q).catch((e) => e),
    ]);
    if (turn !== this.turn) return;
    const rows: HTMLElement[] = [];
    const group = (title: string) => rows.push(h('li', { className: 'search-group', role: 'presentation' }, title));
    if (people.length) group('People & agents');
    for (const c of people) {
      rows.push(this.option('person', `Everything ${c.name} sent`, `${c.keys.length} key${c.keys.length === 1 ? '' : 's'}${c.verified ? ' · verified' : ''}`, () => this.to.person(c)));
    }
    if (Array.isArray(messages) && messages.length) group('Messages');
    if (Array.isArray(messages)) {
      for (const m of messages) rows.push(this.option('message', `${senderLabel(m.sender_name, m.sender ?? '')}: ${m.prompt_preview ?? m.message ?? ''}`, m.flags ? `${flagText(m.flags)} · ${when(m.received_at)}` : when(m.received_at), () => this.to.message(m.receipt_id)));
    }
    const found = Array.isArray(threads) ? (threads as Thread[]).slice(0, PER_GROUP) : [];
    if (found.length) group('Conversations');
    for (const t of found) rows.push(this.option('thread', `${t.who}: ${t.preview}`, `${this.to.labelOf(t.kind)} · ${t.state} · ${when(t.at)}`, () => this.to.thread(t.kind, t.id)));
    const broken = [messages, threads].find((r) => !Array.isArray(r));
    replace(this.results, ...rows);
    this.status.textContent = broken ? `Part of the search failed: ${errorText(broken)}` : rows.length ? '' : `Nothing matches “${q}”.`;
    this.mark(this.results.querySelector<HTMLElement>('[role=option]'));
  }

  private option(kind: string, text: string, hint: string, go: () => void): HTMLElement {
    return h('li', { role: 'option', className: 'search-result', 'data-result': kind, tabindex: -1, onclick: () => { this.close(); go(); } },
      h('span', { className: 'search-text' }, text), h('span', { className: 'muted small' }, hint));
  }

  private mark(el: HTMLElement | null): void {
    for (const o of this.results.querySelectorAll('[role=option]')) o.setAttribute('aria-selected', String(o === el));
    el?.scrollIntoView({ block: 'nearest' });
  }

  private key(e: KeyboardEvent): void {
    const options = [...this.results.querySelectorAll<HTMLElement>('[role=option]')];
    const at = options.findIndex((o) => o.getAttribute('aria-selected') === 'true');
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const next = e.key === 'ArrowDown' ? Math.min(at + 1, options.length - 1) : Math.max(at - 1, 0);
      this.mark(options[next] ?? null);
    } else if (e.key === 'Enter' && at >= 0) {
      e.preventDefault();
      options[at].click();
    } else if (e.key === 'Escape') {
      // One press closes (a search field would spend the first on clearing itself); what
      // was typed stays for the next Ctrl+K.
      e.preventDefault();
      this.close();
    }
  }
}
