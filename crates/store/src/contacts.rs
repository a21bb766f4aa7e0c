//! Contacts: the people and organisations behind trusted keys. A key joins a contact when
//! it is trusted (a contact of its own) or when the user says it belongs to one; the
//! store never merges on its own.

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
    pub keys: Vec<ContactKey>,
}

impl Contact {
    pub fn verified(&self) -> bool {
        self.keys.iter().any(|k| k.verified_at.is_some())
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

pub(crate) fn keys_of(conn: &Db<'_>, id: i64) -> Result<Vec<ContactKey>> {
    let stmt =
        conn.prepare_cached("SELECT key, added_at, verified_at, changed_from, reverify FROM contact_keys WHERE contact_id = ?1 ORDER BY added_at, key")?;
    let rows = stmt.query_map(args![id], |r| {
        Ok(ContactKey { key: r.get(0)?, added_at: r.get(1)?, verified_at: r.get(2)?, changed_from: r.get(3)?, reverify: r.get(4)? })
    })?;
    rows.collect::<Result<Vec<_>>>()
}

impl Store {
    pub fn contacts(&self) -> Result<Vec<Contact>> {
        self.read(|conn| {
            let stmt = conn.prepare("SELECT id, name, created_at FROM contacts ORDER BY lower(name), id")?;
            let heads = stmt.query_map(args![], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<Vec<(i64, String, String)>>>()?;
            heads.into_iter().map(|(id, name, created_at)| Ok(Contact { keys: keys_of(conn, id)?, id, name, created_at })).collect()
        })
    }

    pub fn contact(&self, id: i64) -> Result<Option<Contact>> {
        self.read(|conn| {
            let head: Option<(String, String)> =
                conn.query_row("SELECT name, created_at FROM contacts WHERE id = ?1", args![id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
            head.map(|(name, created_at)| Ok(Contact { keys: keys_of(conn, id)?, id, name, created_at })).transpose()
        })
    }

    /// The contact a key belongs to.
    pub fn contact_of(&self, key: &str) -> Result<Option<Contact>> {
        let id: Option<i64> = self.read(|c| contact_id_of(c, &sender_key(key)))?;
        match id {
            Some(id) => self.contact(id),
            None => Ok(None),
        }
    }

    /// The user checked this key out of band.
    pub fn contact_key_verified(&self, key: &str, at: &str) -> Result<()> {
        let n = self.conn()?.execute("UPDATE contact_keys SET verified_at = ?2 WHERE key = ?1", args![sender_key(key), at])?;
        if n == 0 {
            return Err(StoreError::NotTrusted(sender_key(key)));
        }
        Ok(())
    }

    /// Says why a key's verification should be made again, or (None) that it stands.
    pub fn contact_key_reverify(&self, key: &str, why: Option<&str>) -> Result<()> {
        self.conn()?.execute("UPDATE contact_keys SET reverify = ?2 WHERE key = ?1", args![sender_key(key), why])?;
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
        self.conn()?.execute("UPDATE contact_keys SET verified_at = NULL WHERE key = ?1", args![sender_key(key)])?;
        Ok(())
    }
}
