// How long an "allow" lasts, chosen on the prompt, and what a grant for good would have
// let in from the sender's past.
import type { Covered, Lasting } from '../api';
import { h } from '../dom';
import { when } from '../format';

export type LastingChoice = Lasting['for'];

/** The words on the allow button for a choice. */
export function allowLabel(choice: LastingChoice, scope: string, date: string): string {
  switch (choice) {
    case 'always': return `Always allow for “${scope}”`;
    case 'hour': return `Allow “${scope}” for 1 hour`;
    case 'tonight': return `Allow “${scope}” until tonight`;
    case 'until': return date ? `Allow “${scope}” until ${date}` : `Allow “${scope}” until a date…`;
  }
}

/** The words on the button that lets a server in (the same lengths, said of the server). */
export function letInLabel(choice: LastingChoice, _scope: string, date: string): string {
  switch (choice) {
    case 'always': return 'Let it in';
    case 'hour': return 'Let it in for 1 hour';
    case 'tonight': return 'Let it in until tonight';
    case 'until': return date ? `Let it in until ${date}` : 'Let it in until a date…';
  }
}

/** The choice as the command takes it; a date choice without a date is not one yet. */
export function lasting(choice: LastingChoice, date: string): Lasting | null {
  if (choice === 'until') return date ? { for: 'until', date } : null;
  return { for: choice } as Lasting;
}

/** A select of how long, a date field shown for "until a date", and the button's label
 *  following them. */
export function lastingPicker(scope: string, button: HTMLButtonElement, label = allowLabel): { el: HTMLElement; value: () => Lasting | null } {
  const select = h('select', { className: 'grant-for', 'aria-label': 'How long to allow' },
    h('option', { value: 'always' }, 'for good'),
    h('option', { value: 'hour' }, 'for 1 hour'),
    h('option', { value: 'tonight' }, 'until tonight'),
    h('option', { value: 'until' }, 'until a date…'));
  const date = h('input', { type: 'date', className: 'grant-date', 'aria-label': 'Allow until this date', hidden: true });
  const sync = () => {
    const choice = select.value as LastingChoice;
    date.hidden = choice !== 'until';
    button.textContent = label(choice, scope, date.value);
  };
  select.addEventListener('change', sync);
  date.addEventListener('input', sync);
  sync();
  return { el: h('span', { className: 'grant-picker' }, select, date), value: () => lasting(select.value as LastingChoice, date.value) };
}

const OUTCOME: Record<string, string> = { refused: 'refused (not trusted then)', held: 'held for you', denied: 'denied by you' };

/** What an "always allow" would have let in: the sender's earlier messages in the scope. */
export function coveredList(scope: string, covered: Covered[], total: number, max: number): HTMLElement | null {
  if (!total) return null;
  const count = total > max ? `more than ${max}` : String(total);
  return h('details', { className: 'covered' },
    h('summary', {}, `Allowing “${scope}” for good would also have let in ${count} earlier message${total === 1 ? '' : 's'} from this sender`),
    h('ul', {}, ...covered.map((c) => h('li', {},
      h('span', { className: 'muted small' }, `${when(c.received_at)} · ${OUTCOME[c.outcome] ?? c.outcome}: `),
      c.excerpt ?? '(its text could not be read)'))),
    total > covered.length ? h('p', { className: 'muted small' }, `The newest ${covered.length} are shown; all are in the inbox.`) : null);
}
