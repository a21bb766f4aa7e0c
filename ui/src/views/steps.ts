// The guardian's words shared by its views: a rule in a sentence, a step in a timeline.
import { asShape, type AsopCondition, type AsopRule, type AsopStep, type Flag } from '../api';
import { h } from '../dom';
import { when } from '../format';
import { kindWords } from './risk';

/** What answered a step that went on, as the door that relayed it read it. */
interface StepAnswer { bytes: number; failed: boolean; excerpt: string; flags: Flag[] }

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The answer's first words, its size, and what in it looks like an attempt to steer the AI. */
export function answerBlock(step: AsopStep): HTMLElement | null {
  const a = asShape<StepAnswer | null>(step.answer ?? null);
  if (!a) return null;
  const flags = a.flags ?? [];
  return h('div', { className: `step-answer${a.failed ? ' failed' : ''}`, 'data-flags': String(flags.length) },
    h('p', { className: 'muted small' }, `${a.failed ? 'Answered with a failure' : 'Answered'} · ${size(a.bytes)} · passed to your AI app as it came`),
    a.excerpt ? h('blockquote', { className: 'prompt answer-excerpt' }, a.excerpt) : null,
    flags.length ? h('div', { className: 'risk-flags', role: 'note', 'aria-label': 'Warnings about this answer' },
      h('p', { className: 'risk-head' }, `⚠ This answer has ${flags.length === 1 ? 'something that looks' : `${flags.length} things that look`} like an attempt to steer your AI:`),
      h('ul', {}, ...flags.map((f) => h('li', { 'data-kind': f.kind }, h('strong', {}, `${kindWords[f.kind]}: `), f.why)))) : null);
}

// The first is what a new condition starts as: the plainest one.
export const OPS: [string, string][] = [['equals', 'is'], ['not_equals', 'is not'], ['contains', 'contains'], ['not_contains', 'does not contain'], ['ends_with', 'ends with'], ['not_ends_with', 'does not end with'], ['matches', 'matches (regex)']];

export function ruleText(r: AsopRule): string {
  const who = r.agent === '*' ? 'any agent' : r.agent.startsWith('provider:') ? `any agent of ${r.agent.slice(9)}` : `agent ${r.agent}`;
  const what = r.tool !== '*' ? `tool ${r.tool}` : r.method === '*' ? 'any step' : r.method;
  const c = asShape<AsopCondition | null>(r.condition);
  const cond = c ? ` when ${c.argument} ${OPS.find(([o]) => o === c.op)?.[1] ?? c.op} “${c.value}”` : '';
  const act = r.action === 'modify' ? `allow with “${r.redact}” redacted` : r.action;
  return `${who}, ${what}${cond}: ${act}`;
}

/** One step in a timeline: what was decided, by what, and the request itself. */
export function stepItem(s: AsopStep): HTMLElement {
  return h('li', { className: `asop-step decision-${s.decision}`, 'data-decision': s.decision },
    h('div', { className: 'mail-head' },
      h('span', { className: `badge decision-${s.decision}` }, s.decision),
      h('span', { className: 'msg-type' }, s.method),
      h('span', { className: 'muted small' }, `by ${s.decided_by ?? '—'}${s.turn_id ? ` · turn ${s.turn_id}` : ''}`),
      h('time', {}, when(s.created_at))),
    h('div', {}, s.summary),
    s.message ? h('div', { className: 'muted small' }, s.message) : null,
    answerBlock(s),
    h('details', {}, h('summary', {}, 'Request'), h('pre', { className: 'json' }, JSON.stringify(s.request, null, 2))));
}
