// MCP servers under Your agents: each server your AI app runs through Gatehouse, with its
// tools as you let them in (and those held from your AI until you accept them), the rules
// for its calls, and its calls with what became of each.
import { api, errorText, type Action, type AsopRule } from '../api';
import type { McpServerItem_Serialize as McpServer, McpTools_Serialize as McpTools } from '../bindings';
import { h, replace } from '../dom';
import { failed, ListDetail } from './parts';
import { ruleText, stepItem } from './steps';
import { toolsList } from './tools';
import { fingerprint, when } from '../format';

const STATE: Record<string, string> = { let_in: 'let in', waiting: 'waiting for you', blocked: 'blocked' };

function described(pin: unknown): string {
  return ((pin ?? {}) as { description?: string }).description || '(no description)';
}

export class McpSection {
  readonly el = h('div', { id: 'mcp-servers' });
  private detail = h('div', { className: 'detail', id: 'mcp-server' }, h('p', { className: 'muted' }, 'Choose a server to see its tools and calls.'));
  private listBox = h('div', { className: 'list' });
  private servers = new ListDetail<McpServer>({
    box: this.listBox, id: 'mcp-server-list', data: 'server', load: () => api.mcpServers(), key: (s) => s.key, first: true,
    row: (s) => [
      h('div', { className: 'row-top' }, h('span', { className: 'who' }, s.shown_as ?? s.name), h('span', { className: `badge state-${s.state}` }, STATE[s.state] ?? s.state), h('time', {}, when(s.since))),
      h('div', { className: 'preview' }, `runs as “${s.name}” · key ${fingerprint(s.key.split(':')[2] ?? '')}`)],
    empty: () => 'No MCP server has come yet. Run one through Gatehouse from your AI app: gatehouse mcp wrap --name NAME -- <its command>.',
    show: (key) => this.show(key),
  });

  async load(): Promise<void> {
    replace(this.el,
      h('h3', {}, 'MCP servers'),
      h('p', { className: 'muted small' }, 'Tool servers your AI app reaches through Gatehouse. Only the tools you let in reach your AI; each call is decided by your rules, or you are asked.'),
      h('div', { className: 'split' }, this.listBox, this.detail));
    await this.servers.reload();
  }

  private async show(key: string): Promise<void> {
    try {
      const [tools, rules, log] = await Promise.all([api.mcpTools(key), api.mcpRules(key), api.mcpLog(key)]);
      replace(this.detail,
        h('h2', {}, tools.server.shown_as ?? tools.server.name),
        h('p', { className: 'muted small' }, `Runs as “${tools.server.name}” in your AI app · ${STATE[tools.server.state] ?? tools.server.state} since ${when(tools.server.since)}`),
        h('p', { className: 'small', title: tools.server.key }, 'Its own key: ', h('span', { className: 'mono' }, fingerprint(tools.server.key.split(':')[2] ?? ''))),
        this.toolsCard(tools),
        this.rulesCard(tools, rules),
        h('h3', {}, 'Calls'),
        log.length ? h('ol', { className: 'asop-timeline', id: 'mcp-timeline' }, ...log.map(stepItem)) : h('p', { className: 'muted' }, 'No calls yet.'));
    } catch (e) {
      replace(this.detail, failed(e));
    }
  }

  private toolsCard(t: McpTools): HTMLElement {
    return h('div', { className: 'card', id: 'mcp-tools' },
      h('h3', {}, 'Tools'),
      t.pinned.length ? h('ul', { className: 'plain' }, ...t.pinned.map((p) => h('li', { 'data-tool': p.tool },
        h('strong', { className: 'mono' }, p.tool), ' — ', described(p.pin), ' ', h('span', { className: 'muted small' }, `let in ${when(p.at)}`))))
        : h('p', { className: 'muted' }, t.server.state === 'let_in' ? 'None let in: each tool it lists waits for you.' : 'Let it in (Waiting for you) to see its tools here.'),
      t.held.length ? h('div', { className: 'held-tools' },
        h('p', {}, h('strong', {}, 'Held from your AI'), ' until you accept them in Waiting for you:'), toolsList(t.held)) : null);
  }

  private rulesCard(t: McpTools, rules: AsopRule[]): HTMLElement {
    const tool = h('select', { 'aria-label': 'Tool' }, h('option', { value: '*' }, 'every tool'), ...t.pinned.map((p) => h('option', { value: p.tool }, p.tool)));
    // Asking is the safe choice, so it comes first.
    const action = h('select', { 'aria-label': 'Then' }, ...[['ask', 'ask me'], ['allow', 'allow'], ['deny', 'deny']].map(([v, l]) => h('option', { value: v }, l)));
    const msg = h('p', { role: 'status' });
    const form = h('form', { className: 'inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      try {
        await api.mcpRuleAdd(t.server.key, { agent: '', method: '', tool: tool.value, condition: null, action: action.value as Action, redact: null, note: null });
        await this.show(t.server.key);
      } catch (err) { msg.className = 'error'; msg.textContent = errorText(err); }
    } }, tool, action, h('button', { className: 'secondary', type: 'submit' }, 'Add rule'));
    return h('div', { className: 'card', id: 'mcp-rules' },
      h('h3', {}, 'What its calls may do'),
      rules.length ? h('ul', { className: 'plain' }, ...rules.map((r) => h('li', { 'data-rule': r.id }, ruleText(r)))) : h('p', { className: 'muted' }, 'No rules: every call is asked about.'),
      t.server.state === 'let_in' ? h('div', {}, form, msg) : null,
      h('p', { className: 'muted small' }, 'Conditions on arguments and redactions: the Rules above (agent ', h('span', { className: 'mono' }, `mcp:${t.server.name}`), ').'));
  }
}
