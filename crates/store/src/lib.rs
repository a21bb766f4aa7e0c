//! Gatehouse's one store: a SQLite file (WAL, schema migrations), or for a team's gate a
//! PostgreSQL database, holding the trust registry, pending sender requests, the nonce
//! registry, envelopes, receipts and settings. Every query is written once and runs on
//! either engine.
//!
//! Durability rule: an acceptance (nonce + envelope + receipt) is one transaction, on
//! disk (its WAL frames synced) before the caller may send the receipt (see `commit`).
//!
//! Where things are decided:
//! - [`open`]: opening the file, the write connection, the pool of readers (or the
//!   PostgreSQL pool, `Store::open_url`);
//! - [`value`], [`sql`]: the values both engines share, and queries on either (`sql::Db`);
//!   `pg`: PostgreSQL's connections, its schema and its acceptance in two statements;
//! - [`claims`]: executor jobs claimed once across nodes, and leases (a mail account read
//!   by one node);
//! - [`trust`]: the trust registry, blocked senders, unknown senders waiting for consent,
//!   and the admission view the pipeline reads per sender;
//! - [`replay`]: acceptance in one transaction, where a replayed nonce is refused and rate
//!   limits are counted;
//! - [`receipts`]: envelopes and receipts as stored, executor status;
//! - [`inbox`]: the app's list of receipts (filters, search, by sender);
//! - [`contacts`]: the people and organisations behind trusted keys, verified or not;
//! - [`later`]: prompts deferred ("ask me later"), and the past an "always allow" covers;
//! - [`audit`], [`settings`], [`retention`], [`risk`]: the audit log, settings, what is kept how long, risk flags dismissed;
//! - [`jobs`] and [`commit`]: the committer's queue and its group-commit loop
//!   (`commit_pg` on PostgreSQL);
//! - [`migrations`]: the schema, one numbered step at a time;
//! - one module per protocol's tables: [`uamp`], [`mail`], [`intentweb`], [`asop`], [`email`] (mail accounts followed for envelopes),
//!   and [`replies`] (answers sent back to EPP senders), each reached by its own path
//!   (`gatehouse_store::uamp::PeerRow`), never flattened into this namespace; `model`: the
//!   row types of the gate (trust entries, envelopes, receipts).

mod approvers;
pub mod asop;
mod audit;
mod claims;
mod commit;
mod commit_pg;
pub mod contacts;
pub mod email;
pub mod entry_facts;
mod flush;
mod inbox;
pub mod intentweb;
mod jobs;
mod later;
pub mod mail;
pub mod mcp;
mod migrations;
mod model;
mod naming;
mod open;
mod pg;
pub mod quorum;
mod receipts;
mod replay;
pub mod replies;
mod retention;
mod risk;
mod seal;
mod seal_write;
mod settings;
#[doc(hidden)]
pub mod sql;
mod story;
mod trust;
pub mod uamp;
#[doc(hidden)]
pub mod value;
mod waiting;

pub use approvers::{Approver, ApproverMail, InviteRefusal};
pub use audit::{audit_entry_hash, AUDIT_GENESIS, AUDIT_PRUNED};
pub use claims::STALE_AFTER_MS;
pub use entry_facts::{CapabilityLimit, EppFacts, Facts, UampFacts, UampKey};
pub use flush::Durable;
pub use later::{Covered, MAX_COUNTED};
pub use model::*;
pub use open::DatabaseCounters;
pub use replay::{AcceptRefusal, RateCount};
pub use retention::*;
pub use seal::{ChangeKind, Sealer, StateChange, StateReport, UNSEALED_SETTINGS};
pub use story::Story;
pub use trust::{Admission, Knock, MAX_PENDING, MAX_SCOPES_TRIED};

use std::path::Path;
use std::sync::Mutex;

use rusqlite::Connection;

use commit::*;
use jobs::*;
use receipts::*;
use replay::*;
use trust::*;

/// For upgrade tests: a database file at an older schema, as an earlier Gatehouse left it.
#[doc(hidden)]
pub fn create_at_schema(path: &Path, version: usize) -> Result<Connection> {
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    migrations::run_to(&mut conn, version)?;
    Ok(conn)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("stored JSON is corrupt: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0} is already in the trust registry")]
    AlreadyTrusted(String),
    #[error("{0} is not in the trust registry")]
    NotTrusted(String),
    #[error("the commit this acceptance was part of failed: {0}")]
    CommitFailed(String),
    #[error("cannot open the database file {path}: {source}")]
    File { path: String, source: std::io::Error },
    #[error("the database was written by a newer Gatehouse (schema {found}, this build knows {known})")]
    TooNew { found: i64, known: i64 },
    #[error("{0}")]
    Invalid(String),
    #[error("database error: {}", pg::message(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// The database cannot be reached now (a team's gate: PostgreSQL down or every
    /// connection busy); callers answer "try again later".
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The gate's sealed state cannot be trusted (changed outside Gatehouse): a change
    /// now would seal what someone else put there (`seal`).
    #[error("{0}: nothing is changed until an operator checks it (gatehouse audit verify) and accepts the state as it is (gatehouse audit accept-state)")]
    StateChanged(String),
}
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// A row another writer committed first broke a uniqueness the schema holds.
    pub fn is_duplicate(&self) -> bool {
        match self {
            StoreError::Postgres(e) => e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION),
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
                e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            }
            _ => false,
        }
    }

    /// Lost a race with another writer (a team's gate): the same work, run again, sees
    /// what the other committed.
    pub fn is_retryable(&self) -> bool {
        self.is_duplicate()
            || matches!(self, StoreError::Postgres(e) if e.code().is_some_and(|c| *c == tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE || *c == tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED))
    }

    /// The database could not be reached or stopped answering (a team's gate): try again.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Unavailable(_) => true,
            StoreError::Postgres(e) => {
                let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
                e.is_closed() || io || e.as_db_error().is_some_and(|d| d.code().code().starts_with("08") || d.code().code().starts_with("57P"))
            }
            _ => false,
        }
    }
}
pub struct Store {
    /// SQLite's one write connection (group commits on the committer thread and the
    /// rare direct writes take turns on it), or PostgreSQL's pool.
    engine: open::Engine,
    /// Where to open read connections (None for in-memory stores, which read through
    /// the writer). WAL lets readers run while a commit waits for its fsync.
    path: Option<std::path::PathBuf>,
    /// The data dir of a node whose database is elsewhere (see [`Store::with_data_dir`]).
    data_dir: Option<std::path::PathBuf>,
    /// Which node claims the executors it runs (see `claims`).
    node: String,
    readers: Mutex<Vec<Connection>>,
    /// What [`Store::admission`] last read per (sender, setting), with the admission
    /// version it was read at.
    admissions: Mutex<std::collections::HashMap<(String, String), Admission>>,
    /// What signs and checks the deciding rows (`seal`); none in stores tests open bare.
    sealer: Option<std::sync::Arc<dyn Sealer>>,
    /// The seals as last read and checked, by head.
    sealed: Mutex<Option<std::sync::Arc<seal::View>>>,
    /// Seal signatures already verified.
    seals_verified: Mutex<std::collections::HashSet<String>>,
    /// Writes for the committer thread, which commits whatever has queued up while it
    /// was busy as one transaction.
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    committer: Option<std::thread::JoinHandle<()>>,
    /// What waits for a decision changed, here or (PostgreSQL) at another node
    /// (`waiting.rs`).
    waiting: tokio::sync::broadcast::Sender<()>,
    listening: std::sync::Once,
    /// Syncs the WAL for direct writes committed without waiting for the disk (started on
    /// first use; none for a store in memory or on PostgreSQL).
    flusher: std::sync::OnceLock<Option<flush::Flusher>>,
}
impl Drop for Store {
    fn drop(&mut self) {
        // The committer finishes what it has and stops. (The syncer holds a sender of the
        // same queue, so closing our end alone would not end it.)
        if let Some(jobs) = self.jobs.take() {
            let _ = jobs.send(Job::Shutdown);
        }
        if let Some(t) = self.committer.take() {
            let _ = t.join();
        }
    }
}
