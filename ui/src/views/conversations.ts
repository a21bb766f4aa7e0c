// Conversations: every exchange with a counterpart as one thread, newest first, whatever
// carried it — tasks with swarms (MAIL), talks with companies (IntentWeb), asks to and
// from agents (UAMP streams) and tasks A2A agents sent — read in one reader. Each kind
// lists its threads and draws one; starting one begins from what the user wants to do.
import { h, replace } from '../dom';
import { failed } from './parts';
import { proto } from './sendto';
import { when } from '../format';

/** Asks the window to open Conversations with one starter shown (its button's id). */
export const START = 'gatehouse:start';

export type Kind = 'task' | 'site' | 'stream' | 'a2a';

/** One thread as the list shows it. */
export interface Thread {
  kind: Kind;
  id: string;
  /** Who the other side is (a name the user gave, or what they call themselves). */
  who: string;
  preview: string;
  state: string;
  stateClass: string;
  at: string;
}

/** A kind of conversation: its threads (matching `q`, if any) and its reader. */
export interface ThreadSource {
  readonly label: string;
  /** Reads again what its starter needs (the swarms, peers or companies to choose from). */
  prepare?(): Promise<void>;
  threads(q: string): Promise<Thread[]>;
  /** Draws the thread into the source's own reader element, and returns it. */
  open(id: string): Promise<HTMLElement>;
}

/** What a source may ask of the view: select a thread (one it just started) and redraw. */
export interface Host {
  select(kind: Kind, id: string): void;
  reload(): Promise<void>;
}

/** Threads shown at most per kind (each source reads its newest). */
const PER_KIND = 100;

export class ConversationsView implements Host {
  readonly el = h('section', { className: 'conversations', id: 'view-conversations' });
  private listBox = h('div', { className: 'list', id: 'conversation-threads' });
  private reader = h('div', { className: 'reader', id: 'conversation-reader' }, h('div', { className: 'detail' }, h('p', { className: 'muted' }, 'Choose a conversation to read it.')));
  private startBox = h('div', { id: 'conversation-start' });
  private search = h('input', { type: 'search', id: 'conversation-search', placeholder: 'Search conversations…', 'aria-label': 'Search conversations' });
  private kindSel = h('select', { id: 'conversation-kind', 'aria-label': 'Kind' },
    h('option', { value: '' }, 'Every kind'), h('option', { value: 'task' }, 'Tasks with swarms'), h('option', { value: 'site' }, 'Companies'),
    h('option', { value: 'stream' }, 'Asks to and from agents'), h('option', { value: 'a2a' }, 'Tasks agents sent you'));
  private selected: string | null = null;
  private sources = new Map<Kind, ThreadSource>();
  private drawing = 0;

  /** `starters`: what the user can begin here (button text, and the parts it shows). */
  constructor(private starters: [string, string, () => HTMLElement[]][]) {
    let t: number | undefined;
    this.search.addEventListener('input', () => { clearTimeout(t); t = window.setTimeout(() => void this.reload(), 200); });
    this.kindSel.addEventListener('change', () => void this.reload());
    this.el.append(
      h('div', { className: 'heading' }, h('h2', {}, 'Conversations'), h('div', { className: 'actions' },
        ...starters.map(([id, label, parts]) => h('button', { className: 'secondary', id, 'aria-expanded': 'false', onclick: () => this.start(id, parts) }, label)))),
      this.startBox,
      h('div', { className: 'filters' }, this.search, this.kindSel),
      h('div', { className: 'split' }, this.listBox, this.reader));
  }

  add(kind: Kind, source: ThreadSource): void {
    this.sources.set(kind, source);
  }

  /** Shows what one starter needs, or hides it when it is open already. */
  private start(id: string, parts: () => HTMLElement[]): void {
    const open = this.startBox.dataset.open === id ? null : id;
    for (const [b] of this.starters) this.el.querySelector(`#${b}`)?.setAttribute('aria-expanded', String(b === open));
    if (!open) { replace(this.startBox); delete this.startBox.dataset.open; return; }
    this.startBox.dataset.open = id;
    replace(this.startBox, ...parts());
    this.startBox.querySelector<HTMLElement>('input:not([hidden]), textarea, select')?.focus();
  }

  /** Opens a starter by its button id (from elsewhere in the window). */
  open(id: string): void {
    const s = this.starters.find(([i]) => i === id);
    if (s && this.startBox.dataset.open !== id) this.start(id, s[2]);
  }

  select(kind: Kind, id: string): void {
    this.selected = `${kind}:${id}`;
  }

  async load(): Promise<void> {
    await Promise.all([...this.sources.values()].map((s) => s.prepare?.()));
    await this.reload();
  }

  /** Threads of every kind (or one) matching `q`, newest first; a kind that could not be
   *  read is given back beside them. */
  async find(q: string, only: Kind | '' = ''): Promise<{ threads: Thread[]; broken: unknown }> {
    const kinds = [...this.sources.entries()].filter(([k]) => !only || k === only);
    const lists = await Promise.all(kinds.map(async ([, s]) => { try { return await s.threads(q); } catch (e) { return e; } }));
    const threads = lists.flatMap((l) => (Array.isArray(l) ? (l as Thread[]).slice(0, PER_KIND) : []));
    threads.sort((a, b) => b.at.localeCompare(a.at));
    return { threads, broken: lists.find((l) => !Array.isArray(l)) };
  }

  /** A kind's small label. */
  labelOf(kind: Kind): string {
    return this.sources.get(kind)?.label ?? kind;
  }

  async reload(): Promise<void> {
    const q = this.search.value.trim();
    const only = this.kindSel.value as Kind | '';
    const { threads, broken } = await this.find(q, only);
    replace(this.listBox,
      broken ? failed(broken) : null,
      threads.length ? h('ul', { className: 'rows', id: 'conversation-list' }, ...threads.map((t) => this.row(t)))
        : h('p', { className: 'empty' }, q || only ? 'No conversation matches.' : 'No conversations yet. Start one above, or wait for an agent to ask.'));
    if (this.selected) await this.show(this.selected);
  }

  private row(t: Thread): HTMLElement {
    const key = `${t.kind}:${t.id}`;
    const pick = () => { this.selected = key; for (const r of this.listBox.querySelectorAll<HTMLElement>('.row')) r.classList.toggle('selected', r.dataset.thread === key); void this.show(key); };
    return h('li', { className: `row${key === this.selected ? ' selected' : ''}`, 'data-thread': key, 'data-kind': t.kind, tabindex: 0, onclick: pick,
      onkeydown: (e: Event) => { if ((e as KeyboardEvent).key === 'Enter') pick(); } },
      h('div', { className: 'row-top' },
        h('span', { className: 'who' }, t.who),
        h('span', { className: `badge ${t.stateClass}` }, t.state),
        proto(this.labelOf(t.kind)),
        h('time', { datetime: t.at, title: t.at }, when(t.at))),
      h('div', { className: 'preview' }, t.preview));
  }

  private async show(key: string): Promise<void> {
    const at = key.indexOf(':');
    const source = this.sources.get(key.slice(0, at) as Kind);
    if (!source) return;
    const turn = ++this.drawing;
    try {
      const el = await source.open(key.slice(at + 1));
      if (turn === this.drawing && this.reader.firstChild !== el) replace(this.reader, el);
    } catch (e) {
      if (turn === this.drawing) replace(this.reader, failed(e));
    }
  }
}
