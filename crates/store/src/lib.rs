//! Gatehouse's one store: a SQLite file (WAL, schema migrations) holding the trust
//! registry, pending sender requests, the nonce registry, envelopes, receipts and settings.
//!
//! Durability rule: an acceptance (nonce + envelope + receipt) is one transaction, on
//! disk (its WAL frames synced) before the caller may send the receipt (see `commit`).

mod asop;
mod commit;
mod intentweb;
mod mail;
mod migrations;
mod model;
mod replies;
mod retention;
mod uamp;

/// For upgrade tests: a database file at an older schema, as an earlier Gatehouse left it.
#[doc(hidden)]
pub fn create_at_schema(path: &Path, version: usize) -> Result<Connection> {
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    migrations::run_to(&mut conn, version)?;
    Ok(conn)
}

pub use asop::*;
pub use intentweb::*;
pub use mail::*;
pub use model::*;
pub use replies::*;
pub use retention::*;
pub use uamp::*;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use commit::{committer, Syncer};

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
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why an acceptance was refused inside the transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptRefusal {
    Replay,
    /// What admitted the envelope (trust, blocks, settings) changed before its commit.
    Stale,
    RateLimited {
        window: &'static str,
        limit: u32,
        retry_after_secs: u64,
    },
}

pub struct Store {
    /// The one write connection: group commits (on the committer thread) and the rare
    /// direct writes (trust registry, settings, ...) take turns on it.
    conn: Arc<Mutex<Connection>>,
    /// Where to open read connections (None for in-memory stores, which read through
    /// the writer). WAL lets readers run while a commit waits for its fsync.
    path: Option<std::path::PathBuf>,
    readers: Mutex<Vec<Connection>>,
    /// What [`Store::admission`] last read per (sender, setting), with the admission
    /// version it was read at.
    admissions: Mutex<std::collections::HashMap<(String, String), Admission>>,
    /// Writes for the committer thread, which commits whatever has queued up while it
    /// was busy as one transaction.
    jobs: Option<std::sync::mpsc::Sender<Job>>,
    committer: Option<std::thread::JoinHandle<()>>,
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

/// Senders whose admission view is kept between envelopes.
const MAX_CACHED_ADMISSIONS: usize = 4096;

/// Idle read connections kept open.
const MAX_READERS: usize = 64;

/// At most this many writes share one transaction (bounds a commit's latency).
const MAX_BATCH: usize = 1024;

/// Commits every so many batches, or this often, are followed by a checkpoint.
/// (Measured: every 8 commits keeps p99 lowest but costs 10% throughput; every 256,
/// the reverse; 32 is the knee.)
const CHECKPOINT_EVERY_COMMITS: u32 = 32;
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Copies the WAL back into the database file on its own connection and thread, while
/// the committer goes on committing, and says when it is done.
struct Checkpointer {
    wake: std::sync::mpsc::SyncSender<()>,
    done: std::sync::mpsc::Receiver<()>,
    busy: bool,
}

impl Checkpointer {
    fn start(path: &Path) -> Option<Checkpointer> {
        let conn = Connection::open(path).ok()?;
        conn.busy_timeout(std::time::Duration::from_secs(10)).ok()?;
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let (finished, done) = std::sync::mpsc::sync_channel::<()>(1);
        std::thread::Builder::new()
            .name("gatehouse-checkpoint".into())
            .spawn(move || {
                for () in woken {
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                        tracing::warn!(error = %e, "WAL checkpoint failed; will retry");
                    }
                    if finished.send(()).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Checkpointer { wake, done, busy: false })
    }
}

/// Adds receipts stored since the last call to the full-text index and to the index
/// by sender.
fn index_receipts(tx: &Connection) -> Result<()> {
    let last: i64 = tx.prepare_cached("SELECT last_seq FROM search_progress")?.query_row([], |r| r.get(0))?;
    let newest: Option<i64> = tx.prepare_cached("SELECT max(seq) FROM receipts")?.query_row([], |r| r.get(0))?;
    let Some(newest) = newest.filter(|n| *n > last) else { return Ok(()) };
    tx.prepare_cached(
        "INSERT INTO receipts_fts (rowid, prompt)
         SELECT seq, prompt FROM receipts WHERE seq > ?1 AND seq <= ?2 AND prompt IS NOT NULL",
    )?
    .execute([last, newest])?;
    tx.prepare_cached(
        "INSERT INTO receipts_by_sender (sender, seq)
         SELECT sender, seq FROM receipts WHERE seq > ?1 AND seq <= ?2 AND sender IS NOT NULL",
    )?
    .execute([last, newest])?;
    tx.prepare_cached("UPDATE search_progress SET last_seq = ?1")?.execute([newest])?;
    Ok(())
}

/// Housekeeping between batches, after the callers have their answers: search
/// indexing in its own transaction, then a checkpoint.
fn checkpoint(conn: &Mutex<Connection>) {
    let mut c = conn.lock().unwrap_or_else(|p| p.into_inner());
    let indexed = (|| -> Result<()> {
        let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
        index_receipts(&tx)?;
        tx.commit()?;
        Ok(())
    })();
    if let Err(e) = indexed {
        tracing::warn!(error = %e, "search indexing failed; will retry");
    }
    wal_checkpoint(&c);
}

/// The WAL half of [`checkpoint`], for when search indexing rode along with a batch.
fn wal_checkpoint(c: &Connection) {
    // PASSIVE: never waits for a reader; frames a reader still needs are copied next time.
    if let Err(e) = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "WAL checkpoint failed; will retry");
    }
}

type AcceptResult = Result<Result<i64, AcceptRefusal>>;

/// One write waiting for a group commit, and where its answer goes once it is durable.
enum Job {
    Accept {
        rec: Box<NewEnvelope>,
        limits: RateLimit,
        json: Serialized,
        reply: Reply<Result<i64, AcceptRefusal>>,
    },
    Receipt {
        row: Box<ReceiptRow>,
        knock: Option<Knock>,
        json: Serialized,
        reply: Reply<()>,
    },
    SetExec {
        updates: Vec<(i64, ExecStatus, Option<serde_json::Value>)>,
        now: String,
        reply: Reply<()>,
    },
    /// Bring the search index up to date now (a search is about to run).
    IndexSearch {
        reply: Reply<()>,
    },
    /// From the syncer: the batch it had is durable and answered.
    Synced,
    /// From the store being dropped: finish what is queued, then stop.
    Shutdown,
}

/// A write's JSON columns as text, serialized by the caller's thread: the committer is
/// the one thread every acceptance waits for, so it only binds and inserts.
struct Serialized {
    receipt: String,
    exec_result: Option<String>,
}

impl Job {
    fn accept(rec: NewEnvelope, limits: &RateLimit, reply: Reply<Result<i64, AcceptRefusal>>) -> Job {
        let json = Serialized { receipt: rec.receipt.receipt.to_string(), exec_result: rec.exec_result.as_ref().map(|r| r.to_string()) };
        Job::Accept { rec: Box::new(rec), limits: limits.clone(), json, reply }
    }

    fn receipt(row: &ReceiptRow, knock: Option<&Knock>, reply: Reply<()>) -> Job {
        let json = Serialized { receipt: row.receipt.to_string(), exec_result: None };
        Job::Receipt { row: Box::new(row.clone()), knock: knock.cloned(), json, reply }
    }
}

/// A thread waiting (blocking) or a task awaiting the commit.
enum Reply<T> {
    Blocking(std::sync::mpsc::SyncSender<Result<T>>),
    Async(tokio::sync::oneshot::Sender<Result<T>>),
}

impl<T> Reply<T> {
    fn send(self, r: Result<T>) {
        match self {
            Reply::Blocking(tx) => {
                let _ = tx.send(r);
            }
            Reply::Async(tx) => {
                let _ = tx.send(r);
            }
        }
    }
}

/// An unknown sender's correctly signed knock, recorded with its rejection receipt so
/// the user can be asked.
#[derive(Debug, Clone)]
pub struct Knock {
    pub sender: String,
    pub scope: String,
    pub envelope_id: String,
    pub at: String,
}

fn blocking<T>() -> (Reply<T>, std::sync::mpsc::Receiver<Result<T>>) {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    (Reply::Blocking(tx), rx)
}

fn asynchronous<T>() -> (Reply<T>, tokio::sync::oneshot::Receiver<Result<T>>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    (Reply::Async(tx), rx)
}

fn closing() -> StoreError {
    StoreError::CommitFailed("the store is closing".into())
}

/// What the pipeline must know about a sender before deciding, read in one snapshot
/// (one read transaction instead of one per question on the hot path).
#[derive(Debug, Clone)]
pub struct Admission {
    pub blocked: bool,
    pub trust: Option<TrustEntry>,
    /// The raw JSON of the setting the caller asked for alongside.
    pub setting: Option<String>,
    /// Counts every change to trust, blocks and settings (in any process).
    pub version: i64,
}

/// The database and its WAL and shared-memory files are readable by the user alone:
/// created 0600 (SQLite gives -wal and -shm the database file's mode), and tightened if an
/// older version left them readable by others.
fn private_files(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let io = |source: std::io::Error| StoreError::File { path: path.display().to_string(), source };
        std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path).map_err(io)?;
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            match std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
                _ => {}
            }
        }
    }
    Ok(())
}

impl Store {
    pub fn open(path: &Path) -> Result<Store> {
        private_files(path)?;
        let conn = Connection::open(path)?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// The directory the database file lives in (the data dir), for on-disk stores.
    pub fn data_dir(&self) -> Option<&Path> {
        self.path.as_deref().and_then(Path::parent)
    }

    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, None)
    }

    fn init(mut conn: Connection, path: Option<std::path::PathBuf>) -> Result<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrations::run(&mut conn)?;
        conn.set_prepared_statement_cache_capacity(64);
        // The committer checkpoints itself, after answering its callers (see `committer`).
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let conn = Arc::new(Mutex::new(conn));
        let (tx, rx) = std::sync::mpsc::channel();
        let c = conn.clone();
        let helper = path.as_deref().and_then(Checkpointer::start);
        let syncer = path.as_deref().and_then(|p| Syncer::start(p, tx.clone()));
        let committer = std::thread::Builder::new()
            .name("gatehouse-commit".into())
            .spawn(move || committer(c, rx, helper, syncer))
            .map_err(|e| StoreError::CommitFailed(format!("cannot start the commit thread: {e}")))?;
        Ok(Store {
            conn,
            path,
            readers: Mutex::new(Vec::new()),
            admissions: Mutex::new(std::collections::HashMap::new()),
            jobs: Some(tx),
            committer: Some(committer),
        })
    }

    /// Runs a read on a pooled read connection, so reads never queue behind a commit.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let Some(path) = &self.path else {
            return f(&self.conn());
        };
        let pooled = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
                c.busy_timeout(std::time::Duration::from_secs(10))?;
                // Readers answer small indexed queries; many of them share the OS page
                // cache, so each keeps a small cache of its own (512 KiB, not 2 MiB).
                c.pragma_update(None, "cache_size", -512)?;
                c
            }
        };
        let out = f(&conn);
        let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        // Enough for every concurrent reader under load: a connection dropped here costs
        // the next reader a schema parse and its statement cache.
        if pool.len() < MAX_READERS {
            pool.push(conn);
        }
        out
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (transactions
        // roll back on drop), so a poisoned lock is safe to reuse.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    // ---- trust registry -------------------------------------------------------------

    pub fn trust_add(&self, entry: &TrustEntry) -> Result<()> {
        let key = sender_key(&entry.public_key);
        let conn = self.conn();
        let n = conn.execute(
            "INSERT OR IGNORE INTO trust (public_key, name, added_at, policy) VALUES (?1, ?2, ?3, ?4)",
            params![key, entry.name, entry.added_at, serde_json::to_string(&entry.policy)?],
        )?;
        if n == 0 {
            return Err(StoreError::AlreadyTrusted(key));
        }
        conn.execute("DELETE FROM pending_senders WHERE public_key = ?1", [&key])?;
        Ok(())
    }

    pub fn trust_update(&self, key: &str, name: Option<&str>, policy: &Policy) -> Result<()> {
        let key = sender_key(key);
        let n = self
            .conn()
            .execute("UPDATE trust SET policy = ?2, name = COALESCE(?3, name) WHERE public_key = ?1", params![key, serde_json::to_string(policy)?, name])?;
        if n == 0 {
            return Err(StoreError::NotTrusted(key));
        }
        Ok(())
    }

    pub fn trust_get(&self, key: &str) -> Result<Option<TrustEntry>> {
        self.read(|conn| {
            let row = conn.query_row(&format!("{TRUST_SELECT} WHERE public_key = ?1"), [sender_key(key)], trust_columns).optional()?;
            row.map(trust_entry).transpose()
        })
    }

    pub fn trust_list(&self) -> Result<Vec<TrustEntry>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{TRUST_SELECT} ORDER BY name, public_key"))?;
            let rows = stmt.query_map([], trust_columns)?;
            rows.map(|row| trust_entry(row?)).collect()
        })
    }

    /// Removes a sender and, in the same transaction, every bearer token issued to it: a
    /// token is for the trust it was issued under, and re-adding the sender later must
    /// not bring old tokens back to life.
    pub fn trust_remove(&self, key: &str) -> Result<bool> {
        let key = sender_key(key);
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let removed = tx.execute("DELETE FROM trust WHERE public_key = ?1", [&key])? > 0;
        tx.execute("DELETE FROM uamp_tokens WHERE sender = ?1", [&key])?;
        tx.commit()?;
        Ok(removed)
    }

    // ---- pending sender requests ------------------------------------------------------

    /// Records that an unknown (but correctly signing) sender knocked.
    pub fn pending_record(&self, key: &str, scope: &str, envelope_id: &str, now: &str) -> Result<()> {
        upsert_pending(&self.conn(), &Knock { sender: key.to_string(), scope: scope.to_string(), envelope_id: envelope_id.to_string(), at: now.to_string() })
    }

    pub fn pending_list(&self) -> Result<Vec<PendingSender>> {
        self.read(|conn| {
            let mut stmt =
                conn.prepare("SELECT public_key, first_seen, last_seen, count, scopes, last_envelope_id FROM pending_senders ORDER BY last_seen DESC")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, String>(4)?, r.get(5)?)))?;
            rows.map(|row| {
                let (public_key, first_seen, last_seen, count, scopes, last_envelope_id) = row?;
                Ok(PendingSender { public_key, first_seen, last_seen, count, scopes_tried: serde_json::from_str(&scopes)?, last_envelope_id })
            })
            .collect()
        })
    }

    pub fn pending_remove(&self, key: &str) -> Result<bool> {
        Ok(self.conn().execute("DELETE FROM pending_senders WHERE public_key = ?1", [sender_key(key)])? > 0)
    }

    // ---- acceptance (nonce + envelope + receipt in one transaction) -------------------

    /// Commits an accepted envelope, unless its nonce was seen or the sender is over a
    /// rate limit counted over accepted envelopes.
    ///
    /// Group commit: callers queue their acceptance; whoever holds the connection next
    /// takes the whole queue into one IMMEDIATE transaction and one fsync, and only then
    /// answers each caller. So no caller returns (and no receipt goes out) before its
    /// acceptance is durable, and concurrent calls with the same nonce accept exactly
    /// one: later ones in the same transaction see the earlier insert, and the nonce is
    /// the primary key besides.
    pub fn accept(&self, rec: NewEnvelope, limits: &RateLimit) -> AcceptResult {
        let (reply, answer) = blocking();
        self.enqueue(Job::accept(rec, limits, reply));
        self.commit_until_answered(&answer)
    }

    /// [`Store::accept`] for async callers: awaits the commit without holding a thread.
    pub async fn accept_async(&self, rec: NewEnvelope, limits: &RateLimit) -> AcceptResult {
        let (reply, answer) = asynchronous();
        self.enqueue(Job::accept(rec, limits, reply));
        answer.await.unwrap_or_else(|_| Err(closing()))
    }

    fn enqueue(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            // The committer only stops when the store is dropped, so this cannot fail
            // while `self` is alive; a dropped job would answer its caller with an error.
            let _ = jobs.send(job);
        }
    }

    /// Waits until the committer has made this write durable (or failed to).
    fn commit_until_answered<T>(&self, answer: &std::sync::mpsc::Receiver<Result<T>>) -> Result<T> {
        answer.recv().unwrap_or_else(|_| Err(closing()))
    }

    /// [`Store::admission`] as last read, without reading: the envelope's commit checks
    /// its version ([`NewEnvelope::admission_version`]), so a view that has gone stale costs
    /// a retry instead of every envelope costing a read. A refusal should not rest on it.
    pub fn admission_cached(&self, sender: &str, setting: &str) -> Result<Admission> {
        let key = sender_key(sender);
        let cached = {
            let cache = self.admissions.lock().unwrap_or_else(|p| p.into_inner());
            cache.get(&(key, setting.to_string())).cloned()
        };
        match cached {
            Some(a) => Ok(a),
            None => self.admission(sender, setting),
        }
    }

    /// Whether `sender` is blocked, its trust entry, and one setting, as of one snapshot.
    pub fn admission(&self, sender: &str, setting: &str) -> Result<Admission> {
        let key = sender_key(sender);
        self.read(|c| {
            let tx = c.unchecked_transaction()?;
            // One small read per envelope while nothing changed; the whole view again,
            // in the same snapshot, once anything that decides admission did.
            let version: i64 = tx.prepare_cached("SELECT n FROM admission_version")?.query_row([], |r| r.get(0))?;
            let cache_key = (key.clone(), setting.to_string());
            {
                let cache = self.admissions.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(a) = cache.get(&cache_key).filter(|a| a.version == version) {
                    return Ok(a.clone());
                }
            }
            let blocked = tx.prepare_cached("SELECT 1 FROM blocked WHERE public_key = ?1")?.query_row([&key], |_| Ok(())).optional()?.is_some();
            let trust = tx
                .prepare_cached(&format!("{TRUST_SELECT} WHERE public_key = ?1"))?
                .query_row([&key], trust_columns)
                .optional()?
                .map(trust_entry)
                .transpose()?;
            let setting = tx.prepare_cached("SELECT value FROM settings WHERE key = ?1")?.query_row([setting], |r| r.get(0)).optional()?;
            tx.finish()?;
            let admission = Admission { blocked, trust, setting, version };
            let mut cache = self.admissions.lock().unwrap_or_else(|p| p.into_inner());
            // Unknown senders can be many (each knock is a new key): stay small.
            if cache.len() >= MAX_CACHED_ADMISSIONS {
                cache.clear();
            }
            cache.insert(cache_key, admission.clone());
            Ok(admission)
        })
    }

    pub fn nonce_seen(&self, nonce: &[u8]) -> Result<bool> {
        self.read(|c| Ok(c.prepare_cached("SELECT 1 FROM nonces WHERE nonce = ?1")?.query_row([nonce], |_| Ok(())).optional()?.is_some()))
    }

    /// Records a rejection (every submission leaves a receipt the user can read). Shares
    /// the group commit with acceptances; returns once the receipt is durable.
    pub fn record_rejection(&self, receipt: &ReceiptRow, knock: Option<&Knock>) -> Result<()> {
        let (reply, answer) = blocking();
        self.enqueue(Job::receipt(receipt, knock, reply));
        self.commit_until_answered(&answer)
    }

    /// [`Store::record_rejection`] for async callers: awaits the commit without a thread.
    pub async fn record_rejection_async(&self, receipt: &ReceiptRow, knock: Option<&Knock>) -> Result<()> {
        let (reply, answer) = asynchronous();
        self.enqueue(Job::receipt(receipt, knock, reply));
        answer.await.unwrap_or_else(|_| Err(closing()))
    }

    /// Records many receipts in one transaction (imports, benchmarks, tests).
    pub fn record_receipts(&self, rows: &[ReceiptRow]) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for r in rows {
            insert_receipt(&tx, r)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The accepted envelope that used `nonce`, if its raw bytes hash to `sha` — used by
    /// the folder transport to recognise a file it accepted just before a crash. (Found
    /// through the nonce registry: an index over every envelope's hash would cost a
    /// random page write per acceptance for a lookup made only after a crash.)
    pub fn accepted_by_nonce(&self, nonce: &[u8], sha: &str) -> Result<Option<ReceiptRow>> {
        let receipt_id: Option<String> = self.read(|c| {
            let by_row = c
                .query_row(
                    "SELECT e.receipt_id FROM nonces n JOIN envelopes e ON e.id = n.envelope_row
                     WHERE n.nonce = ?1 AND e.raw_sha256 = ?2",
                    params![nonce, sha],
                    |r| r.get(0),
                )
                .optional()?;
            match by_row {
                Some(id) => Ok(Some(id)),
                // Nonces recorded before schema 3 have no row id: look the hard way.
                None => Ok(c.query_row("SELECT receipt_id FROM envelopes WHERE raw_sha256 = ?1 LIMIT 1", [sha], |r| r.get(0)).optional()?),
            }
        })?;
        match receipt_id {
            Some(id) => self.receipt(&id),
            None => Ok(None),
        }
    }

    pub fn receipt(&self, receipt_id: &str) -> Result<Option<ReceiptRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{RECEIPT_SELECT} WHERE receipt_id = ?1"))?;
            stmt.query_row([receipt_id], receipt_from_row).optional().map_err(Into::into)
        })
    }

    /// Newest first.
    pub fn receipts(&self, limit: u32, offset: u32) -> Result<Vec<ReceiptRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{RECEIPT_SELECT} ORDER BY seq DESC LIMIT ?1 OFFSET ?2"))?;
            let rows = stmt.query_map(params![limit, offset], receipt_from_row)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    /// Newest first.
    pub fn envelopes(&self, limit: u32, offset: u32) -> Result<Vec<EnvelopeRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{ENVELOPE_SELECT} ORDER BY id DESC LIMIT ?1 OFFSET ?2"))?;
            let rows = stmt.query_map(params![limit, offset], envelope_from_row)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    pub fn envelope(&self, id: i64) -> Result<Option<EnvelopeRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{ENVELOPE_SELECT} WHERE id = ?1"))?;
            stmt.query_row([id], envelope_from_row).optional().map_err(Into::into)
        })
    }

    pub fn envelopes_with_status(&self, status: ExecStatus) -> Result<Vec<EnvelopeRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!("{ENVELOPE_SELECT} WHERE exec_status = ?1 ORDER BY id"))?;
            let rows = stmt.query_map([status.as_str()], envelope_from_row)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    pub fn set_exec(&self, id: i64, status: ExecStatus, result: Option<&serde_json::Value>, now: &str) -> Result<()> {
        self.conn().execute(
            "UPDATE envelopes SET exec_status = ?2, exec_result = ?3, exec_updated_at = ?4 WHERE id = ?1",
            params![id, status.as_str(), result.map(|r| r.to_string()), now],
        )?;
        Ok(())
    }

    /// Several executor status changes (the runner works in batches), committed with
    /// whatever else is being committed at the time.
    pub fn set_exec_many(&self, updates: &[(i64, ExecStatus, Option<serde_json::Value>)], now: &str) -> Result<()> {
        if updates.is_empty() {
            return Ok(());
        }
        let (reply, answer) = blocking();
        self.enqueue(Job::SetExec { updates: updates.to_vec(), now: now.to_string(), reply });
        self.commit_until_answered(&answer)
    }

    /// Held envelopes plus pending sender requests: what waits for the user. Counted,
    /// not loaded, since the app asks on every inbox event.
    pub fn count_waiting(&self) -> Result<i64> {
        self.read(|c| {
            Ok(c.query_row(
                "SELECT (SELECT count(*) FROM envelopes WHERE exec_status = ?1)
                      + (SELECT count(*) FROM pending_senders)
                      + (SELECT count(*) FROM uamp_streams WHERE direction = 'in' AND state = 'NEW' AND detail = ?2)
                      + (SELECT count(*) FROM asop_steps WHERE decision = 'pending')",
                [ExecStatus::Held.as_str(), crate::uamp::HELD_FOR_CONSENT],
                |r| r.get(0),
            )?)
        })
    }

    pub fn count_envelopes(&self) -> Result<i64> {
        self.read(|c| Ok(c.query_row("SELECT count(*) FROM envelopes", [], |r| r.get(0))?))
    }

    pub fn count_nonces(&self) -> Result<i64> {
        self.read(|c| Ok(c.query_row("SELECT count(*) FROM nonces", [], |r| r.get(0))?))
    }

    /// Drops nonces whose envelopes have expired: an expired envelope is rejected at
    /// step 5, before the replay check, so its nonce can no longer matter.
    pub fn gc_nonces(&self, now_ms: i64) -> Result<usize> {
        Ok(self.conn().execute("DELETE FROM nonces WHERE expires_at_ms < ?1", [now_ms])?)
    }

    // ---- the inbox list ---------------------------------------------------------------

    /// Newest first, filtered, one keyset page.
    pub fn inbox(&self, f: &InboxFilter) -> Result<Vec<InboxItem>> {
        const COLUMNS: &str = "SELECT r.seq, r.receipt_id, r.envelope_id, r.status, r.code, r.message, r.received_at,
                    r.transport, r.sender, t.name, r.scope, substr(r.prompt, 1, 240), r.envelope_row,
                    e.exec_status, e.payload_type, e.conversation_id, e.on_behalf_of, p.name";
        const JOINS: &str = "LEFT JOIN envelopes e ON e.id = r.envelope_row
             LEFT JOIN trust t ON t.public_key = r.sender
             LEFT JOIN trust p ON p.public_key = e.on_behalf_of";
        // The filters common to every form of the query; `sql` is their text.
        let mut sql = String::new();
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        // Appends a clause whose `?` is the next parameter.
        fn arg(sql: &mut String, args: &mut Vec<rusqlite::types::Value>, clause: &str, v: rusqlite::types::Value) {
            args.push(v);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        }
        let sender = f.sender.as_deref().filter(|s| !s.is_empty()).map(|s| {
            args.push(sender_key(s).into());
            args.len()
        });
        if let Some(s) = f.scope.as_deref().filter(|s| !s.is_empty()) {
            arg(&mut sql, &mut args, " AND r.scope = ?", s.to_string().into());
        }
        match f.status.as_deref() {
            None | Some("") => {}
            Some(s @ ("accepted" | "rejected")) => arg(&mut sql, &mut args, " AND r.status = ?", s.to_string().into()),
            Some(s) => arg(&mut sql, &mut args, " AND e.exec_status = ?", s.to_string().into()),
        }
        if let Some(t) = f.transport.as_deref().filter(|s| !s.is_empty()) {
            // "folder" matches "folder:<file name>".
            arg(&mut sql, &mut args, " AND (r.transport = ? OR r.transport GLOB ? || ':*')", t.to_string().into());
        }
        if f.search.as_deref().is_some_and(|q| !q.trim().is_empty()) {
            // Receipts are indexed in batches; a search sees every one stored so far.
            let (reply, answer) = blocking();
            self.enqueue(Job::IndexSearch { reply });
            self.commit_until_answered(&answer)?;
        }
        if let Some(q) = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            // Each word a quoted FTS5 string: user text never becomes query syntax.
            let query = q.split_whitespace().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect::<Vec<_>>().join(" ");
            arg(&mut sql, &mut args, " AND r.seq IN (SELECT rowid FROM receipts_fts WHERE receipts_fts MATCH ?)", query.into());
        }
        if let Some(b) = f.before_seq {
            arg(&mut sql, &mut args, " AND r.seq < ?", b.into());
        }
        let limit = f.limit.unwrap_or(100).clamp(1, 500);
        args.push((limit as i64).into());
        let l = args.len();
        let sql = match sender {
            None => format!("{COLUMNS} FROM receipts r {JOINS} WHERE 1 = 1{sql} ORDER BY r.seq DESC LIMIT ?{l}"),
            // Newest first from the index by sender, and from the receipts stored since it
            // was last filled; one statement, so both halves read the same snapshot.
            Some(s) => format!(
                "SELECT * FROM ({COLUMNS} FROM receipts_by_sender b JOIN receipts r ON r.seq = b.seq {JOINS}
                    WHERE b.sender = ?{s}{sql} ORDER BY b.seq DESC LIMIT ?{l})
                 UNION ALL
                 SELECT * FROM ({COLUMNS} FROM receipts r {JOINS}
                    WHERE r.seq > (SELECT last_seq FROM search_progress) AND r.sender = ?{s}{sql}
                    ORDER BY r.seq DESC LIMIT ?{l})
                 ORDER BY 1 DESC LIMIT ?{l}"
            ),
        };
        self.read(|conn| {
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
                let exec: Option<String> = r.get(13)?;
                Ok(InboxItem {
                    seq: r.get(0)?,
                    receipt_id: r.get(1)?,
                    envelope_id: r.get(2)?,
                    status: r.get(3)?,
                    code: r.get(4)?,
                    message: r.get(5)?,
                    received_at: r.get(6)?,
                    transport: r.get(7)?,
                    sender: r.get(8)?,
                    sender_name: r.get(9)?,
                    scope: r.get(10)?,
                    prompt_preview: r.get(11)?,
                    envelope_row: r.get(12)?,
                    exec_status: exec.as_deref().and_then(ExecStatus::parse),
                    payload_type: r.get(14)?,
                    conversation_id: r.get(15)?,
                    on_behalf_of: r.get(16)?,
                    on_behalf_of_name: r.get(17)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    /// Accepted envelopes in one conversation, oldest first.
    pub fn conversation(&self, conversation_id: &str) -> Result<Vec<EnvelopeRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                // A conversation named after its first envelope (one that started without a
                // conversation_id and that this inbox answered, which named it) includes
                // that envelope, found through the answer: looking it up by its id would
                // walk every envelope, and an index of ids would cost every acceptance a
                // random page.
                "{ENVELOPE_SELECT} WHERE conversation_id = ?1
                 UNION ALL
                 {ENVELOPE_SELECT} WHERE id IN (SELECT envelope_row FROM replies WHERE conversation_id = ?1)
                    AND conversation_id IS NULL AND envelope_id = ?1
                 ORDER BY 1"
            ))?;
            let rows = stmt.query_map([conversation_id], envelope_from_row)?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    /// Accepted envelopes from `sender` since the minute `since_ms` falls in (for "usage
    /// today": midnight is a minute boundary, so that count is exact).
    pub fn accepted_since(&self, sender: &str, since_ms: i64) -> Result<i64> {
        self.read(|c| {
            Ok(c.query_row(
                "SELECT coalesce(sum(n), 0) FROM usage_minutes WHERE sender = ?1 AND minute >= ?2",
                params![sender_key(sender), minute_of(since_ms)],
                |r| r.get(0),
            )?)
        })
    }

    /// Forgets per-minute usage older than three days (no window or "today" reaches it).
    pub fn gc_usage(&self, now_ms: i64) -> Result<usize> {
        Ok(self.conn().execute("DELETE FROM usage_minutes WHERE minute < ?1", [minute_of(now_ms - USAGE_KEPT_MS)])?)
    }

    // ---- blocked senders and the audit log ---------------------------------------------

    /// Blocks a sender: its trust entry and pending request go, in one transaction.
    pub fn block(&self, key: &str, reason: &str, now: &str) -> Result<()> {
        let key = sender_key(key);
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM trust WHERE public_key = ?1", [&key])?;
        tx.execute("DELETE FROM pending_senders WHERE public_key = ?1", [&key])?;
        tx.execute("DELETE FROM uamp_tokens WHERE sender = ?1", [&key])?;
        tx.execute(
            "INSERT INTO blocked (public_key, blocked_at, reason) VALUES (?1, ?2, ?3)
             ON CONFLICT(public_key) DO UPDATE SET blocked_at = ?2, reason = ?3",
            params![key, now, reason],
        )?;
        tx.commit()?;
        Ok(())
    }

    pub fn unblock(&self, key: &str) -> Result<bool> {
        Ok(self.conn().execute("DELETE FROM blocked WHERE public_key = ?1", [sender_key(key)])? > 0)
    }

    pub fn is_blocked(&self, key: &str) -> Result<bool> {
        self.read(|c| Ok(c.query_row("SELECT 1 FROM blocked WHERE public_key = ?1", [sender_key(key)], |_| Ok(())).optional()?.is_some()))
    }

    pub fn blocked_list(&self) -> Result<Vec<BlockedSender>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT public_key, blocked_at, reason FROM blocked ORDER BY blocked_at DESC")?;
            let rows = stmt.query_map([], |r| Ok(BlockedSender { public_key: r.get(0)?, blocked_at: r.get(1)?, reason: r.get(2)? }))?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    pub fn audit(&self, action: &str, subject: Option<&str>, detail: &serde_json::Value, now: &str) -> Result<()> {
        self.conn().execute("INSERT INTO audit (at, action, subject, detail) VALUES (?1, ?2, ?3, ?4)", params![now, action, subject, detail.to_string()])?;
        Ok(())
    }

    /// Newest first.
    pub fn audit_list(&self, limit: u32) -> Result<Vec<AuditEntry>> {
        self.read(|conn| {
            let mut stmt = conn.prepare("SELECT id, at, action, subject, detail FROM audit ORDER BY id DESC LIMIT ?1")?;
            let rows = stmt.query_map([limit], |r| {
                let detail: String = r.get(4)?;
                Ok(AuditEntry {
                    id: r.get(0)?,
                    at: r.get(1)?,
                    action: r.get(2)?,
                    subject: r.get(3)?,
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                })
            })?;
            rows.collect::<rusqlite::Result<_>>().map_err(Into::into)
        })
    }

    /// The newest receipt of a sender's knock (its body is what "allow once" delivers).
    pub fn latest_receipt_from(&self, sender: &str, code: &str) -> Result<Option<ReceiptRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare(&format!(
                "{RECEIPT_SELECT} WHERE code = ?2 AND seq IN (
                    SELECT seq FROM receipts_by_sender WHERE sender = ?1
                    UNION ALL
                    SELECT seq FROM receipts WHERE seq > (SELECT last_seq FROM search_progress) AND sender = ?1)
                 ORDER BY seq DESC LIMIT 1"
            ))?;
            stmt.query_row(params![sender_key(sender), code], receipt_from_row).optional().map_err(Into::into)
        })
    }

    // ---- settings -----------------------------------------------------------------

    pub fn setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let v: Option<String> = self.read(|c| Ok(c.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0)).optional()?))?;
        v.map(|s| serde_json::from_str(&s).map_err(Into::into)).transpose()
    }

    pub fn set_setting<T: serde::Serialize>(&self, key: &str, value: &T) -> Result<()> {
        self.conn().execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2",
            params![key, serde_json::to_string(value)?],
        )?;
        Ok(())
    }
}

/// One transaction and one fsync for a whole batch of writes; answers go out only after
/// the commit. Refusals (replay, rate) write nothing, so no savepoints are needed; if a
/// statement fails, the batch is rolled back and each job retried in its own transaction
/// so that one bad row fails alone.
fn commit_batch(conn: &mut Connection, batch: Vec<Job>) -> Vec<(Job, AcceptResult)> {
    let together = (|| -> Result<Vec<AcceptResult>> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut results = Vec::with_capacity(batch.len());
        for job in &batch {
            results.push(Ok(run_job(&tx, job)?));
        }
        tx.commit()?;
        Ok(results)
    })();
    match together {
        Ok(results) => batch.into_iter().zip(results).collect(),
        Err(_) if batch.len() > 1 => batch
            .into_iter()
            .map(|job| {
                let r = (|| -> AcceptResult {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let r = run_job(&tx, &job)?;
                    tx.commit()?;
                    Ok(r)
                })();
                (job, r)
            })
            .collect(),
        Err(e) => {
            let msg = e.to_string();
            batch.into_iter().map(|job| (job, Err(StoreError::CommitFailed(msg.clone())))).collect()
        }
    }
}

/// Unknown senders waiting for the user at once; past this the oldest request goes.
pub const MAX_PENDING: usize = 256;
/// Scopes remembered per waiting sender.
pub const MAX_SCOPES_TRIED: usize = 16;

fn upsert_pending(conn: &Connection, k: &Knock) -> Result<()> {
    let key = sender_key(&k.sender);
    let scopes: Option<String> = conn.prepare_cached("SELECT scopes FROM pending_senders WHERE public_key = ?1")?.query_row([&key], |r| r.get(0)).optional()?;
    let new_key = scopes.is_none();
    let mut scopes: Vec<String> = match scopes {
        Some(s) => serde_json::from_str(&s)?,
        None => Vec::new(),
    };
    if !scopes.contains(&k.scope) && scopes.len() < MAX_SCOPES_TRIED {
        scopes.push(k.scope.clone());
    }
    if new_key {
        // The queue is bounded: a fresh signing key costs a stranger nothing, so past the
        // bound the request that waited longest without a word is dropped.
        conn.prepare_cached(
            "DELETE FROM pending_senders WHERE public_key IN
               (SELECT public_key FROM pending_senders ORDER BY last_seen ASC, public_key
                LIMIT max(0, (SELECT count(*) FROM pending_senders) - ?1 + 1))",
        )?
        .execute([MAX_PENDING as i64])?;
    }
    conn.prepare_cached(
        "INSERT INTO pending_senders (public_key, first_seen, last_seen, count, scopes, last_envelope_id)
         VALUES (?1, ?2, ?2, 1, ?3, ?4)
         ON CONFLICT(public_key) DO UPDATE SET last_seen = ?2, count = count + 1, scopes = ?3, last_envelope_id = ?4",
    )?
    .execute(params![key, k.at, serde_json::to_string(&scopes)?, k.envelope_id])?;
    Ok(())
}

fn run_job(tx: &Connection, job: &Job) -> AcceptResult {
    match job {
        Job::Accept { rec, limits, json, .. } => accept_one(tx, rec, limits, json),
        Job::Receipt { row, knock, json, .. } => {
            if let Some(k) = knock {
                upsert_pending(tx, k)?;
            }
            insert_receipt_as(tx, row, row.envelope_row, &json.receipt).map(|()| Ok(0))
        }
        Job::SetExec { updates, now, .. } => {
            let mut stmt = tx.prepare_cached("UPDATE envelopes SET exec_status = ?2, exec_result = ?3, exec_updated_at = ?4 WHERE id = ?1")?;
            for (id, status, result) in updates {
                stmt.execute(params![id, status.as_str(), result.as_ref().map(|r| r.to_string()), now])?;
            }
            Ok(Ok(0))
        }
        Job::IndexSearch { .. } => index_receipts(tx).map(|()| Ok(0)),
        Job::Synced | Job::Shutdown => Ok(Ok(0)),
    }
}

fn answer(job: Job, r: AcceptResult) {
    match job {
        Job::Accept { reply, .. } => reply.send(r),
        Job::Receipt { reply, .. } | Job::SetExec { reply, .. } | Job::IndexSearch { reply } => reply.send(r.map(|_| ())),
        Job::Synced | Job::Shutdown => {}
    }
}

fn accept_one(tx: &Connection, rec: &NewEnvelope, limits: &RateLimit, json: &Serialized) -> AcceptResult {
    if let Some(admitted) = rec.admission_version {
        // The write lock is held: nothing can change admission until this commits.
        let now: i64 = tx.prepare_cached("SELECT n FROM admission_version")?.query_row([], |r| r.get(0))?;
        if now != admitted {
            return Ok(Err(AcceptRefusal::Stale));
        }
    }
    let seen: bool = tx.prepare_cached("SELECT 1 FROM nonces WHERE nonce = ?1")?.query_row([&rec.nonce], |_| Ok(true)).optional()?.unwrap_or(false);
    if seen {
        return Ok(Err(AcceptRefusal::Replay));
    }
    let minute = minute_of(rec.received_ms);
    for (window, secs, limit) in [("hour", 3600i64, limits.max_per_hour), ("day", 86_400, limits.max_per_day)] {
        let Some(limit) = limit else { continue };
        // Whole minutes: the minute the window starts in counts in full, so a limit may
        // bite up to a minute early but never lets more through (docs/interop.md).
        let since = minute_of(rec.received_ms - secs * 1000);
        let (count, oldest): (u32, Option<i64>) = tx
            .prepare_cached("SELECT coalesce(sum(n), 0), min(minute) FROM usage_minutes WHERE sender = ?1 AND minute >= ?2")?
            .query_row(params![rec.sender, since], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if count >= limit {
            // The window frees a slot when its oldest minute falls out of it.
            let frees_at = oldest.map_or(rec.received_ms, |m| (m + 1) * MINUTE_MS) + secs * 1000;
            let retry_after_secs = ((frees_at - rec.received_ms).max(1000) as u64).div_ceil(1000);
            return Ok(Err(AcceptRefusal::RateLimited { window, limit, retry_after_secs }));
        }
    }
    tx.prepare_cached(
        "INSERT INTO envelopes (envelope_id, sender, recipient, scope, payload_type, conversation_id,
            in_reply_to, on_behalf_of, prompt, timestamp, expires_at, received_at, received_ms,
            transport, signed_form, raw, raw_sha256, receipt_id, executor, exec_status, exec_result,
            exec_updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
            ?21, CASE WHEN ?21 IS NULL THEN NULL ELSE ?12 END)",
    )?
    .execute(params![
        rec.envelope_id,
        rec.sender,
        rec.recipient,
        rec.scope,
        rec.payload_type,
        rec.conversation_id,
        rec.in_reply_to,
        rec.on_behalf_of,
        rec.prompt,
        rec.timestamp,
        rec.expires_at,
        rec.received_at,
        rec.received_ms,
        rec.transport,
        rec.signed_form,
        rec.raw,
        rec.raw_sha256,
        rec.receipt.receipt_id,
        rec.executor,
        rec.exec_status.as_str(),
        json.exec_result,
    ])?;
    let id = tx.last_insert_rowid();
    tx.prepare_cached("INSERT INTO nonces (nonce, expires_at_ms, envelope_row) VALUES (?1, ?2, ?3)")?.execute(params![rec.nonce, rec.expires_at_ms, id])?;
    insert_receipt_as(tx, &rec.receipt, Some(id), &json.receipt)?;
    tx.prepare_cached(
        "INSERT INTO usage_minutes (sender, minute, n) VALUES (?1, ?2, 1)
         ON CONFLICT (sender, minute) DO UPDATE SET n = n + 1",
    )?
    .execute(params![rec.sender, minute])?;
    Ok(Ok(id))
}

/// How long per-minute usage is kept: the day window, and "today" on a 25-hour day.
const USAGE_KEPT_MS: i64 = 3 * 86_400_000;

const MINUTE_MS: i64 = 60_000;

/// The minute (since the epoch) a time in milliseconds falls in: usage_minutes' key.
fn minute_of(ms: i64) -> i64 {
    ms.div_euclid(MINUTE_MS)
}

const TRUST_SELECT: &str = "SELECT public_key, name, added_at, policy FROM trust";

type TrustColumns = (String, String, String, String);

fn trust_columns(r: &rusqlite::Row<'_>) -> rusqlite::Result<TrustColumns> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn trust_entry((public_key, name, added_at, policy): TrustColumns) -> Result<TrustEntry> {
    Ok(TrustEntry { public_key, name, added_at, policy: serde_json::from_str(&policy)? })
}

const RECEIPT_SELECT: &str = "SELECT receipt_id, envelope_id, status, code, message, received_at, received_ms,
    transport, sender, scope, body, body_truncated, receipt, prompt, envelope_row FROM receipts";

fn insert_receipt(conn: &Connection, r: &ReceiptRow) -> Result<()> {
    insert_receipt_as(conn, r, r.envelope_row, &r.receipt.to_string())
}

/// Inserts `r` for the envelope row given, with its receipt already as JSON text.
fn insert_receipt_as(conn: &Connection, r: &ReceiptRow, envelope_row: Option<i64>, receipt: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO receipts (receipt_id, envelope_id, status, code, message, received_at, received_ms,
            transport, sender, scope, body, body_truncated, receipt, prompt, envelope_row)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?
    .execute(params![
        r.receipt_id,
        r.envelope_id,
        r.status,
        r.code,
        r.message,
        r.received_at,
        r.received_ms,
        r.transport,
        r.sender,
        r.scope,
        r.body,
        r.body_truncated,
        receipt,
        r.prompt,
        envelope_row,
    ])?;
    Ok(())
}

fn receipt_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReceiptRow> {
    let receipt: String = r.get(12)?;
    Ok(ReceiptRow {
        receipt_id: r.get(0)?,
        envelope_id: r.get(1)?,
        status: r.get(2)?,
        code: r.get(3)?,
        message: r.get(4)?,
        received_at: r.get(5)?,
        received_ms: r.get(6)?,
        transport: r.get(7)?,
        sender: r.get(8)?,
        scope: r.get(9)?,
        body: r.get(10)?,
        body_truncated: r.get(11)?,
        receipt: serde_json::from_str(&receipt).unwrap_or(serde_json::Value::Null),
        prompt: r.get(13)?,
        envelope_row: r.get(14)?,
    })
}

const ENVELOPE_SELECT: &str = "SELECT id, envelope_id, sender, recipient, scope, payload_type, conversation_id,
    in_reply_to, on_behalf_of, prompt, timestamp, expires_at, received_at, transport, signed_form, raw,
    receipt_id, executor, exec_status, exec_result, exec_updated_at FROM envelopes";

fn envelope_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EnvelopeRow> {
    let exec_result: Option<String> = r.get(19)?;
    let status: String = r.get(18)?;
    Ok(EnvelopeRow {
        id: r.get(0)?,
        envelope_id: r.get(1)?,
        sender: r.get(2)?,
        recipient: r.get(3)?,
        scope: r.get(4)?,
        payload_type: r.get(5)?,
        conversation_id: r.get(6)?,
        in_reply_to: r.get(7)?,
        on_behalf_of: r.get(8)?,
        prompt: r.get(9)?,
        timestamp: r.get(10)?,
        expires_at: r.get(11)?,
        received_at: r.get(12)?,
        transport: r.get(13)?,
        signed_form: r.get(14)?,
        raw: r.get(15)?,
        receipt_id: r.get(16)?,
        executor: r.get(17)?,
        exec_status: ExecStatus::parse(&status).unwrap_or(ExecStatus::Failed),
        exec_result: exec_result.and_then(|s| serde_json::from_str(&s).ok()),
        exec_updated_at: r.get(20)?,
    })
}
