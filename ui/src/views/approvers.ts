// Approver devices in Settings: invite a phone or a team member (the approval page's
// address with a one-time code, and its QR code to scan), see the devices, rename or remove one.
import { api, errorText, type Approver } from '../api';
import { h, replace } from '../dom';
import { untilText, when } from '../format';

/** A device's row: drawn once, then told what changed, so a name being typed in it stays
 *  where it is (the list is drawn again whenever a device is seen, joins or goes). */
class DeviceRow {
  readonly el: HTMLLIElement;
  private readonly title = h('strong', {});
  private readonly seen = h('span', { className: 'muted small' });
  private readonly name = h('input', { type: 'text', className: 'approver-name', maxLength: 80 });
  private readonly remove = h('button', { className: 'secondary danger', 'data-action': 'remove' }, 'Remove');
  private shown = '';

  constructor(private a: Approver, msg: HTMLElement, redraw: () => Promise<void>) {
    this.remove.addEventListener('click', async () => {
      const was = this.a.name;
      try {
        await api.approverRemove(this.a.id);
        msg.textContent = `Removed ${was}: its requests are refused from now on.`;
        await redraw();
      } catch (e) { msg.textContent = errorText(e); }
    });
    const rename = h('form', { className: 'inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      const was = this.a.name;
      try {
        await api.approverRename(this.a.id, this.name.value);
        msg.textContent = `Renamed ${was} to ${this.name.value.trim()}.`;
        await redraw();
      } catch (err) { msg.textContent = errorText(err); }
    } }, this.name, h('button', { className: 'secondary', type: 'submit', 'data-action': 'rename' }, 'Rename'));
    this.el = h('li', { className: 'approver', 'data-id': a.id }, this.title, ' ', this.seen, ' ', rename, ' ', this.remove);
    this.update(a);
  }

  update(a: Approver): void {
    this.a = a;
    this.title.textContent = a.name;
    this.seen.textContent = a.last_seen ? `last seen ${when(a.last_seen)}` : 'not seen yet';
    // A new name being typed is the person's; an untouched field follows the gate.
    if (this.name.value === this.shown) this.name.value = a.name;
    this.shown = a.name;
    this.name.setAttribute('aria-label', `New name for ${a.name}`);
    this.remove.setAttribute('aria-label', `Remove ${a.name}`);
  }
}

/** The card, and how to draw its devices again (a device joined or was removed elsewhere). */
export async function approversCard(defaultUrl: string): Promise<{ card: HTMLElement; refresh: () => Promise<void> }> {
  const card = h('section', { className: 'card', id: 'approvers' });
  const msg = h('p', { role: 'status', id: 'approvers-msg' });
  const invitation = h('div', { id: 'approver-invitation' });
  const list = h('ul', { id: 'approvers-list' });
  // The invitation on screen: who it is for, and the devices there were when it was made.
  let invited: { name: string; before: Set<string> } | null = null;
  let known = new Set<string>();
  const rows = new Map<string, DeviceRow>();
  const redraw = async (): Promise<void> => {
    try {
      const devices = await api.approversList();
      known = new Set(devices.map((a) => a.id));
      for (const id of rows.keys()) if (!known.has(id)) rows.delete(id);
      const drawn = devices.map((a) => {
        const row = rows.get(a.id);
        if (row) { row.update(a); return row.el; }
        const made = new DeviceRow(a, msg, redraw);
        rows.set(a.id, made);
        return made.el;
      });
      replace(list, ...(drawn.length ? drawn : [h('li', { className: 'muted' }, 'No devices yet.')]));
      // A used invitation goes with its use: its code and QR are of no more use to anyone.
      const joined = invited ? devices.find((a) => !invited!.before.has(a.id)) : undefined;
      if (joined) {
        replace(invitation, h('p', { className: 'ok', id: 'approver-joined' }, `${joined.name} joined: it can decide what waits from now on. The invitation is used up.`));
        invited = null;
      }
    } catch (e) { msg.textContent = errorText(e); }
  };
  const name = h('input', { id: 'approver-name', type: 'text', placeholder: 'Ana’s phone', maxLength: 80 });
  const url = h('input', { id: 'approver-url', type: 'url', value: defaultUrl, size: 40 });
  const form = h('form', { onsubmit: async (e: Event) => {
    e.preventDefault();
    try {
      const v = await api.approverInvite(name.value, url.value);
      invited = { name: v.invitation.name, before: new Set(known) };
      const qr = h('img', { id: 'approver-qr', alt: `QR code of the invitation for ${v.invitation.name}`, width: 180, height: 180 });
      qr.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(v.qr_svg)}`;
      // Plain http is taken only on this computer (a browser keeps the page's key only on a
      // secure page): said, so nobody walks off to scan it with a phone.
      const here = /^http:\/\/(127\.|localhost[:/]|\[::1\])/i.test(v.invitation.url);
      replace(invitation,
        h('p', {}, `Scan this with ${v.invitation.name}, or open the link on it. The code works once, ${untilText(v.invitation.expires_at)}.`),
        here ? h('p', { className: 'warning', id: 'approver-here-only' }, 'This address works only in a browser on this computer. For a phone, invite it with the gate’s https:// address as the phone reaches it.') : null,
        qr,
        h('p', { className: 'mono', id: 'approver-link' }, v.invitation.url),
        h('p', {}, 'Code ', h('strong', { className: 'mono', id: 'approver-code' }, v.invitation.code)));
      msg.textContent = '';
      invitation.scrollIntoView({ block: 'center' });
    } catch (err) { msg.textContent = errorText(err); }
  } },
    h('label', {}, h('span', {}, 'Device name'), name),
    h('label', {}, h('span', {}, 'The gate’s address, as the device reaches it'), url),
    h('div', { className: 'actions' }, h('button', { className: 'primary', type: 'submit', id: 'approver-invite' }, 'Invite')));
  await redraw();
  replace(card,
    h('h3', {}, 'Approvers: phones and team members'),
    h('p', { className: 'muted small' }, 'A device you invite can decide what waits, from its own key. A phone needs the gate’s https:// address. Removing a device refuses it at once.'),
    form, invitation, h('h4', {}, 'Devices'), list, msg);
  return { card, refresh: redraw };
}
