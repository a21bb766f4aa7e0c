// How agents reach this gate, beside the ports in Settings: the UAMP identity and
// certificate peers pin, and the A2A address with its plain-HTTP switch for agents on
// this computer.
import { api, errorText, type A2aInfo } from '../api';
import { h, replace } from '../dom';
import { failed } from './parts';
import { proto } from './sendto';

export class DoorCards {
  readonly el = h('div', { className: 'pair', id: 'door-cards' });
  private plainSaid = h('p', { role: 'status', id: 'a2a-plain-msg', className: 'muted small' });
  /** Which read is the newest: only it draws (an older one answering last would draw what was). */
  private reads = 0;

  async load(): Promise<void> {
    const read = ++this.reads;
    try {
      const [uamp, a2a] = await Promise.all([api.uampInfo(), api.a2aInfo()]);
      if (read !== this.reads) return;
      replace(this.el, this.uampCard(uamp.did, uamp.cert_sha256, uamp.listening, uamp.error), this.a2aCard(a2a));
    } catch (e) {
      if (read !== this.reads) return;
      // What the switch just said stays in view: the change was made, only the read failed.
      replace(this.el, failed(e), this.plainSaid);
    }
  }

  private uampCard(did: string, cert: string, listening: string | null, error: string | null): HTMLElement {
    return h('div', { className: 'card' },
      h('h3', {}, 'Agents that pin this gate ', proto('UAMP')),
      h('dl', {},
        h('dt', {}, 'DID'), h('dd', { className: 'mono', id: 'uamp-did' }, did),
        h('dt', {}, 'Certificate SHA-256'), h('dd', { className: 'mono', id: 'uamp-cert' }, cert),
        h('dt', {}, 'Address'), h('dd', { id: 'uamp-address', className: error ? 'error' : '' }, error ?? listening ?? 'not listening (inbox paused)')),
      h('p', { className: 'muted small' }, 'Peers pin this fingerprint when they add you: read it to them over a channel you trust.'));
  }

  private a2aCard(info: A2aInfo): HTMLElement {
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
      h('h3', {}, 'Agents that call this gate ', proto('A2A')),
      h('dl', {},
        h('dt', {}, 'Address (TLS)'), h('dd', { className: 'mono', id: 'a2a-endpoint' }, info.endpoint ?? 'not listening (inbox paused, or its TLS port is taken)'),
        ...(info.plain && info.plain_endpoint ? [h('dt', {}, 'On this computer'), h('dd', { className: 'mono', id: 'a2a-plain-endpoint' }, info.plain_endpoint)] : [])),
      h('p', { className: 'muted small' }, 'Its Agent Card is at /.well-known/agent-card.json on the same address, signed with your key. An agent proves who it is with a token you issued (People & agents → Add someone) or its certificate; an agent with a certificate you do not know waits for you.'),
      h('label', { className: 'check' }, plain, ' Let agents on this computer call over plain HTTP (they still need a token)'),
      said);
  }
}
