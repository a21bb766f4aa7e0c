// UAMP: this inbox's identity and certificate for peers to pin, the peers you send to
// (added only after you have seen their signed manifest and certificate fingerprint),
// asking a peer with a live progress bar, and every stream in both directions.
import { api, errorText, onUampProgress, type AskProgress, type Discovered, type Peer, type StreamDetail, type StreamView, type TrustRow } from '../api';
import { h, refill, replace } from '../dom';
import { act, failed, ListDetail } from './parts';
import { bytesText, fingerprint, senderLabel, streamStateText, when } from '../format';

export class UampView {
  readonly el = h('section', { className: 'uamp', id: 'view-uamp' });
  private detailBox = h('div', { className: 'detail', id: 'uamp-detail' }, h('p', { className: 'muted' }, 'Choose a stream to see what was asked and what came back.'));
  private progressBox = h('div', { className: 'ask-progress', id: 'uamp-progress' });
  private streamsBox = h('div', { className: 'list', id: 'uamp-streams' });
  private streams = new ListDetail<StreamView>({
    box: this.streamsBox, id: 'stream-list', data: 'stream', load: () => api.uampStreams(), key: (s) => s.stream_id,
    row: (s) => this.streamRow(s), empty: () => 'No UAMP streams yet.', show: (id) => this.showDetail(id),
  });
  /** The ask being followed on screen. */
  private following: string | null = null;
  // Built once and only refilled: the view is redrawn whenever anything arrives, and a
  // token shown once, an address or an ask being typed, or a manifest still being
  // fetched must survive that.
  private tokenOut = h('p', { className: 'mono token', id: 'uamp-token-out' });
  private peerTable = h('div');
  private peersPart = h('div', { className: 'card', id: 'uamp-peers' }, h('h3', {}, 'Peers you send to'), this.peerTable, this.peerLookup());
  private askPeer = h('select', { id: 'ask-peer' });
  private askForm = this.askCard();

  constructor() {
    void onUampProgress((p) => this.onProgress(p));
  }

  async load(): Promise<void> {
    try {
      const [info, peers, trusted] = await Promise.all([api.uampInfo(), api.uampPeers(), api.trustList()]);
      replace(this.el,
        h('h2', {}, 'Agents (UAMP)'),
        h('div', { className: 'uamp-top' }, this.identityCard(info.did, info.cert_sha256, info.listening, info.error), this.tokensCard(trusted)),
        this.peersCard(peers),
        this.askFor(peers),
        h('h3', {}, 'Streams'),
        h('div', { className: 'split' }, this.streamsBox, this.detailBox));
      await this.streams.reload();
    } catch (e) {
      replace(this.el, failed(e));
    }
  }

  private identityCard(did: string, cert: string, listening: string | null, error: string | null): HTMLElement {
    return h('div', { className: 'card' },
      h('h3', {}, 'This inbox on UAMP'),
      h('dl', {},
        h('dt', {}, 'DID'), h('dd', { className: 'mono', id: 'uamp-did' }, did),
        h('dt', {}, 'Certificate SHA-256'), h('dd', { className: 'mono', id: 'uamp-cert' }, cert),
        h('dt', {}, 'Address'), h('dd', { id: 'uamp-address', className: error ? 'error' : '' }, error ?? listening ?? 'not listening (inbox paused)')),
      h('p', { className: 'muted small' }, 'Peers pin this fingerprint when they add you: read it to them over a channel you trust.'));
  }

  /** Bearer tokens for trusted UAMP agents without a client certificate: issued here, shown once. */
  private tokensCard(trusted: TrustRow[]): HTMLElement {
    const agents = trusted.filter((t) => t.public_key.startsWith('did:'));
    const out = this.tokenOut;
    return h('div', { className: 'card' },
      h('h3', {}, 'Tokens for agents you trust'),
      h('p', { className: 'muted small' }, 'An agent that presents a certificate on its own key (mTLS; every Gatehouse does) needs no token. Issue one only for an agent that cannot.'),
      agents.length ? h('ul', { className: 'plain', id: 'uamp-token-list' }, ...agents.map((a) =>
        h('li', {}, h('span', { className: 'who' }, a.name), ' ', h('span', { className: 'mono muted' }, fingerprint(a.public_key)), ' ',
          h('button', { className: 'secondary small', 'data-sender': a.public_key, onclick: async () => {
            try {
              const t = await api.uampTokenIssue(a.public_key);
              replace(out, `Token for ${a.name} (shown once): `, h('span', { className: 'secret' }, t));
            } catch (e) { out.textContent = errorText(e); }
          } }, 'Issue token'), ' ',
          h('button', { className: 'secondary small revoke', 'data-sender': a.public_key, onclick: async () => {
            if (!confirm(`Revoke every token issued to ${a.name}? It must then use a new one (or its certificate).`)) return;
            try {
              const n = await api.uampTokenRevoke(a.public_key);
              out.textContent = `${n} token${n === 1 ? '' : 's'} of ${a.name} revoked.`;
            } catch (e) { out.textContent = errorText(e); }
          } }, 'Revoke tokens'))))
        : h('p', { className: 'muted' }, 'No UAMP agent is trusted yet. When one knocks, it waits for you under “Waiting for you”.'),
      out);
  }

  private peersCard(peers: Peer[]): HTMLElement {
    replace(this.peerTable, peers.length ? h('table', { id: 'peer-table' },
      h('thead', {}, h('tr', {}, ...['Name', 'DID', 'Address', 'Pinned certificate', 'Token', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...peers.map((p) => h('tr', { 'data-did': p.did },
        h('td', { className: 'name' }, p.name),
        h('td', { className: 'mono', title: p.did }, fingerprint(p.did)),
        h('td', { className: 'mono' }, p.url),
        h('td', { className: 'mono small', title: p.cert_sha256 }, `${p.cert_sha256.slice(0, 23)}…`),
        h('td', { title: p.has_token ? 'a token the peer issued to you' : 'this inbox presents its certificate instead' }, p.has_token ? 'in keychain' : 'certificate'),
        h('td', {}, h('button', { className: 'secondary small', onclick: act(() => api.uampPeerRemove(p.did), () => this.load(), `Remove ${p.name}? Its token is deleted from the keychain.`) }, 'Remove'))))))
      : h('p', { className: 'muted' }, 'No peers yet. Add one by its address: you will see its signed manifest and certificate before anything is kept.'));
    // The card itself is kept: moving the form into a new one would blur what is typed.
    return this.peersPart;
  }

  /** The lookup form, the manifest it found and the confirmation: one part, built once. */
  private peerLookup(): HTMLElement {
    const url = h('input', { id: 'peer-url', type: 'text', placeholder: 'https://host:port', size: 34 });
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
        replace(found, this.confirmPeer(d, msg, done));
      } catch (err) { msg.textContent = errorText(err); msg.className = 'error'; }
      lookup.disabled = false;
    } }, url, lookup);
    return h('div', {}, form, msg, found);
  }

  /** What the user checks before a peer is kept: the manifest and the fingerprint. */
  private confirmPeer(d: Discovered, msg: HTMLElement, done: () => void): HTMLElement {
    const name = h('input', { id: 'peer-name', type: 'text', required: true, placeholder: 'a name you will recognise' });
    const token = h('input', { id: 'peer-token', type: 'password', placeholder: 'the token it issued to you (optional)', size: 40, autocomplete: 'off' });
    return h('form', { className: 'card confirm', id: 'peer-confirm', onsubmit: async (e: Event) => {
      e.preventDefault();
      try {
        const p = await api.uampPeerAdd({ url: d.url, name: name.value, cert_sha256: d.cert_sha256, token: token.value || null });
        msg.className = 'notice';
        msg.textContent = `Added ${p.name}.`;
        done();
        await this.load();
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
      h('div', { className: 'actions' }, h('button', { className: 'primary', id: 'peer-add', type: 'submit' }, 'The fingerprint matches: add this peer')));
  }

  /** The ask form, shown once there is a peer to ask; the chosen peer stays chosen. */
  private askFor(peers: Peer[]): HTMLElement {
    refill(this.askPeer, peers.map((p) => [p.did, p.name]));
    this.askForm.hidden = !peers.length;
    return this.askForm;
  }

  private askCard(): HTMLElement {
    const peer = this.askPeer;
    const text = h('textarea', { id: 'ask-text', rows: 2, cols: 60, placeholder: 'What should the agent do? e.g. “512×512 cat”' });
    const send = h('button', { className: 'primary', id: 'ask-send', type: 'submit' }, 'Ask');
    return h('form', { className: 'card', id: 'uamp-ask', onsubmit: async (e: Event) => {
      e.preventDefault();
      if (!text.value.trim()) return;
      send.disabled = true;
      replace(this.progressBox, h('p', { className: 'muted' }, 'Sending…'));
      try {
        this.following = await api.uampAsk(peer.value, text.value);
        this.streams.selected = this.following;
        text.value = '';
      } catch (err) {
        replace(this.progressBox, h('p', { className: 'error', id: 'ask-error' }, errorText(err)));
      }
      send.disabled = false;
    } },
      h('h3', {}, 'Ask a peer'),
      h('div', { className: 'actions' }, peer, text, send),
      this.progressBox);
  }

  private onProgress(p: AskProgress): void {
    if (this.following && p.stream_id !== this.following) return;
    this.following = p.stream_id;
    const bar = h('progress', { id: 'ask-bar', max: 100 });
    // No percentage from the peer: an indeterminate bar (no value) that still moves.
    if (p.pct != null) bar.value = p.pct;
    const done = ['COMPLETED', 'CANCELLED', 'ERROR'].includes(p.state);
    replace(this.progressBox,
      h('div', { className: 'progress-line' },
        bar,
        h('span', { id: 'ask-status', 'data-state': p.state }, `${streamStateText(p.state)} · ${p.frames} frames · ${bytesText(p.bytes)} from ${p.peer}`),
        done ? null : h('button', { className: 'secondary small', id: 'ask-cancel', onclick: () => void api.uampCancel(p.stream_id).catch((e) => alert(errorText(e))) }, 'Cancel')));
    if (done) {
      this.following = null;
      this.streams.selected = p.stream_id;
      void this.showResult(p.stream_id);
      void this.streams.reload();
    }
  }

  /** What came back, right under the ask that asked for it. */
  private async showResult(id: string): Promise<void> {
    try {
      const d = await api.uampStreamDetail(id);
      const result = d.image
        ? h('img', { className: 'result-image', id: 'ask-result-image', src: d.image, alt: 'the image the peer returned' })
        : d.text ? h('pre', { className: 'prompt', id: 'ask-result-text' }, d.text) : null;
      if (result) this.progressBox.appendChild(h('div', { className: 'ask-result' }, result, d.file ? h('p', { className: 'muted small mono' }, `Saved as ${d.file}`) : null));
    } catch (e) {
      this.progressBox.appendChild(failed(e));
    }
  }

  private streamRow(s: StreamView): HTMLElement[] {
    const who = senderLabel(s.peer_name, s.peer);
    return [
      h('div', { className: 'row-top' },
        h('span', { className: 'who' }, s.direction === 'out' ? `You → ${who}` : `${who} → you`),
        h('span', { className: `badge state-${s.state.toLowerCase()}` }, streamStateText(s.state)),
        s.bytes ? h('span', { className: 'ptype' }, bytesText(s.bytes)) : null,
        h('time', {}, when(s.updated_at))),
      h('div', { className: 'preview' }, s.ask?.content ?? '')];
  }

  private async showDetail(id: string): Promise<void> {
    try {
      const d: StreamDetail = await api.uampStreamDetail(id);
      replace(this.detailBox,
        h('h2', {}, d.direction === 'out' ? `You asked ${senderLabel(d.peer_name, d.peer)}` : `${senderLabel(d.peer_name, d.peer)} asked you`),
        h('dl', {},
          h('dt', {}, 'State'), h('dd', { id: 'stream-state' }, `${streamStateText(d.state)}${d.detail ? ` — ${d.detail}` : ''}`),
          h('dt', {}, 'Stream'), h('dd', { className: 'mono' }, d.stream_id),
          h('dt', {}, 'Frames'), h('dd', {}, d.direction === 'in' ? `${d.next_seq} (window ${d.delta_window}, acknowledged up to ${d.acked_seq})` : `${d.next_seq} received (window ${d.delta_window})`),
          d.file ? h('dt', {}, 'Saved as') : null, d.file ? h('dd', { className: 'mono', id: 'stream-file' }, d.file) : null,
          d.mime ? h('dt', {}, 'Type') : null, d.mime ? h('dd', {}, d.mime) : null),
        h('h3', {}, 'Conversation'),
        h('ul', { className: 'thread' }, ...d.thread.map((m) => h('li', { className: 'msg' },
          h('div', { className: 'muted small' }, `${m.direction === 'out' ? 'You' : senderLabel(d.peer_name, m.sender)} · ${m.intent} · ${when(m.received_at)}`),
          h('div', { className: 'prompt' }, m.content)))),
        d.image ? h('h3', {}, 'What came back') : null,
        // A data: URL of a raster image the core checked; the CSP allows only these.
        d.image ? h('img', { className: 'result-image', id: 'stream-image', src: d.image, alt: 'the image the peer returned' }) : null,
        d.text ? h('h3', {}, 'What came back') : null,
        d.text ? h('pre', { className: 'prompt', id: 'stream-text' }, d.text) : null,
        h('details', {}, h('summary', {}, `Frames (${d.frames.length})`), h('pre', { className: 'json' }, JSON.stringify(d.frames, null, 2))));
    } catch (e) {
      replace(this.detailBox, failed(e));
    }
  }
}
