// Settings: what happens when a sender the user trusts writes about something it is not
// allowed: asked about under Waiting for you (the default), or only refused.
import { api, errorText } from '../api';
import { h } from '../dom';

export async function askNewScopesCard(): Promise<HTMLElement> {
  const said = h('p', { role: 'status', id: 'ask-new-msg', className: 'muted small' });
  const box = h('input', { type: 'checkbox', id: 'ask-new-scopes' });
  try { box.checked = await api.askNewScopesGet(); } catch (e) { said.textContent = errorText(e); }
  box.addEventListener('change', async () => {
    try {
      const ask = await api.askNewScopesSet(box.checked);
      said.className = 'muted small';
      said.textContent = ask ? 'From now on you are asked, as for someone new.' : 'From now on such messages are refused, and you are not asked.';
    } catch (e) {
      box.checked = !box.checked;
      said.className = 'error';
      said.textContent = errorText(e);
    }
  });
  return h('section', { className: 'card', id: 'ask-new' },
    h('h3', {}, 'Someone you trust, about something new'),
    h('p', { className: 'muted small' }, 'When someone you let in for some scopes writes about another one, its message can wait for you under Waiting for you (allow it once, for good, or deny it), or be refused without asking.'),
    h('label', { className: 'check' }, box, ' Ask me'),
    said);
}
