// Contacts: who is behind the trusted keys, one card each with every key they hold; a key
// checked out of band (the same safety code on both screens, or the other side's shared
// code pasted) is marked verified; a new key of a verified contact is a warning until it
// is. Also the user's own key, address and QR, to share.
import { api, errorText, type ContactView, type KeyView } from '../api';
import { h, replace } from '../dom';
import { when } from '../format';

/** Pictures of a QR code larger than this are refused (qr::MAX_PICTURE_BYTES). */
const MAX_PICTURE_BYTES = 8 * 1024 * 1024;

/** A file's bytes as base64 (how a picture crosses to Rust). */
export function base64Of(f: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(new Error('The picture could not be read.'));
    r.readAsDataURL(f);
  });
}

/** Asks the window to show a contact's messages (all their keys) in the inbox. */
export const CONTACT_HISTORY = 'gatehouse:contact-history';

const SOURCE: Record<string, string> = { epp_sender: 'EPP key', uamp_agent: 'UAMP agent', intent_site: 'IntentSite key', asop_agent: 'guardian agent', mcp_server: 'MCP server', a2a_agent: 'A2A agent', other_door: 'key at another door' };

/** What a key is, in words. An A2A agent's is what the transport proved: nothing it sends
 *  is signed, and the user sees how it is known. */
export function keyKind(k: KeyView): string {
  if (k.source === 'a2a_agent') {
    return k.key.startsWith('a2a:token:')
      ? 'A2A agent, known by a token you issued (what it sends is not signed)'
      : 'A2A agent, known by its TLS certificate’s key (what it sends is not signed)';
  }
  return SOURCE[k.source] ?? k.source;
}

/** A contact's standing in words (and a class for its colour). */
export function standing(c: ContactView): [string, string] {
  if (c.key_changed) return ['Key changed — verify before anything gets through', 'changed'];
  if (c.verified) return ['Verified', 'verified'];
  return ['Not verified', 'unverified'];
}

export class ContactsPanel {
  private panel = h('div', { id: 'contact-panel' });
  private list = h('div', { className: 'contact-list' });
  readonly el = h('section', { className: 'contacts', id: 'contacts', 'aria-label': 'Contacts' }, this.panel, this.list);
  /** `onChange` reads everything again; `keyParts`: what a key may do and what the user can
   *  do about it (its trust). */
  constructor(private onChange: () => void, private keyParts: (k: KeyView) => (HTMLElement | string)[]) {}

  render(list: ContactView[]): void {
    replace(this.list, ...(list.length ? list.map((c) => this.card(c, list))
      : [h('p', { className: 'empty' }, 'Nobody yet. Add someone by what they gave you (a key, a DID, their QR code), or let one in when they knock.')]));
  }

  private card(c: ContactView, all: ContactView[]): HTMLElement {
    const [words, cls] = standing(c);
    const namesakes = all.filter((o) => c.namesakes.includes(o.id));
    return h('article', { className: `card contact ${cls}`, 'data-contact': c.id },
      h('h3', {}, c.name, ' ', h('span', { className: `badge standing ${cls}` }, words), ' ',
        h('button', { className: 'link history-open', onclick: () => window.dispatchEvent(new CustomEvent(CONTACT_HISTORY, { detail: { id: c.id, name: c.name } })) }, 'Messages')),
      h('ul', { className: 'contact-keys' }, ...c.keys.map((k) => h('li', { 'data-key': k.key },
        h('span', { className: 'mono', title: k.key }, k.fingerprint), ' · ', keyKind(k),
        k.verified_at ? h('span', { className: 'muted small' }, ` · verified ${when(k.verified_at)}`) : null,
        k.blocked ? h('strong', { className: 'error' }, ' · new key, held until verified') : null, ' ',
        // Verified in a way that no longer holds (the old 20-digit code): said, with a way to do it again.
        k.reverify ? h('p', { className: 'reverify warning small' }, `Verify again: ${k.reverify}. `) : null,
        // An A2A agent has no Gatehouse of its own to show a safety code on.
        (k.verified_at && !k.reverify) || k.source === 'a2a_agent' ? null : h('button', { className: 'link verify-open', onclick: () => this.verify(c, k) }, k.reverify ? 'Verify again' : 'Verify'),
        // A did:web's keys live in its DID document, which its owner may change.
        k.key.startsWith('did:web:') ? h('button', { className: 'link check-keys', onclick: () => void this.checkKeys(k) }, 'Check its DID document') : null,
        ...this.keyParts(k)))),
      ...namesakes.map((o) => h('p', { className: 'namesake' },
        `Another contact is also called “${o.name}”, with other keys. If they are the same person, merge them`,
        o.verified ? ` (${o.name} is verified: these keys stay held until you verify them too)` : '', '. ',
        h('button', { className: 'secondary small merge', 'data-into': o.id, onclick: () => void this.merge(c, o) }, `These are ${o.name}’s keys`))));
  }

  /** The user's word that two contacts are one person: this one's keys join the other. */
  private async merge(from: ContactView, into: ContactView): Promise<void> {
    try {
      await api.contactMerge(from.id, into.id);
      replace(this.panel, h('p', { className: 'notice', role: 'status' }, `Merged: ${into.name} now holds ${from.keys.length} more key${from.keys.length === 1 ? '' : 's'}.`));
      this.onChange();
    } catch (e) {
      replace(this.panel, h('p', { className: 'error', role: 'alert' }, errorText(e)));
    }
  }

  /** Fetches a did:web's DID document again and says what changed. */
  private async checkKeys(k: KeyView): Promise<void> {
    replace(this.panel, h('p', { className: 'muted', role: 'status' }, `Fetching the DID document of ${k.fingerprint}…`));
    try {
      const out = await api.contactCheckKeys(k.key);
      replace(this.panel, h('p', { className: out.blocked ? 'key-change' : 'notice', role: 'status', id: 'check-keys-msg' }, out.message));
      this.onChange();
    } catch (e) {
      replace(this.panel, h('p', { className: 'error', role: 'alert' }, errorText(e)));
    }
  }

  /** The verification screen for one key: the code to compare, or their shared code to paste. */
  private verify(c: ContactView, k: KeyView): void {
    const msg = h('p', { role: 'status', id: 'verify-msg' });
    const pasted = h('textarea', { id: 'verify-paste', rows: 2, cols: 50, 'aria-label': `What ${c.name} shared`, placeholder: 'gatehouse:contact?key=…' });
    const done = (v: ContactView) => {
      replace(this.panel, h('p', { className: 'notice', role: 'status', id: 'verify-msg' }, `${v.name}’s key is verified.`));
      this.onChange();
    };
    const fail = (e: unknown) => { msg.textContent = errorText(e); msg.classList.add('error'); };
    // A picture of their QR code (a screenshot they sent, a photo) says what pasting would.
    const readPicture = async (f: File) => {
      msg.classList.remove('error');
      if (f.size > MAX_PICTURE_BYTES) { fail(new Error('That picture is larger than 8 MB: crop it to the QR code.')); return; }
      msg.textContent = 'Reading the QR code…';
      try {
        const text = await api.contactReadQr(await base64Of(f));
        pasted.value = text;
        msg.textContent = 'Read their QR code; checking it…';
        done(await api.contactVerify(k.key, text));
      } catch (e) { fail(e); }
    };
    const picture = h('input', { type: 'file', id: 'verify-picture', accept: 'image/png,image/jpeg', hidden: true,
      onchange: () => { const f = picture.files?.[0]; if (f) void readPicture(f); } });
    const pictureButton = h('button', { className: 'secondary', id: 'verify-picture-open', onclick: () => picture.click() }, 'Open a picture of their QR code');
    const imageIn = (d: DataTransfer | null): File | undefined => [...(d?.files ?? [])].find((f) => f.type.startsWith('image/'));
    pasted.addEventListener('paste', (ev) => { const f = imageIn(ev.clipboardData); if (f) { ev.preventDefault(); void readPicture(f); } });
    replace(this.panel, h('section', { className: 'card verify', id: 'verify-panel', 'aria-label': `Verify ${c.name}` },
      h('h3', {}, `Verify ${c.name}`),
      h('p', {}, `Compare this code with ${c.name}, face to face or on a call you trust. They open Gatehouse → People & agents → your card → Verify, and read theirs out: it must be the same.`),
      h('p', { className: 'safety-code', id: 'safety-code' }, k.safety_code),
      h('p', { className: 'muted small' }, `For their key ${k.fingerprint} and yours. Any other key gives another code.`),
      h('div', { className: 'actions' },
        h('button', { className: 'primary', id: 'verify-match', onclick: () => void api.contactVerify(k.key, null).then(done, fail) }, 'The codes match'),
        h('button', { className: 'secondary', onclick: () => replace(this.panel) }, 'Not now')),
      h('p', {}, `Or paste what ${c.name} shared (the text of their QR code, from their “Share my key”), or a picture of their QR code:`),
      pasted,
      h('div', { className: 'actions' }, h('button', { className: 'secondary', id: 'verify-check', onclick: () => void api.contactVerify(k.key, pasted.value).then(done, fail) }, 'Check it'),
        pictureButton, picture),
      msg));
    const panel = this.panel.querySelector<HTMLElement>('#verify-panel');
    panel?.addEventListener('dragover', (ev) => ev.preventDefault());
    panel?.addEventListener('drop', (ev) => { const f = imageIn(ev.dataTransfer); if (f) { ev.preventDefault(); void readPicture(f); } });
    this.panel.scrollIntoView({ block: 'nearest' });
  }

  /** The user's own key, address and QR, one click from the list. */
  async share(): Promise<void> {
    try {
      const s = await api.identityShare();
      const qr = h('img', { id: 'share-qr', alt: 'QR code of your key and address', width: 180, height: 180 });
      qr.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(s.qr_svg)}`;
      replace(this.panel, h('section', { className: 'card share', id: 'share-panel' },
        h('h3', {}, 'Your key, to share'),
        h('div', { className: 'share-body' },
          h('dl', {},
            h('dt', {}, 'Your key'), h('dd', { className: 'mono', id: 'share-key' }, s.public_key),
            h('dt', {}, 'Your address'), h('dd', { className: 'mono' }, s.address),
            h('dt', {}, 'To paste'), h('dd', { className: 'mono', id: 'share-text' }, s.text)),
          qr),
        h('p', { className: 'muted small' }, 'Others scan the QR code or paste the text into their Gatehouse to reach you and to check it is you.'),
        h('button', { className: 'secondary', onclick: () => replace(this.panel) }, 'Close')));
    } catch (e) {
      replace(this.panel, h('p', { className: 'error' }, errorText(e)));
    }
  }
}
