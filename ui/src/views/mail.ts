// Tasks with swarms (MAIL): the swarms you connect to (what each says about itself), tasks
// you send and follow live, interswarm messages, task logs you import, and every task's
// timeline with a diagram of which agent talked to which — threads in Conversations.
import { api, errorText, onMailEvent, type ImportReport, type MailLive, type MailMessage, type MailSurvey, type MailSwarm, type ServerInfo, type MailTaskDetail } from '../api';
import { h, refill, replace } from '../dom';
import { act, failed } from './parts';
import type { Host, Thread } from './conversations';
import { mailAddress, mailGraph, taskStateText, tierText, when } from '../format';

const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** An address as people read it: its name, its swarm beside it when it is elsewhere. */
function who(addr: string): HTMLElement {
  const a = mailAddress(addr);
  return h('span', { className: `addr addr-${a.type}`, title: addr },
    a.type === 'agent' ? a.name : `${a.name} (${a.type})`,
    a.swarm ? h('span', { className: 'swarm-tag' }, `@${a.swarm}`) : null);
}

/** One message of a timeline. */
export function messageItem(m: MailMessage): HTMLElement {
  const kind = m.msg_type;
  const cls = ['mail-msg', `type-${kind}`, m.system_error ? 'system-error' : '', kind === 'broadcast_complete' ? 'finish' : ''].filter(Boolean).join(' ');
  return h('li', { className: cls, 'data-type': kind, 'data-tier': m.tier },
    h('div', { className: 'mail-head' },
      h('span', { className: `tier tier-${m.tier}`, title: `priority tier ${m.tier}: ${tierText(m.tier)}` }, `T${m.tier}`),
      h('span', { className: 'msg-type' }, kind === 'broadcast_complete' ? 'task complete' : kind),
      who(m.sender), ' → ', ...m.recipients.flatMap((r, i) => (i ? [', ', who(r)] : [who(r)])),
      m.system_error ? h('span', { className: 'flag', title: 'a system error message' }, '⚠ system error') : null,
      h('time', { title: m.ts }, when(m.ts))),
    h('div', { className: 'mail-subject' }, m.subject),
    h('div', { className: 'prompt mail-body' }, m.body),
    m.odd ? h('p', { className: 'mail-odd muted', title: 'The swarm sent this message off MAIL’s schema; it is kept as sent.' }, `Kept as sent, though off MAIL’s schema: ${m.odd}`) : null);
}

/** Which agent talked to which: participants on a circle, one arrow per pair with a count. */
export function graph(messages: MailMessage[]): SVGSVGElement {
  const g = mailGraph(messages);
  const size = 360;
  const r = g.nodes.length > 1 ? 130 : 0;
  const pos = new Map(g.nodes.map((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(g.nodes.length, 1) - Math.PI / 2;
    return [n, { x: size / 2 + r * Math.cos(a), y: size / 2 + r * Math.sin(a) }];
  }));
  const root = svg('svg', { viewBox: `0 0 ${size} ${size}`, width: size, height: size, class: 'mail-graph', role: 'img', 'aria-label': 'who talked to whom' });
  const defs = svg('defs', {});
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.appendChild(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow-head' }));
  defs.appendChild(marker);
  root.appendChild(defs);
  for (const e of g.edges) {
    const a = pos.get(e.from)!;
    const b = pos.get(e.to)!;
    const back = g.edges.some((o) => o.from === e.to && o.to === e.from);
    // Two-way pairs bow apart so both arrows stay visible.
    const dx = b.x - a.x, dy = b.y - a.y, len = Math.hypot(dx, dy) || 1;
    const bow = back ? 18 : 0;
    const mx = (a.x + b.x) / 2 - (dy / len) * bow, my = (a.y + b.y) / 2 + (dx / len) * bow;
    const end = { x: b.x - (dx / len) * 26, y: b.y - (dy / len) * 26 };
    const start = { x: a.x + (dx / len) * 26, y: a.y + (dy / len) * 26 };
    root.appendChild(svg('path', { d: `M ${start.x} ${start.y} Q ${mx} ${my} ${end.x} ${end.y}`, class: 'edge', 'marker-end': 'url(#arrow)', 'data-from': e.from, 'data-to': e.to }));
    root.appendChild(svg('text', { x: mx, y: my, class: 'edge-count' }, String(e.count)));
  }
  for (const n of g.nodes) {
    const p = pos.get(n)!;
    const a = mailAddress(n);
    const node = svg('g', { class: `node node-${a.type}`, 'data-node': n });
    node.appendChild(svg('circle', { cx: p.x, cy: p.y, r: 24 }));
    node.appendChild(svg('text', { x: p.x, y: p.y + 4, class: 'node-name' }, a.name.length > 12 ? `${a.name.slice(0, 11)}…` : a.name));
    if (a.swarm) node.appendChild(svg('text', { x: p.x, y: p.y + 38, class: 'node-swarm' }, `@${a.swarm}`));
    node.appendChild(svg('title', {}, n));
    root.appendChild(node);
  }
  return root;
}

function surveyLine(label: string, v: Record<string, unknown> | undefined, f: (v: Record<string, unknown>) => string): HTMLElement[] {
  const err = v && (v.error as { message?: string } | undefined);
  return [h('dt', {}, label), h('dd', { className: err ? 'error' : '' }, !v ? '—' : err ? err.message ?? 'error' : f(v))];
}

/** Whether a connection is to a MAIL 2.0 server (as it said when asked). */
export function isV2(s: MailSwarm): boolean {
  const v = (s.info as MailSurvey | null)?.server?.protocol_version;
  return typeof v === 'string' && v.startsWith('2.');
}

/** `mail 1.3, swarm “example” (1.3.6), entrypoint supervisor, running`. */
function serverLine(s: ServerInfo | undefined, root: Record<string, unknown>): string {
  if (!s) return `${String(root.name)} ${String(root.version ?? root.protocol_version ?? '')}, ${String(root.status ?? '')}`;
  const parts = [`${s.name} ${s.protocol_version ?? '(version not given)'}`];
  if (s.swarm) parts.push(`swarm “${s.swarm}”${s.swarm_version ? ` (${s.swarm_version})` : ''}`);
  if (s.entrypoint) parts.push(`entrypoint ${s.entrypoint}`);
  if (s.status) parts.push(s.status);
  return parts.join(', ');
}

export class MailView {
  private live = h('ol', { className: 'mail-timeline', id: 'mail-live' });
  private liveStatus = h('p', { role: 'status', id: 'mail-live-status' });
  private detailBox = h('div', { className: 'detail', id: 'mail-detail' }, h('p', { className: 'muted' }, 'Choose a task to see its timeline.'));
  private importMsg = h('div', { role: 'status', id: 'mail-import-msg' });
  private following = false;
  readonly label = 'MAIL';
  // Built once and only refilled: the view is redrawn whenever anything arrives, and an
  // address, a token or a task being typed (or a connection still being made) must
  // survive that.
  private swarmList = h('div');
  private swarmsPart = h('div', { className: 'card', id: 'mail-swarms' }, h('h3', {}, 'Swarms'), this.swarmList, this.swarmConnect());
  private sendSwarm = h('select', { id: 'mail-swarm' });
  private sendForm = this.sendCard();
  private importPart = this.importCard();

  // MAIL 2.0 servers push nothing to users: while this view is open (and the window is
  // visible) it asks them every few seconds. No 2.0 server, or another view: no timer.
  private syncTimer: number | undefined;
  private v2: string[] = [];

  constructor(private host: Host) {
    void onMailEvent((e) => this.onEvent(e));
  }

  /** Where a task with a swarm starts: the swarms, and the form that sends one. */
  sendParts(): HTMLElement[] {
    return [this.swarmsPart, this.sendForm];
  }

  importParts(): HTMLElement[] {
    return [this.importPart];
  }

  async threads(q: string): Promise<Thread[]> {
    return (await api.mailTasks(q || null)).map((t) => ({
      kind: 'task', id: t.task_id, who: t.swarm ?? `imported from ${t.source}`, at: t.updated_at,
      state: taskStateText(t.state), stateClass: `state-${t.state}`,
      preview: `${t.subject || '(no subject)'} · ${t.messages} msgs · ${t.participants.map((p) => mailAddress(p).name).join(', ')}`,
    }));
  }

  async open(id: string): Promise<HTMLElement> {
    await this.showTask(id);
    return this.detailBox;
  }

  /** The view is left: stop asking servers. */
  leave(): void {
    window.clearInterval(this.syncTimer);
    this.syncTimer = undefined;
  }

  private watch(swarms: MailSwarm[]): void {
    this.v2 = swarms.filter(isV2).map((s) => s.name);
    if (!this.v2.length) return this.leave();
    if (this.syncTimer === undefined) this.syncTimer = window.setInterval(() => void this.sync(), 5000);
    void this.sync();
  }

  private syncing = false;
  private async sync(): Promise<void> {
    if (this.syncing || document.hidden || this.following) return;
    this.syncing = true;
    let fresh = 0;
    for (const name of this.v2) {
      try { fresh += await api.mailSync(name); } catch { /* shown on Refresh; try again next time */ }
    }
    this.syncing = false;
    if (fresh) await this.host.reload();
  }

  /** The swarms, read again: the send form's choice and the 2.0 servers to ask. */
  async prepare(): Promise<void> {
    try {
      const swarms = await api.mailSwarms();
      this.watch(swarms);
      this.swarmsCard(swarms);
      this.sendFor(swarms);
    } catch (e) {
      replace(this.swarmList, failed(e));
    }
  }

  private swarmsCard(swarms: MailSwarm[]): HTMLElement {
    replace(this.swarmList, swarms.length ? h('div', { className: 'swarm-list' }, ...swarms.map((s) => this.swarmItem(s)))
      : h('p', { className: 'muted' }, 'No swarm yet. Connect one by its address and the token its operator gave you (kept in your keychain).'));
    // The card itself is kept: moving the form into a new one would blur what is typed.
    return this.swarmsPart;
  }

  private swarmConnect(): HTMLElement {
    const url = h('input', { id: 'swarm-url', type: 'text', placeholder: 'https://swarm.example:8000', size: 30 });
    const name = h('input', { id: 'swarm-name', type: 'text', placeholder: 'a name', size: 12 });
    // A MAIL 2.0 server takes a login instead of a token; the user need not know which
    // one a server speaks: it says, and asks for the address if it needs one.
    const address = h('input', { id: 'swarm-address', type: 'text', placeholder: 'address (MAIL 2.0 login)', size: 22, autocomplete: 'off' });
    const token = h('input', { id: 'swarm-token', type: 'password', placeholder: 'token or password', size: 22, autocomplete: 'off' });
    const msg = h('p', { role: 'status', id: 'swarm-msg' });
    const connect = h('button', { className: 'primary', id: 'swarm-add', type: 'submit' }, 'Connect');
    const form = h('form', { className: 'inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      connect.disabled = true;
      msg.className = '';
      msg.textContent = 'Asking the swarm who it is…';
      try {
        const s = await api.mailSwarmAdd({ url: url.value, name: name.value, token: token.value || null, address: address.value.trim() || null });
        msg.className = 'notice';
        msg.textContent = `Connected to ${s.name}.`;
        url.value = name.value = token.value = address.value = '';
        await this.prepare();
      } catch (err) { msg.className = 'error'; msg.textContent = errorText(err); }
      connect.disabled = false;
    } }, url, name, address, token, connect);
    return h('div', {}, form, msg);
  }

  private swarmItem(s: MailSwarm): HTMLElement {
    const info = s.info as MailSurvey | null;
    const body = h('dl', { className: 'survey' });
    const fill = (i: MailSurvey | null) => {
      if (isV2(s)) {
        // A 2.0 server has no status document; its swarms host agents.
        const hosted = ((i?.swarms as Record<string, unknown> | undefined)?.swarms ?? []) as Record<string, unknown>[];
        replace(body,
          ...surveyLine('Server', i?.root, (r) => serverLine(i?.server, r)),
          ...(i?.health ? surveyLine('Health', i.health, (v) => String(v.status)) : []),
          ...surveyLine('You', i?.whoami, (v) => `${v.id} — role ${v.role}`),
          h('dt', {}, 'Swarms here'),
          h('dd', {}, hosted.map((w) => `${w.name} (${w.num_agents} agent${w.num_agents === 1 ? '' : 's'})`).join(', ') || 'none'));
        return;
      }
      const swarms = Array.isArray(i?.swarms) ? (i!.swarms as Record<string, unknown>[]) : null;
      replace(body,
        ...surveyLine('Server', i?.root, (r) => serverLine(i?.server, r)),
        ...surveyLine('Health', i?.health, (v) => `${v.status} (${v.swarm_name})`),
        ...surveyLine('You', i?.whoami, (v) => `${v.id} — role ${v.role}`),
        ...surveyLine('Status', i?.status, (v) => `${(v.swarm as Record<string, unknown> | undefined)?.status ?? '?'}; ${v.user_task_running ? 'a task is running' : 'idle'}`),
        h('dt', {}, 'Known swarms'),
        h('dd', {}, swarms === null ? surveyLine('', i?.swarms as Record<string, unknown>, () => '')[1] : swarms.length === 0 ? 'none' : swarms.map((w) =>
          `${w.swarm_name}${typeof w.latency === 'number' ? ` (${Math.round(w.latency * 1000)} ms)` : ''}`).join(', ')));
    };
    fill(info);
    return h('div', { className: 'swarm', 'data-swarm': s.name },
      h('div', { className: 'row-top' },
        h('span', { className: 'who' }, s.name), h('span', { className: 'mono muted' }, s.base_url),
        h('span', { className: 'badge' }, isV2(s) ? 'MAIL 2.0 · login in keychain' : s.has_token ? 'token in keychain' : 'no token'),
        h('button', { className: 'secondary small', onclick: act(async () => fill(await api.mailSwarmRefresh(s.name))) }, 'Refresh'),
        h('button', { className: 'secondary small', onclick: act(() => api.mailSwarmRemove(s.name), () => this.prepare(), `Forget ${s.name}? Its token is deleted from the keychain; its tasks stay.`) }, 'Remove')),
      body);
  }

  /** The send form, shown once there is a swarm to send to; the chosen swarm stays chosen. */
  private sendFor(swarms: MailSwarm[]): HTMLElement {
    refill(this.sendSwarm, swarms.map((s) => [s.name, s.name]));
    this.sendForm.hidden = !swarms.length;
    return this.sendForm;
  }

  private sendCard(): HTMLElement {
    const swarm = this.sendSwarm;
    const subject = h('input', { id: 'mail-subject', type: 'text', placeholder: 'Subject', size: 24 });
    const body = h('textarea', { id: 'mail-body', rows: 2, cols: 60, placeholder: 'What should the swarm do?' });
    const task = h('input', { id: 'mail-task', type: 'text', placeholder: 'continue task (optional task id)', size: 36 });
    const entry = h('input', { id: 'mail-entrypoint', type: 'text', placeholder: 'entrypoint or agent (optional)', size: 16 });
    const send = h('button', { className: 'primary', id: 'mail-send', type: 'submit' }, 'Send');
    const targets = h('input', { id: 'inter-targets', type: 'text', placeholder: 'agent@swarm, …', size: 30 });
    const interBody = h('input', { id: 'inter-body', type: 'text', placeholder: 'message', size: 40 });
    const interMsg = h('p', { role: 'status', id: 'inter-msg' });
    const inter = h('details', { id: 'mail-interswarm' }, h('summary', {}, 'To agents of another swarm (interswarm)'),
      h('form', { className: 'inline', onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const m = await api.mailInterswarm({ swarm: swarm.value, body: interBody.value, targets: targets.value.split(',').map((t) => t.trim()).filter(Boolean), subject: subject.value || null, task_id: task.value || null });
          replace(interMsg, h('ol', { className: 'mail-timeline' }, messageItem(m)));
          await this.host.reload();
        } catch (err) { interMsg.className = 'error'; interMsg.textContent = errorText(err); }
      } }, targets, interBody, h('button', { className: 'secondary', id: 'inter-send', type: 'submit' }, 'Send via this swarm')), interMsg);
    return h('form', { className: 'card', id: 'mail-compose', onsubmit: async (e: Event) => {
      e.preventDefault();
      if (!body.value.trim()) return;
      send.disabled = true;
      this.following = true;
      replace(this.live);
      this.liveStatus.className = '';
      this.liveStatus.textContent = 'Sent; waiting for the swarm…';
      try {
        const out = await api.mailSend({ swarm: swarm.value, body: body.value, subject: subject.value || null, task_id: task.value || null, entrypoint: entry.value || null });
        // A MAIL 2.0 server sends no finishing event: its answer is the outcome.
        if (out.completed) { this.liveStatus.className = 'notice'; this.liveStatus.textContent = `Completed: ${out.response}`; }
        this.host.select('task', out.task_id);
        task.value = out.task_id;
        body.value = '';
      } catch (err) {
        this.liveStatus.className = 'error';
        this.liveStatus.textContent = errorText(err);
      }
      this.following = false;
      send.disabled = false;
      await this.host.reload();
    } },
      h('h3', {}, 'Send a task'),
      h('div', { className: 'actions' }, swarm, subject, entry),
      h('div', { className: 'actions' }, body, send),
      h('div', { className: 'actions' }, task),
      this.liveStatus, this.live, inter);
  }

  private onEvent(e: MailLive): void {
    if (!this.following) return;
    switch (e.kind) {
      case 'message':
        this.live.appendChild(messageItem(e.message));
        this.liveStatus.textContent = `Running — ${this.live.children.length} message(s) so far (task ${e.task_id})`;
        break;
      case 'step':
        this.live.appendChild(h('li', { className: 'mail-step' }, h('span', { className: 'msg-type' }, e.event), ' ', e.description.split('\n')[0]));
        break;
      case 'unreadable':
        this.live.appendChild(h('li', { className: 'mail-step error' }, `An unreadable ${e.event} event (${e.field}: ${e.message})`));
        break;
      case 'finished':
        this.liveStatus.className = e.completed ? 'notice' : 'error';
        this.liveStatus.textContent = e.completed ? `Completed: ${e.response}` : `Failed at the swarm: ${e.response}`;
        break;
      case 'ping':
        break;
    }
  }

  private importCard(): HTMLElement {
    const pick = h('button', { className: 'secondary', id: 'mail-import', type: 'button', onclick: async () => {
      try {
        const file = await api.pickPath('mail_log');
        if (file) await this.importPath(file);
      } catch (e) { this.importMsg.textContent = errorText(e); }
    } }, 'Import a task log…');
    return h('div', { className: 'card', id: 'mail-import-card' },
      h('h3', {}, 'Import'),
      h('p', { className: 'muted small' }, 'MAIL messages or interswarm wrappers (JSON or JSONL), or a swarm’s own export (its event dump, GET /task, a saved stream) — pick one, drop it on this window, or drop it into the watched folder as *.mail.json / *.mail.jsonl.'),
      pick, this.importMsg);
  }

  /** Imports a file the user picked or dropped on the window. */
  async importPath(path: string): Promise<void> {
    try {
      this.showReport(await api.mailImport(path));
      await this.host.reload();
    } catch (e) {
      this.importMsg.className = 'error';
      replace(this.importMsg, errorText(e));
    }
  }

  private showReport(r: ImportReport): void {
    this.importMsg.className = r.errors.length ? 'warning' : 'notice';
    replace(this.importMsg,
      h('p', {}, `${r.source}: ${r.imported} message(s) imported${r.duplicates ? `, ${r.duplicates} already known` : ''}, ${r.tasks.length} task(s).`),
      r.errors.length ? h('ul', { className: 'import-errors' }, ...r.errors.map((e) => h('li', {}, `line ${e.line}: ${e.field} ${e.message}`))) : null);
    if (r.tasks[0]) this.host.select('task', r.tasks[0]);
  }

  private async showTask(id: string): Promise<void> {
    try {
      const d: MailTaskDetail = await api.mailTask(id);
      const t = d.task;
      replace(this.detailBox,
        h('h2', {}, t.subject || '(no subject)'),
        h('dl', {},
          h('dt', {}, 'State'), h('dd', { id: 'task-state' }, taskStateText(t.state)),
          h('dt', {}, 'Task'), h('dd', { className: 'mono' }, t.task_id),
          h('dt', {}, 'From'), h('dd', {}, t.swarm ?? `imported from ${t.source}`),
          t.response ? h('dt', {}, 'Answer') : null, t.response ? h('dd', { className: 'prompt', id: 'task-response' }, t.response) : null,
          t.task_owner ? h('dt', {}, 'Owner') : null, t.task_owner ? h('dd', { className: 'mono' }, t.task_owner) : null,
          t.contributors.length ? h('dt', {}, 'Contributors') : null, t.contributors.length ? h('dd', { className: 'mono' }, t.contributors.join(', ')) : null),
        h('h3', {}, 'Who talked to whom'),
        h('div', { className: 'graph-box', id: 'task-graph' }, graph(d.messages)),
        h('h3', {}, `Timeline (${d.messages.length})`),
        h('ol', { className: 'mail-timeline', id: 'task-timeline' }, ...d.messages.map(messageItem)),
        d.events.length ? h('details', {}, h('summary', {}, `Other steps (${d.events.length})`),
          h('ul', {}, ...d.events.map((e) => h('li', { className: 'mail-step' }, h('span', { className: 'msg-type' }, e.event), ' ', e.description)))) : null);
    } catch (e) {
      replace(this.detailBox, failed(e));
    }
  }
}
