// Who may reach your AI, for what, how often: the form that trusts a key (or edits what a
// trusted key may do), a trusted key's limits in words, and what is allowed for a while.
import { api, errorText, type EppFacts_Deserialize, type Policy, type Policy_Deserialize, type TimedGrant, type TrustRow } from '../api';
import { h, replace } from '../dom';
import { isSenderId, optionalNumber, parseScopes, scopesText, when } from '../format';

const MB = 1024 * 1024;

/** What a trusted key may ask about (and until when, for a scope granted for a while). */
export function scopesOf(p: Policy): HTMLElement {
  return h('span', { className: 'scopes' }, scopesText(p.allowed_scopes),
    ...Object.entries(p['x-grant-until'] ?? {}).map(([scope, until]) => h('span', { className: 'muted small' }, ` · “${scope}”: ${Date.parse(until) > Date.now() ? 'until' : 'ended'} ${when(until)}`)));
}

/** A trusted key's limits in words. */
export function limitsText(p: Policy): string {
  return [
    `up to ${(p.max_envelope_size / MB).toFixed(p.max_envelope_size % MB ? 2 : 0)} MB`,
    p.rate_limit.max_per_hour != null ? `${p.rate_limit.max_per_hour}/hour` : null,
    p.rate_limit.max_per_day != null ? `${p.rate_limit.max_per_day}/day` : null,
    p['x-hold-for-consent'] ? 'asks you first' : null,
    p['x-allow-delegation'] ? null : 'no delegation',
  ].filter(Boolean).join(' · ');
}

export function trustForm(box: HTMLElement, existing: TrustRow | null, saved: () => Promise<void>, prefill?: { key: string; name?: string; replyTo?: string }): void {
  const p = existing?.policy;
  const key = h('input', { id: 'trust-key', type: 'text', value: existing?.public_key ?? prefill?.key ?? '', placeholder: '64 hexadecimal characters', readonly: !!existing, size: 66 });
  const name = h('input', { id: 'trust-name', type: 'text', value: existing?.name ?? prefill?.name ?? '', placeholder: 'e.g. Dr. Lee' });
  const scopes = h('input', { id: 'trust-scopes', type: 'text', value: p ? p.allowed_scopes.join(', ') : '', placeholder: 'support, billing — or * for everything' });
  const size = h('input', { id: 'trust-size', type: 'number', min: 1, step: 'any', value: p ? p.max_envelope_size / MB : 10 });
  const hour = h('input', { id: 'trust-per-hour', type: 'number', min: 0, value: p?.rate_limit.max_per_hour ?? '', placeholder: 'no limit' });
  const day = h('input', { id: 'trust-per-day', type: 'number', min: 0, value: p?.rate_limit.max_per_day ?? '', placeholder: 'no limit' });
  const hold = h('input', { id: 'trust-hold', type: 'checkbox', checked: p?.['x-hold-for-consent'] ?? false });
  const deleg = h('input', { id: 'trust-delegation', type: 'checkbox', checked: p?.['x-allow-delegation'] ?? true });
  // Where answers go is kept by the EPP door for its senders; another door's entry has none.
  const epp = existing?.facts.epp;
  const eppSender = !existing || existing.door === 'epp';
  const replyTo = h('input', { id: 'trust-reply-endpoint', type: 'text', value: epp?.reply_endpoint ?? prefill?.replyTo ?? '', placeholder: 'http://their-inbox/epp/v1/submit or mailto:agent@example.com (optional)', size: 40 });
  const autoReply = h('input', { id: 'trust-auto-reply', type: 'text', value: (p?.['x-auto-reply-scopes'] ?? []).join(', '), placeholder: 'none: you review each answer', size: 30 });
  const err = h('p', { className: 'error', role: 'alert' });
  const save = async (ev: Event) => {
    ev.preventDefault();
    try {
      if (!isSenderId(key.value)) throw new Error('Paste an EPP public key (64 hexadecimal characters) or a UAMP agent\'s did:key / did:web.');
      const policy: Policy_Deserialize = {
        allowed_scopes: parseScopes(scopes.value),
        max_envelope_size: Math.round(Number(size.value) * MB),
        rate_limit: { max_per_hour: optionalNumber(hour.value), max_per_day: optionalNumber(day.value) },
        'x-hold-for-consent': hold.checked,
        'x-allow-delegation': deleg.checked,
        'x-consent-granted-scopes': p?.['x-consent-granted-scopes'] ?? [],
        'x-auto-reply-scopes': parseScopes(autoReply.value),
        // Granted from a prompt for a while; kept until it is granted again or removed.
        'x-grant-until': p?.['x-grant-until'] ?? {},
        // Lifted by verifying the key, never by this form.
        'x-key-change-unverified': p?.['x-key-change-unverified'] ?? false,
      };
      const facts: EppFacts_Deserialize | null = eppSender ? {
        reply_endpoint: replyTo.value.trim() || null,
        // Set when it was let in from a mail, or from the CLI (its EPP v1.1 capability
        // limit); this form does not edit them, so they are kept.
        mail_address: epp?.mail_address ?? null,
        capabilities: epp?.capabilities ?? null,
      } : null;
      const input = { public_key: key.value.trim(), name: name.value.trim(), policy, epp: facts };
      await (existing ? api.trustUpdate(input) : api.trustAdd(input));
      replace(box);
      await saved();
    } catch (e) {
      err.textContent = errorText(e);
    }
  };
  const row = (label: string, input: HTMLElement, help?: string) => h('label', {}, h('span', {}, label), input, help ? h('small', {}, help) : null);
  replace(box, h('form', { className: 'card trust-form', id: 'trust-form', onsubmit: save },
    h('h3', {}, existing ? `Edit ${existing.name}` : 'Add a trusted sender'),
    row('Public key', key),
    row('Name', name, 'How this sender is shown to you.'),
    row('May ask about (scopes)', scopes, 'Comma-separated; * allows every scope.'),
    row('Largest message (MB)', size),
    row('At most per hour', hour),
    row('At most per day', day),
    h('label', { className: 'check' }, hold, ' Ask me before passing their messages on'),
    h('label', { className: 'check' }, deleg, ' Allow messages sent on behalf of someone else'),
    eppSender ? row('Send answers back to', replyTo, 'Their inbox address: what your AI answers goes back to them, signed by you.') : null,
    row('Without review for (scopes)', autoReply, 'Answers in these scopes go back at once; others wait for you to read and approve them.'),
    err,
    h('div', { className: 'actions' },
      h('button', { className: 'primary', type: 'submit', id: 'trust-save' }, existing ? 'Save changes' : 'Trust this sender'),
      h('button', { className: 'secondary', type: 'button', onclick: () => replace(box) }, 'Cancel'))));
  (existing || prefill ? name : key).focus();
}

/** Scopes allowed for a while, ending first: the user sees what is about to lapse (and
 *  what has, whose next message will ask again). */
export function timedGrants(grants: TimedGrant[]): HTMLElement | null {
  if (!grants.length) return null;
  return h('section', { className: 'card timed-grants', id: 'timed-grants' },
    h('h3', {}, 'Allowed for a while'),
    h('ul', {}, ...grants.map((g) => h('li', { 'data-key': g.public_key, 'data-scope': g.scope, className: g.ended ? 'ended' : '' },
      h('strong', {}, g.name), ` for “${g.scope}”: `,
      g.ended ? `ended ${when(g.until)} — its next message in this scope will ask you again.` : `ends ${when(g.until)}.`))));
}
