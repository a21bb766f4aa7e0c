// Quiet hours: when requests are collected instead of announced, set in Settings and said
// above what waits while they are on.
import { api, errorText, type QuietState } from '../api';
import { h } from '../dom';
import { failed } from './parts';

/** The Settings card. */
export async function quietCard(): Promise<HTMLElement> {
  let st: QuietState;
  try { st = await api.quietHoursGet(); } catch (e) { return failed(e); }
  const msg = h('p', { role: 'status', id: 'quiet-msg' });
  const on = h('input', { type: 'checkbox', id: 'quiet-on', checked: !!st.hours });
  const from = h('input', { type: 'time', id: 'quiet-from', value: st.hours?.from ?? '22:00', 'aria-label': 'Quiet from' });
  const to = h('input', { type: 'time', id: 'quiet-to', value: st.hours?.to ?? '07:00', 'aria-label': 'Quiet until' });
  return h('form', { className: 'card', id: 'quiet-hours', onsubmit: async (e: Event) => {
    e.preventDefault();
    try {
      const saved = await api.quietHoursSet(on.checked ? { from: from.value, to: to.value } : null);
      msg.textContent = saved.hours
        ? `Saved: from ${saved.hours.from} to ${saved.hours.to}, requests wait without notifications; one summary follows.${saved.active ? ' Quiet hours are on now.' : ''}`
        : 'Saved: every request is announced as it arrives.';
    } catch (err) { msg.textContent = errorText(err); }
  } },
    h('h3', {}, 'Quiet hours'),
    h('p', { className: 'muted small' }, 'Requests that arrive in quiet hours wait in “Waiting for you” without a notification; when quiet hours end, one notification says how many waited. Nothing is allowed or refused because of them.'),
    h('label', {}, on, ' Collect requests quietly'),
    h('label', {}, h('span', {}, 'From'), from),
    h('label', {}, h('span', {}, 'Until'), to),
    h('div', { className: 'actions' }, h('button', { className: 'secondary', type: 'submit', id: 'quiet-save' }, 'Save quiet hours')),
    msg);
}

/** Above what waits: quiet hours are on, and how many requests they have collected. */
export function quietBanner(st: QuietState | null): HTMLElement | null {
  if (!st?.active || !st.hours) return null;
  const n = st.digest.count;
  return h('p', { className: 'notice quiet', id: 'quiet-banner', role: 'note' },
    `Quiet hours until ${st.hours.to}: requests wait here without notifications`,
    n ? ` (${n} so far).` : '.');
}
