//! One name per person: a contact and the trust entries of its keys go by the same name,
//! whichever of them the user named (a sender by Edit or on its prompt, a person in People
//! & agents), and a key that joins a person takes theirs.

use crate::open::Tx;
use crate::sql::{args, Optional};
use crate::*;

/// One name per person: `name` becomes contact `id`'s and that of every trust entry of its
/// keys the gate sealed, so the prompt, the lists, Ctrl+K and Activity say the same (an
/// entry put there outside the gate is neither renamed nor, by this write, sealed).
pub(crate) fn name_person(store: &Store, tx: &Tx<'_>, id: i64, name: &str) -> Result<()> {
    tx.execute("UPDATE contacts SET name = ?2 WHERE id = ?1", args![id, name])?;
    let view = store.view(&tx.db())?;
    // Only the keys the gate sealed as the person's (one joined beside it is not renamed).
    for k in crate::contacts::keys_of(&tx.db(), view.as_deref(), id)? {
        if crate::trust::entry_in(&tx.db(), view.as_deref(), &k.key)?.is_some() {
            tx.execute("UPDATE trust SET name = ?2 WHERE public_key = ?1", args![k.key, name])?;
        }
    }
    Ok(())
}

/// The key's row as the gate sealed it, if it is.
fn sealed_key_row(store: &Store, tx: &Tx<'_>, key: &str) -> Result<Option<crate::seal::Cols>> {
    Ok(match store.judge(&tx.db(), crate::seal::CONTACT_KEYS, key)? {
        (crate::seal::Judged::Sealed, cols) => cols,
        _ => None,
    })
}

impl Store {
    /// The user said `key` belongs to contact `id` (it leaves the contact it had; one left
    /// without keys goes). `changed_from`: the contact's verified key it joins beside.
    pub fn contact_add_key(&self, id: i64, key: &str, changed_from: Option<&str>, at: &str) -> Result<()> {
        let key = sender_key(key);
        self.sealed_write(|tx| {
            let Some(name) = tx.query_row("SELECT name FROM contacts WHERE id = ?1", args![id], |r| r.get::<String>(0)).optional()? else {
                return Err(StoreError::Invalid(format!("there is no contact {id}")));
            };
            // A key verified already stays verified where it goes, and is no key change (as
            // the gate sealed its mark: one set beside it is not carried into a sealed row).
            let verified = match sealed_key_row(self, tx, &key)? {
                Some(cols) => cols.get(2).cloned().flatten(),
                None => None,
            };
            let changed_from = if verified.is_some() { None } else { changed_from };
            crate::contacts::forget_key(&tx.db(), &key)?;
            tx.execute(
                "INSERT INTO contact_keys (key, contact_id, added_at, verified_at, changed_from) VALUES (?1, ?2, ?3, ?4, ?5)",
                args![key, id, at, verified, changed_from],
            )?;
            // The key is the person's now, and goes by their name.
            name_person(self, tx, id, &name)
        })
    }

    pub fn contact_rename(&self, id: i64, name: &str) -> Result<()> {
        self.sealed_write(|tx| name_person(self, tx, id, name))
    }

    /// Names `key`'s person as its sender was just named (nothing when it has none).
    pub fn name_person_of(&self, key: &str, name: &str) -> Result<()> {
        let key = sender_key(key);
        self.sealed_write(|tx| match crate::contacts::contact_id_of(&tx.db(), &key)? {
            Some(id) => name_person(self, tx, id, name),
            None => Ok(()),
        })
    }
}
