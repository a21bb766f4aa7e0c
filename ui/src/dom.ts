// The only way the UI builds elements. Text always goes in as text nodes, so untrusted
// content (prompts, names, metadata) can never become markup or script.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined | null>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === 'className') {
      el.className = String(v);
    } else if (k === 'value' && 'value' in el) {
      (el as HTMLInputElement).value = String(v);
    } else if (k === 'checked' && 'checked' in el) {
      (el as HTMLInputElement).checked = Boolean(v);
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** Replaces el's children. A control being typed in that is among the new children
 *  again (a kept form, see Kept) gets its focus and caret back: taking it out of the
 *  document to put it back would otherwise blur it mid-word. */
export function replace(el: Element, ...children: Child[]): void {
  const active = document.activeElement;
  const typing = active instanceof HTMLElement && active !== el && el.contains(active) ? active : null;
  const caret = typing ? caretOf(typing) : null;
  clear(el);
  append(el, ...children);
  if (typing && typing.isConnected && document.activeElement !== typing) {
    typing.focus({ preventScroll: true });
    if (caret) { try { (typing as HTMLInputElement).setSelectionRange(caret[0], caret[1]); } catch { /* a control without a caret */ } }
  }
}

/** Fills a select with new options, keeping the user's choice while it is still offered. */
export function refill(select: HTMLSelectElement, options: [value: string, label: string][]): void {
  const chosen = select.value;
  replace(select, ...options.map(([value, label]) => h('option', { value }, label)));
  if (options.some(([value]) => value === chosen)) select.value = chosen;
}

function caretOf(el: HTMLElement): [number, number] | null {
  if (!(el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement)) return null;
  try {
    return el.selectionStart === null || el.selectionEnd === null ? null : [el.selectionStart, el.selectionEnd];
  } catch { return null; }
}

/** Parts of a view that outlive its redraws. Views redraw whenever anything arrives; a
 *  form rebuilt then loses what is being typed into it, and an answer still on its way
 *  lands in the discarded copy. A view asks for such parts by key while it draws; the
 *  same key gives back the same element, and sweep() forgets the keys the last drawing
 *  did not ask for (a consent card decided, a conversation that moved on). */
export class Kept {
  private parts = new Map<string, HTMLElement>();
  private asked = new Set<string>();

  get<T extends HTMLElement>(key: string, build: () => T): T {
    this.asked.add(key);
    let part = this.parts.get(key);
    if (!part) { part = build(); this.parts.set(key, part); }
    return part as T;
  }

  /** Call after a complete drawing. */
  sweep(): void {
    for (const k of [...this.parts.keys()]) if (!this.asked.has(k)) this.parts.delete(k);
    this.asked.clear();
  }
}

/** The one exception to text-only: HTML the core rendered from a site's markdown and
 *  sanitized (pulldown-cmark, then ammonia: no scripts, event handlers, styles or images;
 *  raw HTML arrives escaped). The CSP forbids inline script besides. */
export function sanitizedHtml(className: string, html: string): HTMLDivElement {
  const d = document.createElement('div');
  d.className = className;
  d.innerHTML = html;
  return d;
}
