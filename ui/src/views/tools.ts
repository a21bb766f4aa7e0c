// An MCP server's tools as the user is asked about them: with its knock (what letting it
// in lets your AI see), or once a tool differs from what was let in (a new tool, or one
// whose words changed: held from your AI until accepted).
import { api, type ConsentItem, type ConsentTarget, type Decision } from '../api';
import type { ToolShown_Serialize as ToolShown } from '../bindings';
import { h } from '../dom';
import { riskText } from './risk';

type ToolChange = Extract<ConsentItem, { kind: 'tool_change' }>;

function described(pin: unknown): string {
  return ((pin ?? {}) as { description?: string }).description || '(no description)';
}

/** Each tool: new or changed, what it says now (flagged), and what it said before. */
export function toolsList(tools: ToolShown[]): HTMLElement {
  return h('ul', { className: 'mcp-tools' }, ...tools.map((t) => h('li', { 'data-tool': t.tool },
    h('p', {}, h('strong', { className: 'mono' }, t.tool), t.pinned ? ' — changed since you let it in' : ' — new'),
    riskText('blockquote', { className: 'prompt' }, t.words, t.risk, null, 'This tool’s description'),
    t.pinned ? h('p', { className: 'muted small' }, `Before: ${described(t.pinned)}`) : null)));
}

/** What differs, in words: the tools changed since the user let them in, and the new ones. */
function differs(tools: ToolShown[]): string {
  const changed = tools.filter((t) => t.pinned).length;
  const fresh = tools.length - changed;
  return [
    changed ? `changed ${changed === 1 ? 'a tool' : `${changed} tools`} you let in` : null,
    fresh ? `lists ${fresh === 1 ? 'a new tool' : `${fresh} new tools`}` : null,
  ].filter((w) => w !== null).join(' and ');
}

/** Asks about a let-in server's tools that differ: keeping them held is the main action. */
export function toolChangeCard(item: ToolChange, settled: (card: HTMLElement, result: HTMLElement, text: string) => void,
  failed: (card: HTMLElement, result: HTMLElement, e: unknown) => void): HTMLElement {
  const target: ConsentTarget = { kind: 'tool_change', server: item.server, digest: item.digest };
  const result = h('p', { className: 'result', role: 'status' });
  const flagged = item.tools.some((t) => t.risk.some((f) => !f.dismissed));
  const decide = async (d: Decision) => {
    try {
      settled(card, result, (await api.consentDecide(target, d, null, null)).message);
    } catch (e) {
      failed(card, result, e);
    }
  };
  const n = item.tools.length;
  const card: HTMLElement = h('article', { className: 'consent-card tool-change', 'data-kind': 'tool_change', 'data-sender': item.server, tabindex: 0 },
    h('p', { className: 'ask' }, `“${item.server_name}”, an MCP server your AI app uses, ${differs(item.tools)}. `,
      'Your AI does not see ', n === 1 ? 'it' : 'them', ' and ', n === 1 ? 'its calls are' : 'their calls are', ' refused until you accept.'),
    toolsList(item.tools),
    h('div', { className: 'actions' },
      h('button', { className: 'primary', 'data-decision': 'deny', onclick: () => void decide('deny') }, 'Keep held'),
      h('button', { className: flagged ? 'secondary warning' : 'secondary', 'data-decision': 'always_allow_scope', onclick: () => void decide('always_allow_scope') },
        flagged ? 'Accept anyway' : 'Accept'),
      h('button', { className: 'secondary', 'data-decision': 'ask_later', onclick: () => void decide('ask_later') }, 'Ask me later'),
      h('button', { className: 'danger', 'data-decision': 'block', onclick: () => void decide('block') }, 'Block the server')),
    result);
  return card;
}
