// The approval page a phone (or any browser) opens from an invitation: it makes a P-256
// key the page cannot read back (WebCrypto, non-extractable, kept in this browser's
// IndexedDB), registers it with the invitation's code, then signs every request it makes
// (crates/app/src/approvers.rs says what is signed). Nothing the page shows is trusted by
// the gate: every decision is checked there against what waits and who signed it.
// Served by the gate itself (crates/app/src/approve_http.rs), not part of the window's build.
/* global document, window, location, history, indexedDB, crypto, fetch, btoa, TextEncoder, TextDecoder, URLSearchParams, setTimeout, clearTimeout */

const main = document.getElementById('main');
const status = document.getElementById('status');
const who = document.getElementById('who');
const enc = new TextEncoder();
const ALGO = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGN = { name: 'ECDSA', hash: 'SHA-256' };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'onclick' || k === 'onsubmit') e.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined) e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function say(text, kind) {
  status.textContent = text;
  status.className = kind || '';
}

const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const hex = (bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');

// The device, kept in this browser: its id, the gate's key, and the private key itself
// (a CryptoKey: stored as an object the page can use but never export).
function db() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open('gatehouse-approver', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('device');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}
async function stored(op, ...args) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const t = d.transaction('device', op === 'get' ? 'readonly' : 'readwrite');
    const r = t.objectStore('device')[op](...args);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function sign(key, text) {
  return b64url(await crypto.subtle.sign(SIGN, key, enc.encode(text)));
}

let gateKey = '';
let device = null;

async function signedRequest(method, path, body) {
  const text = body === undefined ? '' : JSON.stringify(body);
  const date = new Date().toISOString();
  const nonce = hex(crypto.getRandomValues(new Uint8Array(16)));
  const digest = hex(await crypto.subtle.digest('SHA-256', enc.encode(text)));
  const signature = await sign(device.key, `gatehouse-approver-request/1\n${gateKey}\n${method}\n${path}\n${date}\n${nonce}\n${digest}`);
  return fetch(path, {
    method,
    headers: { 'content-type': 'application/json', 'gatehouse-approver': device.id, 'gatehouse-date': date, 'gatehouse-nonce': nonce, 'gatehouse-signature': signature },
    body: text || undefined,
  });
}

async function removed() {
  await stored('delete', 'device');
  device = null;
  who.textContent = '';
  showJoin('', 'This device was removed from the gate. An owner can invite it again.');
}

async function signedFetch(method, path, body) {
  const r = await signedRequest(method, path, body);
  const answer = await r.json().catch(() => ({}));
  if (r.status === 401 && /removed/.test(answer.message || '')) {
    await removed();
    throw new Error('removed');
  }
  if (!r.ok) throw new Error(answer.message || `the gate answered ${r.status}`);
  return answer;
}

// The gate says when what waits changed (here or at another node of a team's gate); the
// list is read again then. One long request, opened again when it ends: no polling.
let following = false;
let redraw = null;
async function follow() {
  if (following) return;
  following = true;
  const dec = new TextDecoder();
  while (device) {
    try {
      const r = await signedRequest('GET', '/approve/events');
      if (r.status === 401) { await removed(); break; }
      const reader = r.body.getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (/^event: removed/m.test(event)) { await removed(); following = false; return; }
          if (/^event: waiting/m.test(event)) {
            clearTimeout(redraw);
            redraw = setTimeout(() => { if (device) void showWaiting(); }, 100);
          }
        }
      }
    } catch {
      // The gate restarted or the network dropped: try again shortly.
    }
    await new Promise((ok) => setTimeout(ok, 2000));
  }
  following = false;
}

function showJoin(code, why) {
  const name = el('input', { id: 'join-name', autocomplete: 'off', maxlength: '80', placeholder: 'as the invitation names it' });
  const codeInput = el('input', { id: 'join-code', autocomplete: 'one-time-code', autocapitalize: 'characters', value: code, maxlength: '16' });
  if (why) say('');
  main.replaceChildren(...[
    el('h2', {}, 'Join this gate as an approver'),
    why ? el('p', { class: 'bad' }, why) : null,
    el('p', { class: 'muted' }, 'This device makes a key of its own and registers it with the code you were given. Every decision it sends is signed with that key.'),
    el('form', { id: 'join', onsubmit: (e) => { e.preventDefault(); void join(codeInput.value.trim(), name.value.trim()); } },
      el('label', { for: 'join-name' }, 'Name this device (optional)'), name,
      el('label', { for: 'join-code' }, 'Invitation code'), codeInput,
      el('div', { class: 'actions' }, el('button', { class: 'primary', type: 'submit', id: 'join-button' }, 'Join'))),
    el('p', { class: 'muted mono' }, `Gate key ${gateKey}`),
  ].filter((e) => e !== null));
}

async function join(code, name) {
  say('Making this device’s key…');
  try {
    const keys = await crypto.subtle.generateKey(ALGO, false, ['sign', 'verify']);
    const publicKey = b64url(await crypto.subtle.exportKey('raw', keys.publicKey));
    const signature = await sign(keys.privateKey, `gatehouse-approver-join/1\n${gateKey}\n${code}\n${publicKey}`);
    const r = await fetch('/approve/join', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, name, public_key: publicKey, signature }) });
    const answer = await r.json().catch(() => ({}));
    if (!r.ok) { say(answer.message || `the gate answered ${r.status}`, 'bad'); return; }
    device = { id: answer.id, name: answer.name, gateKey, key: keys.privateKey };
    await stored('put', device, 'device');
    // The code is spent: take it out of the address bar and the history.
    history.replaceState(null, '', '/approve');
    say(`Joined as ${answer.name}.`, 'ok');
    await showWaiting();
    void follow();
    void witness();
  } catch (e) {
    say(`Could not join: ${e.message}`, 'bad');
  }
}

const decisions = [
  ['allow_once', 'Allow once', ''],
  ['always_allow_scope', 'Always allow', 'primary'],
  ['deny', 'Deny', ''],
  ['block', 'Block', 'danger'],
];
// An agent's step (an MCP server's tool call among them) is allowed or denied, as the
// window does; an MCP server's changed tools are kept held unless accepted.
const decisionsOf = {
  guardian_step: [['allow_once', 'Allow', ''], ['deny', 'Deny', '']],
  tool_change: [['deny', 'Keep held', 'primary'], ['always_allow_scope', 'Accept', ''], ['block', 'Block the server', 'danger']],
};

function describe(item) {
  const i = item.item;
  const parts = [];
  if (i.kind === 'unknown_sender' && i.known_as) {
    parts.push(el('h3', {}, `${i.known_as} asks to reach your AI for “${i.scope || '?'}”, which you have not allowed it`));
  } else if (i.kind === 'unknown_sender') {
    parts.push(el('h3', {}, `A new sender asks to reach your AI for “${i.scope || '?'}”`));
    if (i.covered_total > 0) parts.push(el('p', { class: 'muted' }, `“Always allow” would also let in ${i.covered_total} earlier message${i.covered_total === 1 ? '' : 's'} in this scope.`));
  } else if (i.kind === 'held' || i.kind === 'held_ask') {
    parts.push(el('h3', {}, `${i.sender_name || 'A trusted sender'} waits for you in “${i.scope}”`));
    if (i.grant_ended) parts.push(el('p', { class: 'muted' }, `Its grant for this scope ended ${i.grant_ended}.`));
  } else if (i.kind === 'key_change') {
    parts.push(el('h3', {}, `${i.sender_name || i.sender} signed with a key not kept for it`), el('p', { class: 'muted' }, 'Check its keys again on the gate before anything from it goes through.'));
  } else if (i.kind === 'guardian_step') {
    parts.push(el('h3', {}, `${i.step.agent_name || i.step.agent_id || 'An agent'} waits for your answer`));
  } else if (i.kind === 'tool_change') {
    const changed = i.tools.filter((t) => t.pinned).length;
    const fresh = i.tools.length - changed;
    const what = [changed ? `changed ${changed === 1 ? 'a tool' : `${changed} tools`} you let in` : null, fresh ? `lists ${fresh === 1 ? 'a new tool' : `${fresh} new tools`}` : null];
    parts.push(el('h3', {}, `“${i.server_name}” ${what.filter((w) => w !== null).join(' and ')}`), el('p', { class: 'muted' }, 'Your AI does not see them, and their calls are refused, until you accept.'));
  }
  // Every field the decision's digest covers, in words (the gate makes the lines): a
  // device approves only what it showed.
  const warnings = item.shown.filter((l) => l.warn);
  if (warnings.length) parts.push(el('ul', { class: 'warnings' }, ...warnings.map((l) => el('li', { class: 'risk' }, `${l.label}: ${l.text}`))));
  parts.push(el('dl', { class: 'shown' }, ...item.shown.filter((l) => !l.warn).flatMap((l) =>
    [el('dt', {}, l.label), el('dd', { class: l.field === 'prompt' ? 'prompt' : '' }, l.text)])));
  const q = item.quorum;
  if (q) {
    parts.push(el('p', { class: 'quorum' }, `Needs ${q.need} of ${q.of.join(', ')} to agree${q.deny_ends ? '; one deny ends it' : ''}.`));
    const words = { allow_once: 'allow once', always_allow_scope: 'always allow', deny: 'deny', block: 'block' };
    const so = q.votes.map((v) => { const d = JSON.parse(v.decision).decision; return `${v.approver}: ${words[d] || d}`; });
    parts.push(el('p', { class: 'muted votes' }, so.length ? `Decided so far — ${so.join('; ')}` : 'No one has decided yet.'));
  }
  if (item.looking && item.looking.length) parts.push(el('p', { class: 'muted looking' }, `Also looking: ${item.looking.join(', ')}.`));
  return parts;
}

// A decision's confirmation is about that item: it stays while the list holds nothing
// new, and goes as soon as another item arrives (it is never shown under the next item
// as if it were about it).
let drawn = new Set();
let confirmedAmong = null;

async function decide(item, decision, lasting) {
  try {
    const out = await signedFetch('POST', '/approve/decide', { target: item.target, digest: item.digest, decision, lasting: { for: lasting } });
    say(out.message, 'ok');
    confirmedAmong = new Set(drawn);
  } catch (e) {
    if (e.message !== 'removed') say(e.message, 'bad');
  }
  if (device) await showWaiting();
}

// This device is a witness of the gate's activity log: it holds the newest checkpoint the
// gate signed, hands it in, and takes a newer one only when the gate's log still extends
// it. A log rewound behind the gate's back (with its database alone) is told here, and on
// the gate's /ready.
async function witness() {
  const held = (await stored('get', 'checkpoint')) || null;
  let answer;
  try { answer = await signedFetch('POST', '/approve/witness', { held }); } catch { return; }
  const banner = document.getElementById('log-rewound');
  if (answer.intact === false) {
    banner.textContent = `This gate’s activity log was changed behind its back: it no longer holds what the gate signed up to entry #${held.through_id}, which this device saw (${answer.problem || 'entries were removed'}). Tell the gate’s owner.`;
    banner.hidden = false;
    return;
  }
  banner.hidden = true;
  if (answer.newest && (!held || answer.newest.through_id >= held.through_id)) await stored('put', answer.newest, 'checkpoint');
}

async function showWaiting() {
  who.textContent = `This device: ${device.name}`;
  let items;
  try { items = await signedFetch('GET', '/approve/waiting'); } catch (e) { if (e.message !== 'removed') say(e.message, 'bad'); return; }
  if (confirmedAmong && items.some((i) => !confirmedAmong.has(i.digest))) {
    if (status.className === 'ok') say('', '');
    confirmedAmong = null;
  }
  drawn = new Set(items.map((i) => i.digest));
  const cards = items.map((item, n) => {
    const lasting = el('select', { id: `lasting-${n}`, 'aria-label': 'How long “always allow” lasts' },
      el('option', { value: 'always' }, 'for good'), el('option', { value: 'hour' }, 'for an hour'), el('option', { value: 'tonight' }, 'until tonight'));
    const own = decisionsOf[item.item.kind];
    // Safe by default: on an item with a warning (risk flags, a claim of someone else's
    // name, a key not kept), no allow is the main action; Deny is.
    const flagged = item.shown.some((l) => l.warn);
    const look = (d, cls) => (flagged && cls === 'primary' && d !== 'deny' ? '' : flagged && d === 'deny' ? 'primary' : cls);
    const buttons = (own || decisions).map(([d, label, cls]) => el('button', { class: look(d, cls), 'data-decision': d, onclick: () => void decide(item, d, own ? 'always' : lasting.value) }, label));
    return el('section', { class: 'card waiting', 'aria-label': 'Waiting for a decision', 'data-kind': item.item.kind }, ...describe(item),
      ...(own ? [] : [el('label', { for: `lasting-${n}` }, '“Always allow” lasts'), lasting]), el('div', { class: 'actions' }, ...buttons));
  });
  main.replaceChildren(
    el('h2', {}, 'Waiting for a decision'),
    ...(cards.length ? cards : [el('p', { class: 'muted', id: 'nothing' }, 'Nothing waits.')]),
    el('div', { class: 'actions' }, el('button', { id: 'refresh', onclick: () => void showWaiting() }, 'Refresh')),
  );
}

async function start() {
  if (!window.isSecureContext || !crypto.subtle) {
    main.replaceChildren(el('p', { class: 'bad' }, 'This page keeps a key and needs a secure connection: open it through the gate’s https:// address.'));
    return;
  }
  const params = new URLSearchParams(location.hash.slice(1));
  try {
    gateKey = (await (await fetch('/approve/gate')).json()).gate_key;
  } catch {
    say('The gate did not answer.', 'bad');
    return;
  }
  if (params.get('gate') && params.get('gate') !== gateKey) {
    main.replaceChildren(el('p', { class: 'bad' }, 'This is not the gate you were invited to: its key differs from the invitation’s. Do not join.'));
    return;
  }
  device = await stored('get', 'device');
  if (device && device.gateKey === gateKey) { await showWaiting(); void follow(); void witness(); }
  else showJoin(params.get('code') || '');
}

void start();
