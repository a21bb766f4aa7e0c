import './style.css';
import { api, errorText, onInboxEvent, onOpenPrompt, onStatus, onTeamChanged, type AppInfo } from './api';
import { afterQuiet, coalesce } from './coalesce';
import { h, replace } from './dom';
import { floodText } from './format';
import { ConsentView } from './views/consent';
import { InboxView } from './views/inbox';
import { ActivityView, SettingsView } from './views/settings';
import { TrustView } from './views/trust';
import { GuardianView } from './views/guardian';
import { IntentView } from './views/intent';
import { MailView } from './views/mail';
import { UampView } from './views/uamp';
import { A2aView } from './views/a2a';
import { welcomeCard } from './views/welcome';
import { CONTACT_HISTORY } from './views/contacts';

type Tab = 'inbox' | 'consent' | 'trust' | 'uamp' | 'a2a' | 'mail' | 'intent' | 'guardian' | 'activity' | 'settings';

const app = document.getElementById('app')!;
const statusPill = h('span', { className: 'pill', id: 'inbox-status-pill' }, '…');
const pauseBtn = h('button', { className: 'secondary small', id: 'pause-toggle' }, 'Pause');
/** Shown once a flood brought more refusals or knocks than are kept per minute. */
const floodPill = h('span', { className: 'pill paused', id: 'flood-pill', hidden: true });
const waitingBadge = h('span', { className: 'count', id: 'waiting-count' });
const main = h('main', { id: 'content' });
/** The first run's welcome, above the views until the user says "Got it". */
const welcome = h('div', { id: 'welcome-slot' });
let info: AppInfo | null = null;
let tab: Tab = 'inbox';

const inbox = new InboxView();
const consent = new ConsentView(() => void refreshInfo());
const trust = new TrustView(() => void refreshInfo());
const settings = new SettingsView(() => refreshInfo());
const activity = new ActivityView();
const uamp = new UampView();
const a2a = new A2aView();
const mail = new MailView();
const intent = new IntentView();
const guardian = new GuardianView();

const tabs: [Tab, string][] = [['inbox', 'Inbox'], ['consent', 'Waiting for you'], ['trust', 'Trusted senders'], ['uamp', 'Agents (UAMP)'], ['a2a', 'Agents (A2A)'], ['mail', 'Tasks (MAIL)'], ['intent', 'Sites (IntentWeb)'], ['guardian', 'Guardian (ASOP)'], ['activity', 'Activity'], ['settings', 'Settings']];
const nav = h('nav', {}, ...tabs.map(([t, label]) =>
  h('button', { className: 'tab', id: `nav-${t}`, 'data-tab': t, onclick: () => void show(t, true) }, label, t === 'consent' ? waitingBadge : null)));

/** The tab's count: what waits at this gate and at the team gates this desktop decides for. */
function countWaiting(): void {
  const n = (info?.waiting ?? 0) + consent.team.count();
  waitingBadge.textContent = n ? String(n) : '';
}

async function refreshInfo(): Promise<void> {
  try {
    info = await api.appInfo();
    const st = info.status;
    statusPill.className = `pill ${st.error ? 'error' : st.running ? 'ok' : 'paused'}`;
    statusPill.textContent = st.error ? st.error : st.running ? `Listening on ${st.listening}` : 'Inbox paused';
    pauseBtn.textContent = st.running ? 'Pause inbox' : 'Resume inbox';
    countWaiting();
    floodPill.hidden = !floodText(info.unkept);
    floodPill.textContent = floodText(info.unkept);
    if (info.welcome && !welcome.firstChild) replace(welcome, welcomeCard(info, () => { replace(welcome); void refreshInfo(); }));
    else if (!info.welcome) replace(welcome);
  } catch (e) {
    statusPill.className = 'pill error';
    statusPill.textContent = errorText(e);
  }
}

async function show(t: Tab, fresh: boolean): Promise<void> {
  tab = t;
  for (const b of nav.querySelectorAll('.tab')) b.classList.toggle('active', (b as HTMLElement).dataset.tab === t);
  const view = { inbox, consent, trust, uamp, a2a, mail, intent, guardian, activity, settings }[t];
  if (main.firstChild !== view.el) replace(main, view.el);
  if (t !== 'mail') mail.leave();
  // Opened: its page; redrawn because something arrived: what is new, on top.
  if (t === 'inbox') await (fresh ? inbox.load(false) : inbox.patch());
  // Settings change only by the user's own hand: redrawing them on every arrival would
  // wipe a port or an executor being edited.
  else if (t === 'settings') { if (info && fresh) await settings.load(info); }
  else if (t === 'consent') await consent.load(fresh);
  else if (t === 'trust') await trust.load();
  else if (t === 'uamp') await uamp.load();
  // Nothing that arrives changes it; a redraw would wipe a token shown once.
  else if (t === 'a2a') { if (fresh) await a2a.load(); }
  else if (t === 'mail') await mail.load();
  else if (t === 'intent') await intent.load();
  else if (t === 'guardian') await guardian.load();
  else await activity.load();
}

pauseBtn.addEventListener('click', async () => {
  try {
    await api.inboxPause(!!info?.status.running);
  } catch (e) {
    alert(errorText(e));
  }
  await refreshInfo();
});

replace(app,
  h('header', {}, h('h1', {}, h('img', { src: './icon.png', alt: '', width: 28, height: 28 }), 'Gatehouse'), statusPill, floodPill, pauseBtn),
  nav, welcome, main);

await refreshInfo();
// The user may already have picked a tab while the first answer was on its way.
await show(tab, true);
// New messages refresh what is on screen (a burst: at most four times a second), and the
// counts once more when the burst is over: a flood's dropped requests are announced at
// most once a second, so the last ones settle here. No timer runs while nothing arrives.
const redraw = coalesce(async () => { await refreshInfo(); await show(tab, false); }, 250);
const settle = afterQuiet(refreshInfo, 2_000);
void onInboxEvent(() => { redraw(); settle(); });
void onStatus(() => void refreshInfo());
// A team gate said what waits there now: drawn at once, wherever the window is.
void onTeamChanged((t) => { consent.team.update(t); countWaiting(); });
// Read once at start: a gate's first word may have come before the window listened.
void consent.team.load().then(countWaiting);
// A contact's "Messages": the inbox, every key of theirs.
window.addEventListener(CONTACT_HISTORY, (e) => {
  const { id, name } = (e as CustomEvent<{ id: number; name: string }>).detail;
  inbox.fromContact(id, name);
  void show('inbox', true);
});
// A click on a prompt's notification opens the window on that prompt.
void onOpenPrompt(async (sender) => { await show('consent', true); consent.focusPrompt(sender); });
// Task logs dropped on the window are imported (and shown on the Tasks tab).
void import('@tauri-apps/api/webview').then(({ getCurrentWebview }) => getCurrentWebview().onDragDropEvent(async (e) => {
  if (e.payload.type !== 'drop') return;
  const logs = e.payload.paths.filter((p) => /\.(json|jsonl)$/i.test(p));
  if (!logs.length) return;
  await show('mail', true);
  for (const p of logs) await mail.importPath(p);
})).catch(() => {});
