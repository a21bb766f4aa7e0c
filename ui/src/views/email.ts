// Mail accounts in Settings (EPP by email): each account's state in plain words, a
// "Test this account" button, removal, and the form that adds one. Adding tries the login
// (and the outgoing server) first; the password goes to the OS keychain, never here.
import { api, errorText, type EmailAccountRow, type EmailArrivalRow } from '../api';
import { h, replace } from '../dom';
import { act, failed } from './parts';
import { when } from '../format';

/** An account's state, as a person reads it. */
export function accountState(a: EmailAccountRow): string {
  const since = a.last_sync ? ` (last checked ${when(a.last_sync)})` : '';
  switch (a.state) {
    case 'idle': return `Connected, waiting for new mail${since}`;
    case 'polling': return `Connected, checking for new mail every minute (the server cannot announce it)${since}`;
    case 'connected': return a.backlog > 0 ? `Connected, reading a backlog: ${a.backlog} mail(s) still waiting${since}` : `Connected, reading new mail${since}`;
    case 'connecting': return 'Connecting…';
    case 'error': return `Not connected: ${a.last_error ?? 'an error'}`;
    case 'new': return 'Not connected yet';
    default: return a.state;
  }
}

interface AccountShape { host?: string; port?: number; security?: string; user?: string; folder?: string; certificate?: string | null; smtp?: { host: string; port: number; from: string } | null; receipts?: string }

const securityWords: Record<string, string> = {
  tls: 'over TLS',
  start_tls: 'over STARTTLS',
  plain: 'without TLS (this computer)',
};

const receiptWords: Record<string, string> = {
  known: 'to senders you trust',
  everyone: 'to everyone whose signature checks out',
  off: 'to nobody',
};

/** The Mail accounts card. */
export async function mailAccounts(): Promise<HTMLElement> {
  const card = h('div', { className: 'card', id: 'email-accounts' });
  const msg = h('p', { role: 'status', id: 'email-msg' });
  const list = h('div');
  const reload = async (): Promise<void> => {
    let rows: EmailAccountRow[];
    try { rows = await api.emailAccounts(); } catch (e) { replace(list, failed(e)); return; }
    replace(list, rows.length ? h('ul', { className: 'rows', id: 'email-list' }, ...rows.map((a) => {
      const acc = a.account as AccountShape;
      const out = acc.smtp ? `receipts mailed back through ${acc.smtp.host} as ${acc.smtp.from}, ${receiptWords[acc.receipts ?? 'known']}` : 'no outgoing server: no receipt is mailed back';
      return h('li', { className: 'row', 'data-account': a.name },
        h('strong', {}, a.name), ` — ${acc.user ?? '?'} at ${acc.host ?? '?'} ${securityWords[acc.security ?? 'tls'] ?? ''}${acc.certificate ? ' (its own certificate trusted)' : ''}, folder ${acc.folder ?? 'INBOX'}`,
        h('div', { className: `small ${a.state === 'error' ? 'error' : 'muted'}`, 'data-state': a.state }, accountState(a)),
        h('div', { className: 'muted small' }, `${a.last_uid} mail(s) read so far; ${out}`),
        a.left_large > 0 ? h('div', { className: 'warning small', 'data-left-large': a.left_large },
          `${a.left_large} mail(s) over 4 MB seem to carry an envelope: they were left in ${acc.folder ?? 'INBOX'} unread (Gatehouse reads at most 4 MB; ask the sender for a smaller one).`) : null,
        h('div', { className: 'actions' },
          h('button', { className: 'secondary', 'data-test': a.name, onclick: async () => {
            msg.textContent = `Testing ${a.name}…`;
            try { msg.textContent = `${a.name}: ${await api.emailTest(a.name)}`; } catch (e) { msg.textContent = `${a.name}: ${errorText(e)}`; }
          } }, 'Test this account'),
          h('button', { className: 'secondary', 'data-remove': a.name, onclick: act(() => api.emailRemove(a.name), reload, `Stop following ${a.name} and forget its password? Its mail stays where it was filed.`) }, 'Remove')));
    })) : h('p', { className: 'empty' }, 'No mail account yet. Agents elsewhere can reach you by mail once you add one.'));
  };
  const field = (id: string, label: string, attrs: Record<string, unknown> = {}) => {
    const input = h('input', { id, type: 'text', ...attrs });
    return { input, label: h('label', {}, h('span', {}, label), input) };
  };
  const name = field('email-name', 'Name', { value: 'personal', size: 14 });
  const host = field('email-host', 'IMAP server', { placeholder: 'imap.example.com', size: 24 });
  const port = field('email-port', 'Port', { type: 'number', value: 993, min: 1, max: 65535 });
  const security = h('select', { id: 'email-security', 'aria-label': 'Security' },
    h('option', { value: 'tls' }, 'TLS'), h('option', { value: 'starttls' }, 'STARTTLS'), h('option', { value: 'plain' }, 'None (this computer only)'));
  // The usual port follows the choice until the user types one.
  security.addEventListener('change', () => { port.input.value = security.value === 'tls' ? '993' : '143'; });
  const certificate = h('textarea', { id: 'email-certificate', rows: 3, cols: 48, placeholder: '-----BEGIN CERTIFICATE----- (only for your own server)' });
  const user = field('email-user', 'User name', { placeholder: 'me@example.com', size: 24 });
  const password = field('email-password', 'Password or app password', { type: 'password', autocomplete: 'off' });
  const folder = field('email-folder', 'Folder to follow', { value: 'INBOX', size: 16 });
  const smtpHost = field('email-smtp-host', 'Outgoing (SMTP) server', { placeholder: 'smtp.example.com (optional)', size: 24 });
  const smtpPort = field('email-smtp-port', 'Port', { type: 'number', value: 465, min: 1, max: 65535 });
  const smtpSecurity = h('select', { id: 'email-smtp-security', 'aria-label': 'Outgoing security' },
    h('option', { value: 'tls' }, 'TLS'), h('option', { value: 'starttls' }, 'STARTTLS'), h('option', { value: 'plain' }, 'None (this computer only)'));
  const from = field('email-from', 'Send from', { placeholder: 'me@example.com', size: 24 });
  const receipts = h('select', { id: 'email-receipts', 'aria-label': 'Mail receipts back' },
    h('option', { value: 'known' }, 'to senders I trust'), h('option', { value: 'everyone' }, 'to everyone (also answers strangers)'), h('option', { value: 'off' }, 'to nobody'));
  const num = (i: HTMLInputElement) => (i.value.trim() ? Number(i.value) : null);
  const form = h('form', { id: 'email-form', onsubmit: async (e: Event) => {
    e.preventDefault();
    msg.textContent = 'Logging in…';
    try {
      const said = await api.emailAdd({
        name: name.input.value.trim(), host: host.input.value.trim(), port: Number(port.input.value), security: security.value, user: user.input.value.trim(),
        folder: folder.input.value.trim(), password: password.input.value, smtp_host: smtpHost.input.value.trim() || null, smtp_port: num(smtpPort.input),
        smtp_security: smtpSecurity.value, smtp_user: null, from: from.input.value.trim() || null, receipts: receipts.value,
        certificate: certificate.value.trim() || null,
      });
      password.input.value = '';
      msg.textContent = `Added ${name.input.value.trim()}: ${said}`;
      await reload();
    } catch (err) { msg.textContent = errorText(err); }
  } },
    h('div', { className: 'row-fields' }, name.label, host.label, port.label, h('label', {}, h('span', {}, 'Security'), security)),
    h('div', { className: 'row-fields' }, user.label, password.label, folder.label),
    h('div', { className: 'row-fields' }, smtpHost.label, smtpPort.label, h('label', {}, h('span', {}, 'Security'), smtpSecurity), from.label),
    h('label', {}, h('span', {}, 'Mail receipts back'), receipts),
    h('label', {}, h('span', {}, 'Your server\'s own certificate (PEM), if it is not from a public authority'), certificate),
    h('div', { className: 'actions' }, h('button', { className: 'primary', type: 'submit', id: 'email-add' }, 'Add account')));
  replace(card,
    h('h3', {}, 'Mail accounts'),
    h('p', { className: 'muted small' }, 'Agents elsewhere can send you envelopes by mail. Gatehouse follows the folder you name (a filter can put your +gatehouse mail there), checks every envelope exactly as if it came over the internet, and moves handled mail to Gatehouse/Accepted or Gatehouse/Rejected. Other mail is never touched.'),
    list, h('details', {}, h('summary', {}, 'Add a mail account'), form), msg);
  await reload();
  return card;
}

/** The detail's lines about a mail arrival: the mail's own claims, and the receipt sent back. */
export function arrivalFields(a: EmailArrivalRow): [string, string][] {
  const m = a.mailed_back;
  const back = m
    ? m.state === 'sent' ? `Mailed to ${m.to_addr} ${m.sent_at ? when(m.sent_at) : ''}`.trim()
      : m.state === 'failed' ? `Not delivered: ${m.last_error ?? 'refused'}`
        : `Waiting to go to ${m.to_addr}${m.attempts ? ` (tried ${m.attempts}×: ${m.last_error ?? ''})` : ''}`
    : `Not mailed: ${a.not_mailed ?? 'no outgoing server'}`;
  return [
    ['Mail from', `${a.from_addr ?? 'unknown'} (what the mail says; the signature above says who sent it)`],
    ['Message-ID', a.message_id ?? '—'],
    ['Mail account', a.account],
    ['Receipt by mail', back],
  ];
}
