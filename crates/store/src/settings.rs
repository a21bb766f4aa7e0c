//! Settings: small JSON values by key. Every setting decides (and is sealed, `seal`)
//! except the few that only count or remember ([`UNSEALED_SETTINGS`]).

use crate::seal::{judge_in, Judged, View, SETTINGS, UNSEALED_SETTINGS};
use crate::sql::{args, Db, Optional};
use crate::*;

impl Store {
    /// The setting's value; a deciding setting only as the gate sealed it (one added or
    /// changed outside Gatehouse reads as not set: its default).
    pub fn setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let v: Option<String> = self.read(|c| c.snapshot(|db| self.sealed_setting(db, key)))?;
        v.map(|s| serde_json::from_str(&s).map_err(Into::into)).transpose()
    }

    /// The raw value of `key` as a deciding read takes it, in the snapshot `db` is in
    /// (an empty key: none).
    pub(crate) fn sealed_setting(&self, db: &Db<'_>, key: &str) -> Result<Option<String>> {
        let view = if key.is_empty() || UNSEALED_SETTINGS.contains(&key) { None } else { self.view(db)? };
        self.setting_in(db, view.as_deref(), key)
    }

    /// [`Store::sealed_setting`] with the seals already read.
    pub(crate) fn setting_in(&self, db: &Db<'_>, view: Option<&View>, key: &str) -> Result<Option<String>> {
        if key.is_empty() {
            return Ok(None);
        }
        if UNSEALED_SETTINGS.contains(&key) {
            return db.prepare_cached("SELECT value FROM settings WHERE key = ?1")?.query_row(args![key], |r| r.get(0)).optional();
        }
        Ok(match judge_in(db, view, SETTINGS, key)? {
            (Judged::Sealed, Some(mut cols)) => cols.first_mut().and_then(Option::take),
            _ => None,
        })
    }

    pub fn set_setting<T: serde::Serialize>(&self, key: &str, value: &T) -> Result<()> {
        let value = serde_json::to_string(value)?;
        let set = |db: &Db<'_>| {
            db.execute("INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2", args![key, value]).map(|_| ())
        };
        if UNSEALED_SETTINGS.contains(&key) {
            return set(&self.conn()?.db());
        }
        self.sealed_write(|tx| set(&tx.db()))
    }
}
