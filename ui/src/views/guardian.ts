// Your agents (the ASOP guardian): the rules that decide what your agents may do, and each session's
// steps with what was decided and by whom. Steps waiting for you are under "Waiting for you".
import { api, errorText, type Action, type AsopRule, type AsopStep, type Op, type SessionItem } from '../api';
import { h, replace } from '../dom';
import { act, failed, ListDetail } from './parts';
import { when } from '../format';
import { proto } from './sendto';
import { McpSection } from './mcp';
import { OPS, ruleText, stepItem } from './steps';

const METHODS = ['*', 'steps/toolCallRequest', 'steps/toolCallResult', 'steps/message', 'steps/agentTrigger', 'steps/knowledgeRetrieval', 'steps/memoryStore', 'steps/memoryContextRetrieval', 'protocols/A2A', 'protocols/MCP'];

export class GuardianView {
  readonly el = h('section', { className: 'guardian', id: 'view-agents' });
  private sessionBox = h('div', { className: 'detail', id: 'asop-session' }, h('p', { className: 'muted' }, 'Choose a session to see its steps.'));
  private sessionsBox = h('div', { className: 'list' });
  private sessions = new ListDetail<SessionItem>({
    box: this.sessionsBox, id: 'asop-sessions', data: 'session', load: () => api.asopSessions(), key: (s) => s.session_id, first: true,
    row: (s) => [
      h('div', { className: 'row-top' }, h('span', { className: 'who' }, s.agent ?? 'agent'), h('span', { className: 'ptype' }, `${s.steps} steps`), h('time', {}, when(s.last))),
      h('div', { className: 'preview mono' }, s.session_id)],
    empty: () => 'No agent has asked yet.', show: (id) => this.showSession(id),
  });
  private mcp = new McpSection();
  // Built once: a rule being written must survive the redraws that arriving steps cause.
  private ruleList = h('div');
  private rulesPart = h('div', { className: 'card', id: 'asop-rules' }, h('h3', {}, 'Rules'), this.ruleList, this.ruleAdd());

  async load(): Promise<void> {
    try {
      const rules = await api.asopRules();
      replace(this.el,
        h('h2', {}, 'Your agents ', proto('ASOP guardian')),
        h('p', { className: 'muted small' }, 'Your own agents ask Gatehouse before they act. The most specific rule decides; with no rule, you are asked.'),
        h('details', { className: 'muted small' }, h('summary', {}, 'Connecting an agent'), h('p', {}, 'An agent that speaks ASOP sends its steps to /asop/v1 at the address in Settings → This inbox.')),
        this.rulesCard(rules),
        h('h3', {}, 'Sessions'),
        h('div', { className: 'split' }, this.sessionsBox, this.sessionBox),
        this.mcp.el);
      await Promise.all([this.sessions.reload(), this.mcp.load()]);
    } catch (e) {
      replace(this.el, failed(e));
    }
  }

  private rulesCard(rules: AsopRule[]): HTMLElement {
    replace(this.ruleList, rules.length ? h('ul', { className: 'plain', id: 'rule-list' }, ...rules.map((r) => h('li', { 'data-rule': r.id },
      h('span', {}, ruleText(r)), ' ', r.source === 'always' ? h('span', { className: 'badge' }, 'from an answer') : null, ' ',
      r.until ? h('span', { className: 'muted small' }, `${Date.parse(r.until) > Date.now() ? 'until' : 'ended'} ${when(r.until)} `) : null,
      h('button', { className: 'secondary small', onclick: act(() => api.asopRuleRemove(r.id), () => this.load()) }, 'Remove'))))
      : h('p', { className: 'muted' }, 'No rules yet: every step is asked about.'));
    // The card itself is kept: moving the form into a new one would blur what is typed.
    return this.rulesPart;
  }

  private ruleAdd(): HTMLElement {
    const agent = h('input', { id: 'rule-agent', type: 'text', 'aria-label': 'Agent', placeholder: 'agent id, provider:Name or *', size: 18 });
    const method = h('select', { id: 'rule-method', 'aria-label': 'Step' }, ...METHODS.map((m) => h('option', { value: m }, m === '*' ? 'any step' : m)));
    const tool = h('input', { id: 'rule-tool', type: 'text', 'aria-label': 'Tool', placeholder: 'tool id or *', size: 12 });
    const arg = h('input', { id: 'rule-arg', type: 'text', 'aria-label': 'Argument', placeholder: 'argument (optional)', size: 20 });
    const op = h('select', { id: 'rule-op', 'aria-label': 'Condition' }, ...OPS.map(([o, t]) => h('option', { value: o }, t)));
    const val = h('input', { id: 'rule-value', type: 'text', 'aria-label': 'Value', placeholder: 'value', size: 14 });
    const action = h('select', { id: 'rule-action', 'aria-label': 'Then' }, ...['ask', 'allow', 'deny', 'modify'].map((a) => h('option', { value: a }, a)));
    const redact = h('input', { id: 'rule-redact', type: 'text', 'aria-label': 'Pattern to redact', placeholder: 'pattern to redact (modify)', size: 18 });
    const msg = h('p', { role: 'status', id: 'rule-msg' });
    const form = h('form', { className: 'inline', onsubmit: async (e: Event) => {
      e.preventDefault();
      try {
        await api.asopRuleAdd({ agent: agent.value, method: method.value, tool: tool.value, condition: arg.value.trim() ? { argument: arg.value.trim(), op: op.value as Op, value: val.value } : null, action: action.value as Action, redact: redact.value || null, note: null });
        msg.className = '';
        msg.textContent = '';
        form.reset();
        await this.load();
      } catch (err) { msg.className = 'error'; msg.textContent = errorText(err); }
    } }, agent, method, tool, arg, op, val, action, redact, h('button', { className: 'primary', id: 'rule-add', type: 'submit' }, 'Add rule'));
    return h('div', {}, form, msg);
  }

  private async showSession(id: string): Promise<void> {
    try {
      const steps = await api.asopSession(id);
      replace(this.sessionBox,
        h('h2', {}, `Session ${id}`),
        h('ol', { className: 'asop-timeline', id: 'asop-timeline' }, ...steps.map((s) => this.step(s))));
    } catch (e) {
      replace(this.sessionBox, failed(e));
    }
  }

  private step(s: AsopStep): HTMLElement {
    return stepItem(s);
  }
}
