//! Mail accounts followed for envelopes: where each is (as the email crate describes it,
//! kept as JSON), how far it was read (UIDVALIDITY and the last UID handled, written only
//! after that message's envelope was committed and the mail filed), and its state as the
//! user sees it. Passwords are in the keychain, never here.

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EmailAccountRow {
    pub name: String,
    /// host, port, security, user, folder.
    pub account: serde_json::Value,
    pub added_at: String,
    pub uid_validity: Option<u32>,
    pub last_uid: u32,
    /// new, connecting, connected, idle, error, stopped
    pub state: String,
    pub last_error: Option<String>,
    pub last_sync: Option<String>,
}

fn row(r: &Row<'_>) -> rusqlite::Result<EmailAccountRow> {
    let account: String = r.get(1)?;
    Ok(EmailAccountRow {
        name: r.get(0)?,
        account: serde_json::from_str(&account).unwrap_or_default(),
        added_at: r.get(2)?,
        uid_validity: r.get(3)?,
        last_uid: r.get(4)?,
        state: r.get(5)?,
        last_error: r.get(6)?,
        last_sync: r.get(7)?,
    })
}

const COLUMNS: &str = "name, account, added_at, uid_validity, last_uid, state, last_error, last_sync";

impl Store {
    /// Adds an account, or changes where it is (which starts its reading over).
    pub fn email_account_put(&self, name: &str, account: &serde_json::Value, at: &str) -> Result<()> {
        self.conn().execute(
            "INSERT INTO email_accounts (name, account, added_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET account = ?2, uid_validity = NULL, last_uid = 0, state = 'new', last_error = NULL",
            params![name, account.to_string(), at],
        )?;
        Ok(())
    }

    pub fn email_accounts(&self) -> Result<Vec<EmailAccountRow>> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM email_accounts ORDER BY name"))?;
            let rows = stmt.query_map([], row)?.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub fn email_account(&self, name: &str) -> Result<Option<EmailAccountRow>> {
        self.read(|c| Ok(c.query_row(&format!("SELECT {COLUMNS} FROM email_accounts WHERE name = ?1"), [name], row).optional()?))
    }

    pub fn email_account_remove(&self, name: &str) -> Result<bool> {
        Ok(self.conn().execute("DELETE FROM email_accounts WHERE name = ?1", [name])? > 0)
    }

    /// How far an account was read: everything up to `last_uid` under `uid_validity` is
    /// handled (committed and filed, or not an envelope mail).
    pub fn email_progress(&self, name: &str, uid_validity: u32, last_uid: u32, at: &str) -> Result<()> {
        self.conn()
            .execute("UPDATE email_accounts SET uid_validity = ?2, last_uid = ?3, last_sync = ?4 WHERE name = ?1", params![name, uid_validity, last_uid, at])?;
        Ok(())
    }

    pub fn email_state(&self, name: &str, state: &str, error: Option<&str>, at: &str) -> Result<()> {
        self.conn().execute(
            "UPDATE email_accounts SET state = ?2, last_error = coalesce(?3, CASE WHEN ?2 = 'error' THEN last_error ELSE NULL END), last_sync = ?4 WHERE name = ?1",
            params![name, state, error, at],
        )?;
        Ok(())
    }
}
