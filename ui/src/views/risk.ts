// What in a message looks like an attempt to steer the user's AI, shown where the message
// is read: the exact words marked in the text (with why, on hover and in the list under
// it), each flag dismissable. Offsets are UTF-16, as JavaScript strings count them.
import { api, errorText, type Flag } from '../api';
import { h, replace } from '../dom';

export const kindWords: Record<Flag['kind'], string> = {
  override: 'Tries to override instructions',
  exfiltrate: 'Asks for data to be sent away',
  tool_call: 'Asks to run something',
  invisible: 'Invisible characters',
  mixed_script: 'Look-alike letters',
  base64: 'Encoded data',
  link: 'Link to an unknown host',
};

/** The text with the live (not dismissed) flags' spans marked; overlapping spans join the first. */
export function markedText(text: string, flags: Flag[]): (string | HTMLElement)[] {
  const live = flags.filter((f) => !f.dismissed).sort((a, b) => a.start - b.start || b.end - a.end);
  const out: (string | HTMLElement)[] = [];
  let at = 0;
  for (const f of live) {
    if (f.start < at || f.start >= text.length) continue;
    if (f.start > at) out.push(text.slice(at, f.start));
    const shown = f.kind === 'invisible' ? f.excerpt : text.slice(f.start, f.end);
    out.push(h('mark', { className: `risk risk-${f.kind}`, 'data-kind': f.kind, title: f.why }, shown));
    at = f.end;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** The message text with its flags, and the list of flags under it. */
export function riskText(tag: 'p' | 'blockquote', attrs: Record<string, unknown>, text: string, flags: Flag[], messageId: string | null,
  what = 'This message'): HTMLElement {
  const box = h('div', { className: 'risk-box' });
  const draw = (): void => {
    const live = flags.filter((f) => !f.dismissed);
    const dismissed = flags.length - live.length;
    replace(box,
      h(tag, { className: 'prompt', ...attrs }, ...markedText(text, flags)),
      live.length ? h('div', { className: 'risk-flags', role: 'note', 'aria-label': `Warnings about ${what.toLowerCase()}` },
        h('p', { className: 'risk-head' }, `⚠ ${what} has ${live.length === 1 ? 'something that looks' : `${live.length} things that look`} like an attempt to steer your AI:`),
        h('ul', {}, ...live.map((f) => h('li', { 'data-kind': f.kind, 'data-start': String(f.start) },
          h('strong', {}, `${kindWords[f.kind]}: `), f.why, ' ',
          messageId ? h('button', { className: 'link-button', 'data-dismiss': `${f.kind}:${f.start}`, onclick: async (e: Event) => {
            const b = e.currentTarget as HTMLButtonElement;
            try {
              await api.riskDismiss(messageId, f.kind, f.start);
              f.dismissed = true;
              draw();
            } catch (err) { b.textContent = errorText(err); }
          } }, 'Dismiss') : null)))) : null,
      dismissed ? h('p', { className: 'muted small risk-dismissed' }, `${dismissed} warning(s) dismissed.`) : null);
  };
  draw();
  return box;
}
