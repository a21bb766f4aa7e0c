// Approver devices in Settings: invite a phone or a team member (the approval page's
// address with a one-time code, and its QR code to scan), see the devices, rename or remove one.
import { api, errorText, type Approver } from '../api';
import { h, replace } from '../dom';
import { untilText, when } from '../format';

function deviceRow(a: Approver, msg: HTMLElement, redraw: () => Promise<void>): HTMLElement {
  const remove = h('button', { className: 'secondary danger', 'data-action': 'remove', onclick: async () => {
    try {
      await api.approverRemove(a.id);
      msg.textContent = `Removed ${a.name}: its requests are refused from now on.`;
      await redraw();
    } catch (e) { msg.textContent = errorText(e); }
  } }, 'Remove');
  remove.setAttribute('aria-label', `Remove ${a.name}`);
  const name = h('input', { type: 'text', className: 'approver-name', value: a.name, maxLength: 80, 'aria-label': `New name for ${a.name}` });
  const rename = h('form', { className: 'inline', onsubmit: async (e: Event) => {
    e.preventDefault();
    try {
      await api.approverRename(a.id, name.value);
      msg.textContent = `Renamed ${a.name} to ${name.value.trim()}.`;
      await redraw();
    } catch (err) { msg.textContent = errorText(err); }
  } }, name, h('button', { className: 'secondary', type: 'submit', 'data-action': 'rename' }, 'Rename'));
  return h('li', { className: 'approver', 'data-id': a.id },
    h('strong', {}, a.name), ' ',
    h('span', { className: 'muted small' }, a.last_seen ? `last seen ${when(a.last_seen)}` : 'not seen yet'), ' ',
    rename, ' ', remove);
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
  const redraw = async (): Promise<void> => {
    try {
      const devices = await api.approversList();
      known = new Set(devices.map((a) => a.id));
      replace(list, ...(devices.length ? devices.map((a) => deviceRow(a, msg, redraw)) : [h('li', { className: 'muted' }, 'No devices yet.')]));
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
      replace(invitation,
        h('p', {}, `Scan this with ${v.invitation.name}, or open the link on it. The code works once, ${untilText(v.invitation.expires_at)}.`),
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
