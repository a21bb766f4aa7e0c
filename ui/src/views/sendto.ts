// The agents you send to: UAMP peers (kept only after the user has seen their signed
// manifest and certificate fingerprint) and A2A agents (their signed card read at the
// address the user entered). Each is an identity of someone the user deals with, so they
// live under People & agents; the protocol is a small label.
import { api, errorText, type AgentRow, type Discovered, type Peer } from '../api';
import { h, replace } from '../dom';
import { act, failed } from './parts';
import { fingerprint } from '../format';

/** A small label naming how something is carried: shown, never navigated by. */
export function proto(name: string): HTMLElement {
  return h('span', { className: 'proto' }, name);
}

export class UampPeers {
  // Built once and only refilled: the view is redrawn whenever anything arrives, and an
  // address being typed or a manifest still being fetched must survive that.
  private table = h('div');
  readonly el = h('div', { className: 'card', id: 'uamp-peers' }, h('h3', {}, 'Agents you ask ', proto('UAMP')), this.table, this.lookup());

  /** `changed` reads the view again, this list with it. */
  constructor(private changed: () => void) {}

  async load(): Promise<void> {
    let peers: Peer[];
    try { peers = await api.uampPeers(); } catch (e) { replace(this.table, failed(e)); return; }
    replace(this.table, peers.length ? h('table', { id: 'peer-table' },
      h('thead', {}, h('tr', {}, ...['Name', 'DID', 'Address', 'Pinned certificate', 'Token', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...peers.map((p) => h('tr', { 'data-did': p.did },
        h('td', { className: 'name' }, p.name),
        h('td', { className: 'mono', title: p.did }, fingerprint(p.did)),
        h('td', { className: 'mono' }, p.url),
        h('td', { className: 'mono small', title: p.cert_sha256 }, `${p.cert_sha256.slice(0, 23)}…`),
        h('td', { title: p.has_token ? 'a token the peer issued to you' : 'this inbox presents its certificate instead' }, p.has_token ? 'in keychain' : 'certificate'),
        h('td', {}, h('button', { className: 'secondary small', onclick: act(() => api.uampPeerRemove(p.did), () => this.changed(), `Remove ${p.name}? Its token is deleted from the keychain.`) }, 'Remove'))))))
      : h('p', { className: 'muted' }, 'No agent yet. Add one by its address: you will see its signed manifest and certificate before anything is kept.'));
  }


  /** The lookup form, the manifest it found and the confirmation: one part, built once. */
  private lookup(): HTMLElement {
    const url = h('input', { id: 'peer-url', type: 'text', placeholder: 'https://host:port', size: 34, 'aria-label': 'Its address' });
    const found = h('div', { id: 'peer-found' });
    const msg = h('p', { role: 'status', id: 'peer-msg' });
    const lookup = h('button', { className: 'secondary', id: 'peer-lookup', type: 'submit' }, 'Look up');
    const done = () => { url.value = ''; replace(found); };
    const form = h('form', { className: 'inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      msg.className = '';
      msg.textContent = 'Fetching its signed manifest…';
      replace(found);
      lookup.disabled = true;
      try {
        const d = await api.uampDiscover(url.value);
        msg.textContent = '';
        replace(found, this.confirm(d, msg, done));
      } catch (err) { msg.textContent = errorText(err); msg.className = 'error'; }
      lookup.disabled = false;
    } }, url, lookup);
    return h('div', {}, form, msg, found);
  }

  /** What the user checks before a peer is kept: the manifest and the fingerprint. */
  private confirm(d: Discovered, msg: HTMLElement, done: () => void): HTMLElement {
    const name = h('input', { id: 'peer-name', type: 'text', required: true, placeholder: 'a name you will recognise' });
    const token = h('input', { id: 'peer-token', type: 'password', placeholder: 'the token it issued to you (optional)', size: 40, autocomplete: 'off' });
    return h('form', { className: 'card confirm', id: 'peer-confirm', onsubmit: async (e: Event) => {
      e.preventDefault();
      try {
        const p = await api.uampPeerAdd({ url: d.url, name: name.value, cert_sha256: d.cert_sha256, token: token.value || null });
        msg.className = 'notice';
        msg.textContent = `Added ${p.name}.`;
        done();
        this.changed();
      } catch (err) { msg.className = 'error'; msg.textContent = errorText(err); }
    } },
      h('p', { className: 'ask' }, 'Its manifest is signed by its DID and the signature checks out. Before you add it, compare the fingerprint with the one its owner sees.'),
      h('dl', {},
        h('dt', {}, 'DID'), h('dd', { className: 'mono', id: 'found-did' }, d.did),
        h('dt', {}, 'Certificate SHA-256'), h('dd', { className: 'mono', id: 'found-cert' }, d.cert_sha256),
        h('dt', {}, 'Describes itself as'), h('dd', {}, d.manifest.description),
        h('dt', {}, 'Understands'), h('dd', {}, d.manifest.intents.join(', ')),
        h('dt', {}, 'Bodies'), h('dd', {}, d.manifest.body_types.join(', '))),
      h('label', {}, h('span', {}, 'Name '), name), ' ',
      h('label', {}, h('span', {}, 'Token '), token),
      h('div', { className: 'actions' }, h('button', { className: 'primary', id: 'peer-add', type: 'submit' }, 'The fingerprint matches: add this agent')));
  }
}

export class A2aAgents {
  private table = h('div');
  readonly el = h('div', { className: 'card', id: 'a2a-agents' }, h('h3', {}, 'Agents you send to ', proto('A2A')), this.table, this.form());

  async load(): Promise<void> {
    let agents: AgentRow[];
    try { agents = await api.a2aAgents(); } catch (e) { replace(this.table, failed(e)); return; }
    replace(this.table, agents.length ? h('table', { id: 'a2a-agent-table' },
      h('thead', {}, h('tr', {}, ...['Name', 'Address', 'Its card calls it', 'Token', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...agents.map((a) => h('tr', { 'data-agent': a.name },
        h('td', { className: 'name' }, a.name),
        h('td', { className: 'mono' }, a.url),
        h('td', { title: 'its own claim' }, a.card_name),
        h('td', {}, a.has_token ? 'in keychain' : 'none'),
        h('td', {}, h('button', { className: 'secondary small', onclick: act(() => api.a2aAgentRemove(a.name), () => this.load(), `Remove ${a.name}? Its token is deleted from the keychain.`) }, 'Remove'))))))
      : h('p', { className: 'muted' }, 'No agents yet. Add one by its address to send it what gets through (choose it as a scope’s executor in Settings).'));
  }

  private form(): HTMLElement {
    const url = h('input', { id: 'a2a-agent-url', type: 'text', required: true, placeholder: 'https://host:port', size: 30, 'aria-label': 'Its address' });
    const name = h('input', { id: 'a2a-agent-name', type: 'text', required: true, placeholder: 'a name you will recognise', 'aria-label': 'Name' });
    const token = h('input', { id: 'a2a-agent-token', type: 'password', placeholder: 'the token it gave you (optional)', size: 32, autocomplete: 'off', 'aria-label': 'Token' });
    const msg = h('p', { role: 'status', id: 'a2a-agent-msg' });
    const add = h('button', { type: 'submit', className: 'secondary', id: 'a2a-agent-add' }, 'Add');
    return h('div', {}, h('form', { className: 'inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      add.disabled = true;
      msg.className = '';
      msg.textContent = 'Reading its card…';
      try {
        const a = await api.a2aAgentAdd({ url: url.value, name: name.value, token: token.value || null });
        msg.className = 'notice';
        msg.textContent = `Added ${a.name} (its card calls it “${a.card_name}”).`;
        url.value = ''; name.value = ''; token.value = '';
        await this.load();
      } catch (err) {
        msg.className = 'error';
        msg.textContent = errorText(err);
      }
      add.disabled = false;
    } }, url, name, token, add), msg);
  }
}
