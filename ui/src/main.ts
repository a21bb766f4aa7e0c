import './style.css';
import { api, errorText, onInboxEvent, onOpenPrompt, onStatus, onTeamChanged, onWaitingChanged, type AppInfo } from './api';
import { afterQuiet, coalesce } from './coalesce';
import { h, replace } from './dom';
import { floodText } from './format';
import { ConsentView } from './views/consent';
import { InboxView } from './views/inbox';
import { SettingsView } from './views/settings';
import { ActivityView } from './views/activity';
import { PeopleView } from './views/people';
import { START } from './views/conversations';
import { threads } from './views/threads';
import { GuardianView } from './views/guardian';
import { SearchBox } from './views/search';
import { welcomeCard } from './views/welcome';
import { CONTACT_HISTORY } from './views/contacts';

type Tab = 'inbox' | 'consent' | 'people' | 'conversations' | 'agents' | 'activity' | 'settings';

const app = document.getElementById('app')!;
const statusPill = h('span', { className: 'pill', id: 'inbox-status-pill' }, '…');
const pauseBtn = h('button', { className: 'secondary small', id: 'pause-toggle' }, 'Pause');
/** Shown once a flood brought more refusals or knocks than are kept per minute. */
const floodPill = h('span', { className: 'pill paused', id: 'flood-pill', hidden: true });
const waitingBadge = h('span', { className: 'count', id: 'waiting-count' });
const main = h('main', { id: 'content' });
/** The first run's welcome, above the inbox until the user says "Got it". */
const welcome = h('div', { id: 'welcome-slot' });
let info: AppInfo | null = null;
let tab: Tab = 'inbox';

const inbox = new InboxView();
const consent = new ConsentView(() => void refreshInfo());
const settings = new SettingsView(() => refreshInfo());
const activity = new ActivityView();
// Conversations, whatever carried them: each kind lists its threads and draws one.
const { conversations, mail, intent } = threads();
const people = new PeopleView(() => void refreshInfo(), intent);
const agents = new GuardianView();

const tabs: [Tab, string][] = [['inbox', 'Inbox'], ['consent', 'Waiting for you'], ['people', 'People & agents'], ['conversations', 'Conversations'], ['agents', 'Your agents'], ['activity', 'Activity'], ['settings', 'Settings']];
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
  const view = { inbox, consent, people, conversations, agents, activity, settings }[t];
  if (main.firstChild !== view.el) replace(main, view.el);
  // The welcome belongs to the (empty) inbox: a prompt or a setting gets the whole window.
  welcome.hidden = t !== 'inbox';
  if (t !== 'conversations') mail.leave();
  // Opened: its page; redrawn because something arrived: what is new, on top.
  if (t === 'inbox') await (fresh ? inbox.load(false) : inbox.patch());
  // Settings change only by the user's own hand: redrawing them on every arrival would
  // wipe a port or an executor being edited.
  else if (t === 'settings') { if (info && fresh) await settings.load(info); else await settings.refreshLists(); }
  else if (t === 'consent') await consent.load(fresh);
  else if (t === 'people') await people.load(fresh);
  else if (t === 'conversations') await (fresh ? conversations.load() : conversations.reload());
  else if (t === 'agents') await agents.load();
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

// One box for people, messages and conversations (Ctrl+K).
const search = new SearchBox({
  person: (c) => { inbox.fromContact(c.id, c.name); void show('inbox', true); },
  message: (id) => void show('inbox', true).then(() => inbox.show(id)),
  thread: (kind, id) => { conversations.select(kind, id); void show('conversations', true); },
  threads: async (q) => (await conversations.find(q)).threads,
  labelOf: (kind) => conversations.labelOf(kind),
});
const searchBtn = h('button', { className: 'secondary small', id: 'search-open', 'aria-keyshortcuts': 'Control+K', onclick: () => void search.open() }, 'Search ', h('kbd', {}, 'Ctrl+K'));

// The header and the tabs (with what waits) stay in view however far a view scrolls.
replace(app,
  h('div', { className: 'top' },
    h('header', {}, h('h1', {}, h('img', { src: './icon.png', alt: '', width: 28, height: 28 }), 'Gatehouse'), searchBtn, statusPill, floodPill, pauseBtn),
    nav),
  welcome, main, search.el);

await refreshInfo();
// The user may already have picked a tab while the first answer was on its way.
await show(tab, true);
// New messages refresh what is on screen (a burst: at most four times a second), and the
// counts once more when the burst is over: a flood's dropped requests are announced at
// most once a second, so the last ones settle here. No timer runs while nothing arrives.
const redraw = coalesce(async () => { await refreshInfo(); await show(tab, false); }, 250);
const settle = afterQuiet(refreshInfo, 2_000);
void onInboxEvent(() => { redraw(); settle(); });
// A decision made elsewhere (the CLI, a phone) takes its prompt away here too.
void onWaitingChanged(() => { if (tab === 'inbox') void inbox.restory(); redraw(); settle(); });
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
// A starter asked for from elsewhere (a company's example, on its card): Conversations, with it open.
window.addEventListener(START, (e) => {
  void show('conversations', true);
  conversations.open((e as CustomEvent<string>).detail);
});
// Task logs dropped on the window are imported (and shown in Conversations).
void import('@tauri-apps/api/webview').then(({ getCurrentWebview }) => getCurrentWebview().onDragDropEvent(async (e) => {
  if (e.payload.type !== 'drop') return;
  const logs = e.payload.paths.filter((p) => /\.(json|jsonl)$/i.test(p));
  if (!logs.length) return;
  await show('conversations', true);
  conversations.open('start-import');
  for (const p of logs) await mail.importPath(p);
})).catch(() => {});
