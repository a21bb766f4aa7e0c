// This inbox: identity (copy, QR), endpoint, port, watched folder, mail accounts, executors per scope,
// how long history is kept, exports.
import { api, errorText, type AppInfo, type ExecutorConfig, type ExecutorConfig_Deserialize, type ExecutorSpec, type ExecutorSpec_Deserialize, type Retention } from '../api';
import { h, replace } from '../dom';
import { keyGroups } from '../format';
import { failed } from './parts';
import { mailAccounts } from './email';
import { quietCard } from './quiet';
import { askNewScopesCard } from './asknew';
import { approversCard } from './approvers';
import { teamCard } from './team';
import { DoorCards } from './doors';

/** What the one text field shows of an executor: its folder, program, model, swarm or peer.
 * A swarm's and a peer's fields are their doors' own (the gate's type says only their kind). */
function argOf(spec: ExecutorSpec): string {
  const f = spec as Record<string, unknown>;
  const str = (k: string) => (typeof f[k] === 'string' ? (f[k] as string) : '');
  if (spec.kind === 'command') return [str('program'), ...(Array.isArray(f.args) ? f.args.map(String) : [])].join(' ');
  if (spec.kind === 'model') return `${str('model')} ${str('endpoint')}`;
  const field: Record<string, string> = { 'file-queue': 'dir', swarm: 'swarm', peer: 'peer' };
  return field[spec.kind] ? str(field[spec.kind]) : '';
}

export class SettingsView {
  readonly el = h('section', { className: 'settings', id: 'view-settings' });
  private doors = new DoorCards();
  /** Draws the approver devices again (one may have joined from its phone). */
  private approvers: (() => Promise<void>) | null = null;
  constructor(private refreshApp: () => Promise<void>) {}

  /** What changes outside the window is drawn again; forms being filled are left alone. */
  async refreshLists(): Promise<void> {
    await this.approvers?.();
  }

  async load(info: AppInfo): Promise<void> {
    // The last reading must not be typed into or clicked while this one is read: the new one
    // would be drawn over what was typed, and a switch's answer would be said nowhere.
    if (this.el.firstChild) {
      replace(this.el, h('h2', {}, 'This inbox'), h('p', { className: 'muted', id: 'settings-reading' }, 'Reading settings…'));
      this.el.setAttribute('aria-busy', 'true');
    }
    try { await this.draw(info); } finally { this.el.removeAttribute('aria-busy'); }
  }

  private async draw(info: AppInfo): Promise<void> {
    const msg = h('p', { role: 'status', id: 'settings-msg' });
    const copyKey = h('button', { className: 'secondary', id: 'copy-key' }, 'Copy');
    copyKey.addEventListener('click', async () => {
      try {
        const { writeText } = await import('@tauri-apps/plugin-clipboard-manager');
        await writeText(info.public_key);
        copyKey.textContent = 'Copied';
      } catch (e) { msg.textContent = errorText(e); }
    });
    const qr = h('img', { id: 'identity-qr', alt: 'QR code of your public key', width: 180, height: 180 });
    api.identityQr().then((svg) => { qr.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`; }).catch(() => {});
    const port = h('input', { id: 'settings-port', type: 'number', min: 1, max: 65535, value: info.settings.port });
    const uampPort = h('input', { id: 'settings-uamp-port', type: 'number', min: 1, max: 65535, value: info.settings.uamp_port });
    // Chosen in Gatehouse's own dialog only: a typed path would not be accepted.
    const folder = h('input', { id: 'settings-folder', type: 'text', value: info.settings.watch_dir, size: 50, readonly: true });
    const pick = h('button', { className: 'secondary', type: 'button', onclick: async () => {
      try {
        const dir = await api.pickPath('watch_folder');
        if (dir) folder.value = dir;
      } catch (e) { msg.textContent = errorText(e); }
    } }, 'Choose…');
    const save = h('button', { className: 'primary', type: 'submit', id: 'settings-save' }, 'Save and restart the inbox');
    const form = h('form', { className: 'card', onsubmit: async (e: Event) => {
      e.preventDefault();
      try {
        const st = await api.settingsSet({ port: Number(port.value), watch_dir: folder.value, uamp_port: Number(uampPort.value) });
        msg.textContent = st.error ?? `Listening on ${st.listening}; watching ${st.watching}.`;
        await this.refreshApp();
      } catch (err) { msg.textContent = errorText(err); }
    } },
      h('h3', {}, 'Where messages arrive'),
      h('label', {}, h('span', {}, 'Port (on this computer only)'), port),
      h('label', {}, h('span', {}, 'UAMP port (TLS 1.3)'), uampPort),
      h('label', {}, h('span', {}, 'Watched folder'), folder, pick),
      h('div', { className: 'actions' }, save), msg);
    // What an export did is said beside its buttons.
    const exported = h('p', { role: 'status', id: 'export-msg' });
    const exporter = (kind: 'receipts' | 'audit' | 'conversations' | 'guardian', label: string) => h('button', { className: 'secondary', 'data-export': kind, onclick: async () => {
      try {
        const path = await api.pickPath('export', `gatehouse-${kind}.json`);
        if (!path) return;
        const n = await api.exportJson(kind, path);
        exported.className = '';
        exported.textContent = `Exported ${n} ${kind === 'audit' ? 'audit entries' : kind === 'conversations' ? 'IntentWeb conversations' : kind === 'guardian' ? 'guardian sessions' : 'receipts'} to ${path}.`;
      } catch (e) { exported.className = 'error'; exported.textContent = errorText(e); }
    } }, label);
    const approvers = await approversCard(`http://127.0.0.1:${info.settings.port}`);
    this.approvers = approvers.refresh;
    const endpoint = info.status.listening ?? `http://127.0.0.1:${info.settings.port}/epp/v1/submit`;
    replace(this.el,
      h('h2', {}, 'This inbox'),
      h('div', { className: 'card identity' },
        h('div', {},
          h('h3', {}, 'Your public key'),
          h('p', { className: 'mono key', id: 'settings-key' }, ...keyGroups(info.public_key)), copyKey,
          h('p', { className: 'muted small' }, `Kept in the ${info.keystore === 'os' ? 'OS keychain' : 'key file you opted into'}. Share the key and the address below with senders you want to hear from.`),
          h('h3', {}, 'Address to share'),
          h('p', { className: 'mono', id: 'settings-endpoint' }, endpoint)),
        qr),
      form,
      (await this.doors.load(), this.doors.el),
      await mailAccounts(),
      approvers.card,
      await teamCard(),
      await this.executors(),
      await askNewScopesCard(),
      await quietCard(),
      await this.retention(),
      h('div', { className: 'card' }, h('h3', {}, 'Export'), exporter('receipts', 'Export receipts (JSON)'), ' ', exporter('audit', 'Export activity log (JSON)'), ' ', exporter('conversations', 'Export IntentWeb conversations (JSON)'), ' ', exporter('guardian', 'Export guardian sessions (JSON)'), exported),
      h('p', { className: 'muted small' }, `Gatehouse ${info.version} · data in ${info.data_dir}`));
  }

  // How long refused submissions and the activity log are kept (the inbox applies it
  // every 10 minutes).
  private async retention(): Promise<HTMLElement> {
    let r: Retention;
    try { r = await api.retentionGet(); } catch (e) { return failed(e); }
    const msg = h('p', { role: 'status', id: 'retention-msg' });
    const days = (id: string, value: number) => h('input', { id, type: 'number', min: 0, value, className: 'days' });
    const body = days('retention-body', r.rejected_body_days);
    const receipt = days('retention-receipt', r.rejected_receipt_days);
    const audit = days('retention-audit', r.audit_days);
    const steps = days('retention-steps', r.steps_days);
    const forever = (n: number) => (n === 0 ? 'forever' : `${n} day${n === 1 ? '' : 's'}`);
    return h('form', { className: 'card', id: 'retention', onsubmit: async (e: Event) => {
      e.preventDefault();
      try {
        const saved = await api.retentionSet({ rejected_body_days: Number(body.value), rejected_receipt_days: Number(receipt.value), audit_days: Number(audit.value), steps_days: Number(steps.value) });
        msg.textContent = `Saved: refused content kept ${forever(saved.rejected_body_days)}, refused receipts ${forever(saved.rejected_receipt_days)}, activity log ${forever(saved.audit_days)}, your agents' steps ${forever(saved.steps_days)}.`;
      } catch (err) { msg.textContent = errorText(err); }
    } },
      h('h3', {}, 'How long history is kept'),
      h('p', { className: 'muted small' }, 'Receipts of accepted messages are always kept. Older entries are removed within 10 minutes of saving; 0 keeps them forever.'),
      h('label', {}, h('span', {}, 'Content of refused submissions (days)'), body),
      h('label', {}, h('span', {}, 'Receipts of refused submissions (days)'), receipt),
      h('label', {}, h('span', {}, 'Activity log (days)'), audit),
      h('label', {}, h('span', {}, 'Your agents’ and MCP servers’ decided steps, with their answers (days)'), steps),
      h('div', { className: 'actions' }, h('button', { className: 'secondary', type: 'submit', id: 'retention-save' }, 'Save how long history is kept')),
      msg);
  }

  private async executors(): Promise<HTMLElement> {
    let cfg: ExecutorConfig;
    try { cfg = await api.executorsGet(); } catch (e) { return failed(e); }
    const rows = h('tbody');
    const msg = h('p', { role: 'status' });
    const addRow = (scope: string, spec: ExecutorSpec) => {
      const s = h('input', { type: 'text', value: scope, readonly: scope === 'default', size: 12, className: 'ex-scope', 'aria-label': 'Scope' });
      const label: Record<string, string> = { noop: 'Only log it', 'file-queue': 'Write to a folder', command: 'Run a program', model: 'Ask my model', swarm: 'Hand to a MAIL swarm', peer: 'Ask a UAMP peer' };
      const kind = h('select', { className: 'ex-kind', 'aria-label': `What happens to accepted messages for ${scope || 'this scope'}` }, ...['noop', 'file-queue', 'command', 'model', 'swarm', 'peer'].map((k) => h('option', { value: k }, label[k])));
      kind.value = spec.kind;
      // What to write follows what happens (one short hint, never cut off).
      const hint: Record<string, string> = { noop: '', 'file-queue': 'the folder', command: 'the program and its arguments', model: 'model name, then its address', swarm: 'the swarm’s name', peer: 'the peer’s name' };
      const arg = h('input', { type: 'text', className: 'ex-arg', size: 40, 'aria-label': 'Folder or program',
        value: argOf(spec), placeholder: hint[spec.kind] ?? '' });
      kind.addEventListener('change', () => { arg.placeholder = hint[kind.value] ?? ''; });
      rows.append(h('tr', {}, h('td', {}, s), h('td', {}, kind), h('td', {}, arg)));
    };
    addRow('default', cfg.default);
    for (const [k, v] of Object.entries(cfg.scopes)) addRow(k, v);
    const save = async () => {
      const next: ExecutorConfig_Deserialize & { scopes: Record<string, ExecutorSpec_Deserialize> } = { default: { kind: 'noop' }, scopes: {} };
      for (const tr of rows.querySelectorAll('tr')) {
        const scope = (tr.querySelector('.ex-scope') as HTMLInputElement).value.trim();
        const kind = (tr.querySelector('.ex-kind') as HTMLSelectElement).value;
        const arg = (tr.querySelector('.ex-arg') as HTMLInputElement).value.trim();
        if (!scope) continue;
        const parts = arg.split(/\s+/).filter(Boolean);
        const spec: ExecutorSpec_Deserialize = kind === 'file-queue' ? { kind: 'file-queue', dir: arg }
          : kind === 'command' ? { kind: 'command', program: parts[0] ?? '', args: parts.slice(1), timeout_secs: 60 }
          : kind === 'model' ? { kind: 'model', model: parts[0] ?? '', endpoint: parts[1] ?? 'http://127.0.0.1:11434/v1', timeout_secs: 300 }
          : kind === 'swarm' ? { kind: 'swarm', swarm: arg }
          : kind === 'peer' ? { kind: 'peer', peer: arg, timeout_secs: 300 }
          : { kind: 'noop' };
        if (scope === 'default') next.default = spec; else next.scopes[scope] = spec;
      }
      try { await api.executorsSet(next); msg.textContent = 'Saved.'; } catch (e) { msg.textContent = errorText(e); }
    };
    return h('div', { className: 'card' }, h('h3', {}, 'What happens to accepted messages'),
      h('p', { className: 'muted small' }, 'Per scope. Programs run without a shell; the message arrives on their standard input.'),
      h('table', { className: 'executors' }, h('thead', {}, h('tr', {}, h('th', {}, 'Scope'), h('th', {}, 'Action'), h('th', {}, 'Folder or program'))), rows),
      h('div', { className: 'actions' },
        h('button', { className: 'secondary', onclick: () => addRow('', { kind: 'noop' }) }, 'Add a scope'),
        h('button', { className: 'primary', onclick: () => void save() }, 'Save what happens to messages')), msg);
  }
}
