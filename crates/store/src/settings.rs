//! Settings: small JSON values by key.

use crate::sql::{args, Optional};
use crate::*;

impl Store {
    pub fn setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let v: Option<String> = self.read(|c| c.query_row("SELECT value FROM settings WHERE key = ?1", args![key], |r| r.get(0)).optional())?;
        v.map(|s| serde_json::from_str(&s).map_err(Into::into)).transpose()
    }

    pub fn set_setting<T: serde::Serialize>(&self, key: &str, value: &T) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2",
            args![key, serde_json::to_string(value)?],
        )?;
        Ok(())
    }
}
