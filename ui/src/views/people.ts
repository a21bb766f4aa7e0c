// People & agents: everyone who may reach your AI or whom you deal with, one card each
// with every identity they hold (EPP keys, DIDs, UAMP agents, IntentSite keys, A2A
// credentials), what each may ask about and until when, verification, history and
// block; "Add someone" starts from what the user has. Protocols are small labels.
import { api, errorText, type BlockedSender, type ContactView, type KeyView, type TimedGrant, type TrustRow } from '../api';
import { h, replace } from '../dom';
import { act, askFirst, failed } from './parts';
import { base64Of, ContactsPanel } from './contacts';
import { limitsText, scopesOf, timedGrants, trustForm } from './trust';
import { A2aAgents, UampPeers } from './sendto';
import { unnamedName } from '../format';
import type { IntentView } from './intent';

export class PeopleView {
  readonly el = h('section', { className: 'people', id: 'view-people' });
  // Built once and only refilled: the view is redrawn whenever anything arrives, and a
  // form being filled, or a token shown once, must survive that.
  private addBox = h('div', { id: 'people-add' });
  private formBox = h('div', { className: 'form-box' });
  private tokenOut = h('div', { id: 'uamp-token-out', role: 'status' });
  private a2aTokenOut = h('div', { id: 'a2a-token-out', role: 'status' });
  private contacts = new ContactsPanel(() => this.changed(), (k) => this.keyParts(k));
  private rest = h('div');
  private trusted = new Map<string, TrustRow>();
  private blocked = new Set<string>();
  private uampPeers = new UampPeers(() => this.changed());
  private a2aAgents = new A2aAgents();
  // Built once: moving a focused field into a new parent would blur it.
  private reach = h('div', { className: 'pair' }, this.uampPeers.el, this.a2aAgents.el);

  constructor(private onChange: () => void, private intent: IntentView) {}

  private changed(): void {
    this.onChange();
    void this.load();
  }

  /** `all`: opened, or changed here — everything. Otherwise (a message arrived) only what
   *  an arrival can change: the contacts, their grants and today's use; agents and
   *  companies change only by the user's hand. */
  async load(all = true): Promise<void> {
    try {
      const [list, rows, blocked, timed] = await Promise.all([api.contactsList(), api.trustList(), api.blockedList(), api.trustTimedGrants()]);
      this.trusted = new Map(rows.map((r) => [r.public_key, r]));
      this.blocked = new Set(blocked.map((b) => b.public_key));
      if (this.el.firstChild !== this.top) replace(this.el, this.top, this.addBox, this.formBox, this.tokenOut, this.contacts.el, this.rest);
      this.contacts.render(list);
      replace(this.rest, ...this.others(list, rows, timed, blocked));
      if (all) await Promise.all([this.uampPeers.load(), this.a2aAgents.load(), this.intent.loadSites()]);
    } catch (e) {
      replace(this.el, failed(e));
    }
  }

  private top = h('div', { className: 'heading' }, h('h2', {}, 'People & agents'), h('div', { className: 'actions' },
    h('button', { className: 'primary', id: 'people-add-open', onclick: () => this.addSomeone() }, 'Add someone'),
    h('button', { className: 'secondary', id: 'share-open', onclick: () => void this.contacts.share() }, 'Share my key')));

  private others(list: ContactView[], rows: TrustRow[], timed: TimedGrant[], blocked: BlockedSender[]): HTMLElement[] {
    const held = new Set(list.flatMap((c) => c.keys.map((k) => k.key)));
    const loose = rows.filter((r) => !held.has(r.public_key));
    return [
      // A trusted key belongs to a contact from the moment it is trusted; one that does
      // not (an old store) is still shown, with everything it may do.
      ...loose.map((r) => h('article', { className: 'card contact', 'data-loose': r.public_key },
        h('h3', {}, r.name), h('ul', { className: 'contact-keys' }, h('li', { 'data-key': r.public_key }, h('span', { className: 'mono' }, r.fingerprint), ...this.policyParts(r))))),
      timedGrants(timed) ?? h('span'),
      blocked.length ? h('section', { className: 'card', id: 'blocked' }, h('h3', {}, 'Blocked'), h('ul', { className: 'blocked', id: 'blocked-list' }, ...blocked.map((b) =>
        h('li', {}, h('strong', { title: b.public_key }, unnamedName(b.public_key)), ' ', h('span', { className: 'muted' }, b.reason), ' ',
          h('button', { className: 'link', onclick: act(() => api.trustUnblock(b.public_key), () => this.changed()) }, 'Unblock'))))) : h('span'),
      h('h3', {}, 'Agents and companies you reach'),
      this.reach,
      this.intent.sitesEl,
    ];
  }

  /** What a key of a contact may do, and what the user can do about it. */
  private keyParts(k: KeyView): (HTMLElement | string)[] {
    if (this.blocked.has(k.key)) {
      return [h('div', { className: 'key-policy key-blocked' }, h('strong', {}, 'Blocked'), ': nothing it sends gets through. ',
        h('button', { className: 'link unblock', onclick: act(() => api.trustUnblock(k.key), () => this.changed()) }, 'Unblock'))];
    }
    const r = this.trusted.get(k.key);
    return r ? this.policyParts(r) : [h('div', { className: 'key-policy muted small' }, 'Not trusted: what it sends knocks and waits for you.')];
  }

  private policyParts(r: TrustRow): HTMLElement[] {
    const uamp = r.public_key.startsWith('did:');
    return [
      h('div', { className: 'key-policy' }, 'May ask about ', scopesOf(r.policy), h('span', { className: 'muted small' }, ` · ${limitsText(r.policy)} · ${r.used_today} today`)),
      h('div', { className: 'key-actions' },
        h('button', { className: 'secondary small edit', onclick: () => trustForm(this.formBox, r, async () => this.changed()) }, 'Edit'),
        uamp ? h('button', { className: 'secondary small token-issue', 'data-sender': r.public_key, onclick: () => void this.issueToken(r) }, 'Issue token') : null,
        uamp ? h('button', { className: 'secondary small token-revoke', 'data-sender': r.public_key, onclick: () => void this.revokeTokens(r) }, 'Revoke tokens') : null,
        h('button', { className: 'secondary small remove', onclick: askFirst(`Stop trusting ${r.name}? What it sends will knock again.`, 'Stop trusting', () => api.trustRemove(r.public_key), () => this.changed()) }, 'Stop trusting'),
        h('button', { className: 'danger small block', onclick: askFirst(`Block ${r.name}? Nothing it sends will get through.`, 'Block', () => api.trustBlock(r.public_key), () => this.changed()) }, 'Block')),
    ];
  }

  /** A bearer token for a trusted UAMP agent without a client certificate, shown once. */
  private async issueToken(r: TrustRow): Promise<void> {
    try {
      const t = await api.uampTokenIssue(r.public_key);
      replace(this.tokenOut, h('p', { className: 'mono token' }, `Token for ${r.name} (shown once): `, h('span', { className: 'secret' }, t)));
    } catch (e) { replace(this.tokenOut, h('p', { className: 'error' }, errorText(e))); }
  }

  private async revokeTokens(r: TrustRow): Promise<void> {
    if (!confirm(`Revoke every token issued to ${r.name}? It must then use a new one (or its certificate).`)) return;
    try {
      const n = await api.uampTokenRevoke(r.public_key);
      replace(this.tokenOut, h('p', {}, `${n} token${n === 1 ? '' : 's'} of ${r.name} revoked.`));
    } catch (e) { replace(this.tokenOut, h('p', { className: 'error' }, errorText(e))); }
  }

  /** Asks what the user has, and opens the one form that takes it. */
  addSomeone(): void {
    const saved = async () => { replace(this.addBox); this.changed(); };
    const choice = (id: string, label: string, hint: string, open: () => void) =>
      h('button', { className: 'choice', id, type: 'button', onclick: open }, h('strong', {}, label), h('span', { className: 'muted small' }, hint));
    replace(this.addBox, h('section', { className: 'card add-someone', 'aria-label': 'Add someone' },
      h('h3', {}, 'What do you have?'),
      h('div', { className: 'choices' },
        choice('add-key', 'A key or a DID', 'what a person or an agent gave you to trust', () => { replace(this.addBox); trustForm(this.formBox, null, saved); }),
        choice('add-shared', 'What they shared, or their QR code', 'the text from their “Share my key”, or a picture of it', () => this.fromShared(saved)),
        choice('add-site', 'A company’s web address', 'to talk to its IntentSite', () => { replace(this.addBox); this.intent.focusAdd(); }),
        choice('add-agent', 'An agent’s address', 'one you ask or send tasks to', () => { replace(this.addBox); this.uampPeers.el.scrollIntoView({ block: 'nearest' }); document.getElementById('peer-url')?.focus(); }),
        choice('add-token', 'Nothing yet: an agent will call me', 'issue it a token to call this gate with', () => replace(this.addBox, this.tokenCard()))),
      h('button', { className: 'secondary', type: 'button', onclick: () => replace(this.addBox) }, 'Cancel')));
    this.addBox.querySelector<HTMLElement>('button.choice')?.focus();
  }

  /** Their shared text or a picture of their QR code: the key in it fills the trust form. */
  private fromShared(saved: () => Promise<void>): void {
    const text = h('textarea', { id: 'add-shared-text', rows: 2, cols: 50, 'aria-label': 'What they shared', placeholder: 'gatehouse:contact?key=…' });
    const msg = h('p', { role: 'status', id: 'add-shared-msg' });
    const use = (t: string) => {
      try {
        const u = new URL(t.trim());
        const key = u.protocol === 'gatehouse:' ? u.searchParams.get('key') : null;
        if (!key) throw new Error('That is not what Gatehouse shares (it starts with gatehouse:contact?key=).');
        replace(this.addBox);
        trustForm(this.formBox, null, saved, { key, replyTo: u.searchParams.get('address') ?? undefined });
      } catch (e) { msg.className = 'error'; msg.textContent = e instanceof TypeError ? 'That is not what Gatehouse shares (it starts with gatehouse:contact?key=).' : errorText(e); }
    };
    const picture = h('input', { type: 'file', id: 'add-shared-picture', accept: 'image/png,image/jpeg', hidden: true, onchange: async () => {
      const f = picture.files?.[0];
      if (!f) return;
      msg.className = '';
      msg.textContent = 'Reading the QR code…';
      try { use(await api.contactReadQr(await base64Of(f))); } catch (e) { msg.className = 'error'; msg.textContent = errorText(e); }
    } });
    replace(this.addBox, h('section', { className: 'card add-someone' },
      h('h3', {}, 'What they shared'), text,
      h('div', { className: 'actions' },
        h('button', { className: 'primary', id: 'add-shared-use', type: 'button', onclick: () => use(text.value) }, 'Use it'),
        h('button', { className: 'secondary', type: 'button', onclick: () => picture.click() }, 'Open a picture of their QR code'), picture,
        h('button', { className: 'secondary', type: 'button', onclick: () => replace(this.addBox) }, 'Cancel')),
      msg));
    text.focus();
  }

  /** A token for a new agent: the contact is made now, the token shown once. */
  private tokenCard(): HTMLElement {
    const name = h('input', { id: 'a2a-token-name', type: 'text', required: true, placeholder: 'what you call this agent', 'aria-label': 'Its name' });
    const scopes = h('input', { id: 'a2a-token-scopes', type: 'text', placeholder: 'scopes, comma-separated (default: ask)', 'aria-label': 'What it may ask about' });
    const out = this.a2aTokenOut;
    replace(out);
    return h('section', { className: 'card add-someone' },
      h('h3', {}, 'Let an agent in with a token ', h('span', { className: 'proto' }, 'A2A')),
      h('form', { className: 'inline', id: 'a2a-token-form', onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const list = scopes.value.split(',').map((s) => s.trim()).filter((s) => s);
          const issued = await api.a2aTokenIssue(name.value, list);
          replace(out,
            h('p', {}, `${issued.entry.name} may now ask for ${issued.entry.policy.allowed_scopes.join(', ')}. Give it this token; it is not shown again:`),
            h('p', { className: 'mono token secret', id: 'a2a-token' }, issued.token));
          name.value = '';
          scopes.value = '';
          this.onChange();
          void this.load();
        } catch (err) {
          replace(out, h('p', { className: 'error' }, errorText(err)));
        }
      } }, name, scopes, h('button', { type: 'submit', id: 'a2a-token-issue' }, 'Issue token')),
      out,
      h('button', { className: 'secondary', type: 'button', onclick: () => replace(this.addBox) }, 'Done'));
  }
}
