// Pieces every view shares: a list beside its detail, a button's action, a failure shown
// in place. A view describes its rows and what to load; these do the rest the same way.
import { errorText } from '../api';
import { h, replace } from '../dom';

type Child = Node | string | null | undefined | false;

/** A failure shown where the content would have been. */
export function failed(e: unknown): HTMLElement {
  return h('p', { className: 'error' }, errorText(e));
}

/** A button's handler: asks `question` first if there is one, runs `run`, then `after` (a
 *  reload); a failure is told in an alert, since the button may be gone once the view
 *  redraws. */
export function act(run: () => Promise<unknown>, after?: () => unknown, question?: string): () => Promise<void> {
  return async () => {
    if (question && !confirm(question)) return;
    try {
      await run();
      await after?.();
    } catch (e) {
      alert(errorText(e));
    }
  };
}

export interface ListSpec<T> {
  /** Where the list (or the empty text, or the failure) goes. */
  box: HTMLElement;
  /** The list's element id. */
  id: string;
  /** The row's data attribute (`data-<name>`) holding its key. */
  data: string;
  load: () => Promise<T[]>;
  key: (t: T) => string;
  row: (t: T) => Child[];
  empty: () => string;
  /** Shows the selected item's detail. */
  show: (key: string) => Promise<void>;
  /** With nothing selected yet, select the first row. */
  first?: boolean;
}

/** A list of rows from the latest load, the selected one marked and its detail shown; a
 *  click selects a row. */
export class ListDetail<T> {
  selected: string | null = null;

  constructor(private readonly spec: ListSpec<T>) {}

  async reload(): Promise<void> {
    const s = this.spec;
    try {
      const items = await s.load();
      if (!this.selected && s.first && items[0]) this.selected = s.key(items[0]);
      replace(s.box, items.length
        ? h('ul', { className: 'rows', id: s.id }, ...items.map((t) => this.li(t)))
        : h('p', { className: 'empty' }, s.empty()));
      if (this.selected) await s.show(this.selected);
    } catch (e) {
      replace(s.box, failed(e));
    }
  }

  private li(t: T): HTMLElement {
    const key = this.spec.key(t);
    return h('li', { className: `row${key === this.selected ? ' selected' : ''}`, [`data-${this.spec.data}`]: key, onclick: () => { this.selected = key; void this.reload(); } },
      ...this.spec.row(t));
  }
}

/** A button's handler that asks in place first (the question beside the button, with
 *  `yes` and Cancel): no dialog in front of the window, and the answer is one click. */
export function askFirst(question: string, yes: string, run: () => Promise<unknown>, after?: () => unknown): (e: Event) => void {
  return (e) => {
    const button = e.currentTarget as HTMLElement;
    const back = () => { box.remove(); button.hidden = false; };
    const box = h('span', { className: 'ask-first', role: 'group', 'aria-label': question },
      h('span', {}, question, ' '),
      h('button', { className: 'danger small confirm-yes', onclick: async () => {
        back();
        try {
          await run();
          await after?.();
        } catch (err) {
          alert(errorText(err));
        }
      } }, yes), ' ',
      h('button', { className: 'secondary small', onclick: () => { back(); button.focus(); } }, 'Cancel'));
    button.hidden = true;
    button.after(box);
    box.querySelector<HTMLElement>('.confirm-yes')?.focus();
  };
}
