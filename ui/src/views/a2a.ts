// A2A: where agents reach this gate, whether agents on this computer may call without
// TLS, tokens that let a new agent in (shown once), and the agents you send to. Agents
// that knock with a certificate wait under “Waiting for you”, like any stranger.
import { api, errorText, type A2aInfo, type AgentRow } from '../api';
import { h, replace } from '../dom';
import { act, failed } from './parts';

export class A2aView {
  readonly el = h('section', { className: 'a2a', id: 'view-a2a' });
  // Built once and only refilled: the view is redrawn whenever anything arrives, and a
  // token shown once or an address being typed must survive that.
  private tokenOut = h('div', { id: 'a2a-token-out', role: 'status' });
  private plainSaid = h('p', { role: 'status', id: 'a2a-plain-msg', className: 'muted small' });
  private tokenForm = this.tokenCard();
  private agentTable = h('div');
  private agentsPart = h('div', { className: 'card', id: 'a2a-agents' }, h('h3', {}, 'Agents you send to'), this.agentTable, this.agentForm());

  async load(): Promise<void> {
    try {
      const [info, agents] = await Promise.all([api.a2aInfo(), api.a2aAgents()]);
      replace(this.el,
        h('h2', {}, 'Agents (A2A)'),
        h('div', { className: 'uamp-top' }, this.addressCard(info), this.tokenForm),
        this.agentsCard(agents));
    } catch (e) {
      replace(this.el, failed(e));
    }
  }

  private addressCard(info: A2aInfo): HTMLElement {
    const plain = h('input', { type: 'checkbox', id: 'a2a-plain', checked: info.plain });
    const said = this.plainSaid;
    plain.addEventListener('change', async () => {
      try {
        said.className = 'muted small';
        const on = await api.a2aPlainSet(plain.checked);
        said.textContent = on ? 'Agents on this computer may now call over plain HTTP, with a token you issued.' : 'Plain HTTP is off: agents call over TLS only.';
        await this.load();
      } catch (e) {
        plain.checked = !plain.checked;
        said.textContent = errorText(e);
        said.className = 'error';
      }
    });
    return h('div', { className: 'card' },
      h('h3', {}, 'This gate on A2A'),
      h('dl', {},
        h('dt', {}, 'Address (TLS)'), h('dd', { className: 'mono', id: 'a2a-endpoint' }, info.endpoint ?? 'not listening (inbox paused, or its TLS port is taken: see Settings)'),
        ...(info.plain && info.plain_endpoint ? [h('dt', {}, 'On this computer'), h('dd', { className: 'mono', id: 'a2a-plain-endpoint' }, info.plain_endpoint)] : [])),
      h('p', { className: 'muted small' }, 'Its Agent Card is at /.well-known/agent-card.json on the same address, signed with your key. An agent proves who it is with a token you issued or its certificate; an agent with a certificate you do not know waits for you.'),
      h('label', { className: 'check' }, plain, ' Let agents on this computer call over plain HTTP (they still need a token)'),
      said);
  }

  /** A token for a new agent: the contact is made now, the token shown once. */
  private tokenCard(): HTMLElement {
    const name = h('input', { id: 'a2a-token-name', type: 'text', required: true, placeholder: 'what you call this agent' });
    const scopes = h('input', { id: 'a2a-token-scopes', type: 'text', placeholder: 'scopes, comma-separated (default: ask)' });
    const out = this.tokenOut;
    return h('div', { className: 'card' },
      h('h3', {}, 'Let an agent in with a token'),
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
        } catch (err) {
          replace(out, h('p', { className: 'error' }, errorText(err)));
        }
      } }, name, scopes, h('button', { type: 'submit', id: 'a2a-token-issue' }, 'Issue token')),
      out);
  }

  private agentsCard(agents: AgentRow[]): HTMLElement {
    replace(this.agentTable, agents.length ? h('table', { id: 'a2a-agent-table' },
      h('thead', {}, h('tr', {}, ...['Name', 'Address', 'Its card calls it', 'Token', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...agents.map((a) => h('tr', { 'data-agent': a.name },
        h('td', { className: 'name' }, a.name),
        h('td', { className: 'mono' }, a.url),
        h('td', { title: 'its own claim' }, a.card_name),
        h('td', {}, a.has_token ? 'in keychain' : 'none'),
        h('td', {}, h('button', { className: 'secondary small', onclick: act(() => api.a2aAgentRemove(a.name), () => this.load(), `Remove ${a.name}? Its token is deleted from the keychain.`) }, 'Remove'))))))
      : h('p', { className: 'muted' }, 'No agents yet. Add one by its address to send it what gets through (choose it as a scope’s executor in Settings).'));
    return this.agentsPart;
  }

  private agentForm(): HTMLElement {
    const url = h('input', { id: 'a2a-agent-url', type: 'text', required: true, placeholder: 'https://host:port', size: 30 });
    const name = h('input', { id: 'a2a-agent-name', type: 'text', required: true, placeholder: 'a name you will recognise' });
    const token = h('input', { id: 'a2a-agent-token', type: 'password', placeholder: 'the token it gave you (optional)', autocomplete: 'off' });
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
