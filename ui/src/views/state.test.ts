// Rows of the gate's database written behind its back, shown in words under Waiting for
// you: what each was, that it is not acted on (or, a block or revocation, that it holds).
import { stateNotice } from './state';
import { replace } from '../dom';

const key = 'ab'.repeat(32);

test('nothing is shown while the state is as the gate sealed it', () => {
  expect(stateNotice({ version: 4, sealed: 3, broken: null, changes: [] })).toBeNull();
  expect(stateNotice(null)).toBeNull();
});

test('each row changed outside Gatehouse is named with what the gate does about it', () => {
  const el = stateNotice({
    version: 4, sealed: 3, broken: null,
    changes: [
      { table: 'trust', id: key, what: 'added' },
      { table: 'settings', id: 'executors', what: 'changed' },
      { table: 'revoked', id: key, what: 'removed' },
    ],
  });
  replace(document.body, el!);
  expect(document.querySelector('#state-changed h3')?.textContent).toBe('Changed outside Gatehouse');
  const rows = [...document.querySelectorAll('#state-changed li')].map((l) => l.textContent);
  expect(rows).toEqual([
    'A trust entry for Sender abababab was added outside Gatehouse: not acted on.',
    'The setting “executors” was changed outside Gatehouse: not acted on.',
    'The revocation of Sender abababab was taken out outside Gatehouse: it still holds.',
  ]);
  expect(document.querySelector('#state-changed')?.getAttribute('role')).toBe('alert');
});

test('seals that cannot be trusted say that nothing sealed is acted on', () => {
  replace(document.body, stateNotice({ version: 2, sealed: 3, broken: 'an older copy was put back', changes: [] })!);
  expect(document.querySelector('.state-broken')?.textContent).toContain('an older copy was put back. Until this is put right, no trust entry');
});

test('a contact key changed outside Gatehouse says that new keys are held', () => {
  replace(document.body, stateNotice({ version: 4, sealed: 3, broken: null, changes: [{ table: 'contact_keys', id: key, what: 'changed' }, { table: 'contacts', id: '7', what: 'added' }] })!);
  const rows = [...document.querySelectorAll('#state-changed li')].map((l) => l.textContent);
  expect(rows).toEqual([
    'Whose key Sender abababab is, and whether you verified it, was changed outside Gatehouse: not acted on, and every new key of a contact is held until you verify it.',
    'Contact #7 in People & agents was added outside Gatehouse: not acted on.',
  ]);
});
