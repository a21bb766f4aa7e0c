//! Contacts: the people and organisations behind trusted keys. A key joins a contact when
//! it is trusted (a contact of its own) or when the user says it belongs to one; the
//! store never merges on its own. Both tables are sealed (`seal.rs`): which keys are one
//! person's, and which the user verified, are read only as the gate wrote them.

use std::collections::HashMap;

use crate::seal::{judge_row, Cols, Judged, Table, View, CONTACTS, CONTACT_KEYS};
use crate::sql::{args, Db, Optional, Row};
use serde::Serialize;

use crate::{sender_key, Result, Store, StoreError};

/// One key of a contact.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContactKey {
    pub key: String,
    pub added_at: String,
    /// When the user checked this key out of band (safety code or QR).
    pub verified_at: Option<String>,
    /// The verified key this one joined the contact beside: a key change, blocked until
    /// this key is verified too.
    pub changed_from: Option<String>,
    /// Why its verification should be made again (it stays verified meanwhile).
    pub reverify: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Contact {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    /// Its keys as the gate sealed them (a key row added or changed outside Gatehouse is
    /// not among them).
    pub keys: Vec<ContactKey>,
    /// Whether every contact and key row is as the gate sealed it: when not, a mark taken
    /// out beside the gate (a key's verification) cannot be told from one never made.
    #[serde(skip)]
    pub intact: bool,
}

impl Contact {
    pub fn verified(&self) -> bool {
        self.keys.iter().any(|k| k.verified_at.is_some())
    }

    /// Whether a new key of this contact is held until the user verifies it: the contact
    /// was verified, or its rows were changed outside Gatehouse (then it may have been).
    pub fn holds_new_keys(&self) -> bool {
        self.verified() || !self.intact
    }
}

/// A newly trusted key gets a contact of its own, unless it already has one.
pub(crate) fn ensure_contact(conn: &Db<'_>, key: &str, name: &str, at: &str) -> Result<()> {
    let known = contact_id_of(conn, key)?;
    if known.is_none() {
        let inserted_id = conn.query_row("INSERT INTO contacts (name, created_at) VALUES (?1, ?2) RETURNING id", args![name, at], |r| r.get::<i64>(0))?;
        let id = inserted_id;
        conn.execute("INSERT INTO contact_keys (key, contact_id, added_at) VALUES (?1, ?2, ?3)", args![key, id, at])?;
    }
    Ok(())
}

/// The contact a key belongs to.
pub(crate) fn contact_id_of(db: &Db<'_>, key: &str) -> Result<Option<i64>> {
    db.query_row("SELECT contact_id FROM contact_keys WHERE key = ?1", args![key], |r| r.get(0)).optional()
}

/// A key no longer trusted leaves its contact; a contact left without keys goes.
pub(crate) fn forget_key(conn: &Db<'_>, key: &str) -> Result<()> {
    let id = contact_id_of(conn, key)?;
    if let Some(id) = id {
        conn.execute("DELETE FROM contact_keys WHERE key = ?1", args![key])?;
        conn.execute("DELETE FROM contacts WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM contact_keys WHERE contact_id = ?1)", args![id])?;
    }
    Ok(())
}

/// The keys of contact `id` the gate sealed as its, in the snapshot `db` is in.
pub(crate) fn keys_of(db: &Db<'_>, view: Option<&View>, id: i64) -> Result<Vec<ContactKey>> {
    let sql = format!("SELECT key, {} FROM contact_keys WHERE contact_id = ?1 ORDER BY added_at, key", CONTACT_KEYS.columns());
    let rows = db.prepare_cached(&sql)?.query_map(args![id], key_row)?.collect::<Result<Vec<(String, Cols)>>>()?;
    Ok(rows
        .into_iter()
        .filter(|(key, cols)| judge_row(view, CONTACT_KEYS, key, Some(cols)) == Judged::Sealed)
        .map(|(key, cols)| contact_key(key, cols))
        .collect())
}

fn key_row(r: &Row<'_>) -> Result<(String, Cols)> {
    Ok((r.get(0)?, (1..=CONTACT_KEYS.cols.len()).map(|i| r.get::<Option<String>>(i)).collect::<Result<Cols>>()?))
}

/// A key from its sealed columns (contact, added, verified, changed from, reverify).
fn contact_key(key: String, mut cols: Cols) -> ContactKey {
    let mut take = |i: usize| cols.get_mut(i).and_then(Option::take);
    ContactKey { added_at: take(1).unwrap_or_default(), verified_at: take(2), changed_from: take(3), reverify: take(4), key }
}

/// Every contact the gate sealed, each with the keys it sealed as theirs, read in one
/// snapshot (each table once); and whether both tables are whole: no row added or changed
/// beside the gate, none taken out.
fn everyone(db: &Db<'_>, view: Option<&View>) -> Result<(Vec<Contact>, bool)> {
    let (people, keys) = (CONTACTS.rows(db)?, CONTACT_KEYS.rows(db)?);
    let sealed = |t: &Table, id: &str, cols: &Cols| judge_row(view, t, id, Some(cols)) == Judged::Sealed;
    let mut intact = !view
        .is_some_and(|v| v.seals.keys().any(|(t, id)| (t == CONTACTS.name && !people.contains_key(id)) || (t == CONTACT_KEYS.name && !keys.contains_key(id))));
    let mut theirs: HashMap<String, Vec<ContactKey>> = HashMap::new();
    for (key, cols) in keys {
        if !sealed(CONTACT_KEYS, &key, &cols) {
            intact = false;
            continue;
        }
        theirs.entry(cols.first().cloned().flatten().unwrap_or_default()).or_default().push(contact_key(key, cols));
    }
    let mut all = Vec::new();
    for (id, mut cols) in people {
        let number = id.parse::<i64>();
        if !sealed(CONTACTS, &id, &cols) || number.is_err() {
            intact = false;
            continue;
        }
        let mut keys = theirs.remove(&id).unwrap_or_default();
        keys.sort_by(|a, b| (&a.added_at, &a.key).cmp(&(&b.added_at, &b.key)));
        let mut take = |i: usize| cols.get_mut(i).and_then(Option::take).unwrap_or_default();
        all.push(Contact { id: number.unwrap_or_default(), name: take(0), created_at: take(1), keys, intact: true });
    }
    all.iter_mut().for_each(|c| c.intact = intact);
    all.sort_by_cached_key(|c| (c.name.to_lowercase(), c.id));
    Ok((all, intact))
}

impl Store {
    /// [`everyone`], in one snapshot.
    fn everyone(&self) -> Result<(Vec<Contact>, bool)> {
        self.read(|c| c.snapshot(|db| everyone(db, self.view(db)?.as_deref())))
    }

    pub fn contacts(&self) -> Result<Vec<Contact>> {
        Ok(self.everyone()?.0)
    }

    pub fn contact(&self, id: i64) -> Result<Option<Contact>> {
        Ok(self.everyone()?.0.into_iter().find(|c| c.id == id))
    }

    /// The contact a key belongs to, as the gate sealed the key's row.
    pub fn contact_of(&self, key: &str) -> Result<Option<Contact>> {
        let key = sender_key(key);
        Ok(self.everyone()?.0.into_iter().find(|c| c.keys.iter().any(|k| k.key == key)))
    }

    /// Whether a new key of `key`'s person is held until the user verifies it: their
    /// contact was verified, or the contacts were changed outside Gatehouse (it may have
    /// been, and the mark taken out).
    pub fn holds_new_keys(&self, key: &str) -> Result<bool> {
        let key = sender_key(key);
        let (all, intact) = self.everyone()?;
        Ok(match all.into_iter().find(|c| c.keys.iter().any(|k| k.key == key)) {
            Some(c) => c.holds_new_keys(),
            None => !intact,
        })
    }

    /// The keys a key's contact holds, by contact (for the inbox's "everything they sent").
    pub(crate) fn contact_keys_of(&self, id: i64) -> Result<Vec<String>> {
        Ok(self.contact(id)?.map(|c| c.keys.into_iter().map(|k| k.key).collect()).unwrap_or_default())
    }

    /// The user checked this key out of band: it is verified, and nothing asks for its
    /// verification to be made again.
    pub fn contact_key_verified(&self, key: &str, at: &str) -> Result<()> {
        let n = self.sealed_write(|tx| tx.execute("UPDATE contact_keys SET verified_at = ?2, reverify = NULL WHERE key = ?1", args![sender_key(key), at]))?;
        if n == 0 {
            return Err(StoreError::NotTrusted(sender_key(key)));
        }
        Ok(())
    }

    /// Says why a key's verification should be made again, or (None) that it stands.
    pub fn contact_key_reverify(&self, key: &str, why: Option<&str>) -> Result<()> {
        self.sealed_write(|tx| tx.execute("UPDATE contact_keys SET reverify = ?2 WHERE key = ?1", args![sender_key(key), why]))?;
        Ok(())
    }
}

/// A trusted sender that signed with a key not among those kept for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeyChangeSeen {
    pub sender: String,
    /// The key id its signature named.
    pub key_id: String,
    /// Why the signature did not check: the key id is unknown ("unknown_key"), or a known
    /// key id did not match ("invalid_signature").
    pub reason: String,
    pub first_seen: String,
    pub last_seen: String,
    pub count: i64,
}

const KEY_CHANGE_COLUMNS: &str = "sender, key_id, reason, first_seen, last_seen, count";

fn key_change_from_row(r: &Row<'_>) -> Result<KeyChangeSeen> {
    Ok(KeyChangeSeen { sender: r.get(0)?, key_id: r.get(1)?, reason: r.get(2)?, first_seen: r.get(3)?, last_seen: r.get(4)?, count: r.get(5)? })
}

/// Key ids longer than this are cut (a sender chooses them).
const MAX_KEY_ID: usize = 512;

impl Store {
    /// Notes that a trusted sender signed with a key not kept for it: one row per sender,
    /// the newest key id, counted.
    pub fn key_change_seen(&self, sender: &str, key_id: &str, reason: &str, at: &str) -> Result<()> {
        let key_id: String = key_id.chars().take(MAX_KEY_ID).collect();
        self.conn()?.execute(
            "INSERT INTO key_changes (sender, key_id, reason, first_seen, last_seen, count) VALUES (?1, ?2, ?3, ?4, ?4, 1)
             ON CONFLICT(sender) DO UPDATE SET key_id = ?2, reason = ?3, last_seen = ?4, count = key_changes.count + 1",
            args![sender_key(sender), key_id, reason, at],
        )?;
        Ok(())
    }

    /// Every sender noted by [`Store::key_change_seen`], newest first.
    pub fn key_changes(&self) -> Result<Vec<KeyChangeSeen>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!("SELECT {KEY_CHANGE_COLUMNS} FROM key_changes ORDER BY last_seen DESC"))?;
            let rows = stmt.query_map(args![], key_change_from_row)?;
            rows.collect::<Result<Vec<_>>>()
        })
    }

    /// The user looked at it (checked the sender's keys again, or kept them): the key
    /// change that was waiting, if one was.
    pub fn key_change_take(&self, sender: &str) -> Result<Option<KeyChangeSeen>> {
        let sql = format!("DELETE FROM key_changes WHERE sender = ?1 RETURNING {KEY_CHANGE_COLUMNS}");
        self.conn()?.query_row(&sql, args![sender_key(sender)], key_change_from_row).optional()
    }

    /// A key changed under the user's check: it is no longer verified, and (with the
    /// policy's hold) blocked until the user verifies it again.
    pub fn contact_key_unverified(&self, key: &str) -> Result<()> {
        self.sealed_write(|tx| tx.execute("UPDATE contact_keys SET verified_at = NULL WHERE key = ?1", args![sender_key(key)]))?;
        Ok(())
    }
}
