//! The one context both faces hold: a data dir opened once (its identity key and its
//! store). Every window command and CLI command reads what it needs from here and makes one
//! call into this crate; neither face opens the store or the keychain itself.

use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_store::Store;

use crate::{Code, CommandError, Result};

pub use gatehouse_keys::KeystoreKind;

/// A data dir opened: who this gate is and what it keeps.
pub struct Context {
    pub data_dir: PathBuf,
    pub keystore: KeystoreKind,
    /// The identity key: it signs replies, asks and UAMP envelopes and is the TLS key. It
    /// never leaves the process (no command returns it; `Context` has no `Debug`).
    pub key: ed25519_dalek::SigningKey,
    pub public_key: String,
    /// Reached only through this crate's functions: a face never holds the store.
    pub(crate) store: Arc<Store>,
    /// This open made the identity (a first run).
    pub created: bool,
}

impl Context {
    /// Loads the identity and opens the store; `create` makes both on a first run.
    pub fn open(data_dir: PathBuf, keystore: KeystoreKind, create: bool) -> Result<Context> {
        Self::open_at(data_dir, keystore, create, None)
    }

    /// [`Context::open`] on a team's gate: the gate's tables in the PostgreSQL database
    /// at `database` (see `doors::open_at`).
    pub fn open_at(data_dir: PathBuf, keystore: KeystoreKind, create: bool, database: Option<&str>) -> Result<Context> {
        let o = crate::doors::open_at(&data_dir, keystore, create, database).map_err(|e| CommandError::new(Code::Open, e.to_string()))?;
        Ok(Context {
            data_dir,
            keystore: o.identity.keystore,
            key: o.identity.signing_key().clone(),
            public_key: o.identity.public_key.clone(),
            store: o.store,
            created: o.created,
        })
    }

    /// A context over a store opened elsewhere (a test's, or a composition that opened the
    /// data dir itself), with the identity key given.
    pub fn with_store(data_dir: PathBuf, key: ed25519_dalek::SigningKey, store: Arc<Store>) -> Context {
        let public_key = hex::encode(key.verifying_key().as_bytes());
        Context { data_dir, keystore: KeystoreKind::File, key, public_key, store, created: false }
    }

    /// Where a team's gate keeps its tables (the PostgreSQL database, described without
    /// its password); none for a laptop's gate on its own SQLite file.
    pub fn team_database(&self) -> Option<String> {
        self.store.is_shared().then(|| self.store.location())
    }

    /// What the team's database counted so far (commits; statements, when
    /// `pg_stat_statements` is loaded): zeros on SQLite. For the benchmark.
    pub fn database_counters(&self) -> Result<(i64, Option<i64>)> {
        let c = self.store.database_counters()?;
        Ok((c.commits, c.statements))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_dir_without_an_identity_is_an_open_error_until_one_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("g");
        let e = Context::open(d.clone(), KeystoreKind::File, false).err().expect("no identity yet");
        assert_eq!(e.code, Code::Open, "{e:?}");
        let made = Context::open(d.clone(), KeystoreKind::File, true).unwrap();
        assert!(made.created && made.public_key.len() == 64, "{}", made.public_key);
        let again = Context::open(d, KeystoreKind::File, false).unwrap();
        assert!(!again.created);
        assert_eq!(again.public_key, made.public_key);
        assert_eq!(again.key.to_bytes(), made.key.to_bytes());
    }
}
