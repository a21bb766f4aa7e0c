// The first run: what Gatehouse is in two sentences, the address and key to share, a
// sample envelope the user sends themself (it knocks like any stranger, so the whole flow
// is seen once), and where the watched folder is. Shown until the user says "Got it".
import { api, errorText, type AppInfo } from '../api';
import { h, replace } from '../dom';
import { keyGroups } from '../format';

export function welcomeCard(info: AppInfo, onDone: () => void): HTMLElement {
  const msg = h('p', { role: 'status', id: 'welcome-msg', className: 'small' });
  const qr = h('div', { className: 'welcome-qr' });
  const sample = h('button', { className: 'primary', id: 'welcome-sample', onclick: async () => {
    sample.disabled = true;
    msg.textContent = 'Sending…';
    try { msg.textContent = await api.firstRunSample(); } catch (e) { msg.textContent = errorText(e); sample.disabled = false; }
  } }, 'Send myself a sample message');
  const showQr = h('button', { className: 'secondary small', id: 'welcome-qr', onclick: async () => {
    try {
      const svg = await api.identityQr();
      // The SVG is made by Gatehouse from its own key; an <img> keeps it inert.
      replace(qr, h('img', { src: `data:image/svg+xml;base64,${btoa(svg)}`, alt: 'QR code of your key', width: 160, height: 160 }));
    } catch (e) { msg.textContent = errorText(e); }
  } }, 'Show as QR code');
  const done = h('button', { className: 'secondary', id: 'welcome-done', onclick: async () => {
    try { await api.firstRunFinish(); onDone(); } catch (e) { msg.textContent = errorText(e); }
  } }, 'Got it');
  return h('section', { className: 'card welcome', id: 'welcome', 'aria-labelledby': 'welcome-title' },
    h('h2', { id: 'welcome-title' }, 'Welcome to Gatehouse'),
    h('p', {}, 'Gatehouse is your own gate for messages from AI agents: it checks the signature on every message and keeps a list of who may reach your AI, and for what. Anything new waits for you to decide before it gets through.'),
    h('dl', { className: 'welcome-facts' },
      h('dt', {}, 'Your address'), h('dd', { className: 'mono', id: 'welcome-address' }, info.status.listening ?? 'not listening yet'),
      h('dt', {}, 'Your key'), h('dd', {}, h('span', { className: 'mono', id: 'welcome-key' }, ...keyGroups(info.public_key)), ' ', showQr, qr),
      h('dt', {}, 'Watched folder'), h('dd', { className: 'mono', id: 'welcome-folder' }, info.settings.watch_dir)),
    h('p', { className: 'muted small' }, 'Give senders your address and key. Envelope files dropped into the watched folder are read too.'),
    h('div', { className: 'actions' }, sample, done),
    msg);
}
