//! Opening the store: the one write connection (WAL, migrations), the committer, and the
//! pool of read connections; the database files are the user's alone.

use crate::sql::{args, Arg, Db, Optional, Row, Stmt};
use crate::*;
use rusqlite::Connection;
use std::sync::{Arc, MutexGuard};

/// Idle read connections kept open.
pub(crate) const MAX_READERS: usize = 64;

/// The database and its WAL and shared-memory files are readable by the user alone:
/// created 0600 (SQLite gives -wal and -shm the database file's mode), and tightened if an
/// older version left them readable by others.
pub(crate) fn private_files(path: &Path) -> Result<()> {
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

/// Counters of a team's database (see [`Store::database_counters`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct DatabaseCounters {
    pub commits: i64,
    /// Statements run, when `pg_stat_statements` is loaded.
    pub statements: Option<i64>,
}

/// The engine a store runs on.
pub(crate) enum Engine {
    Lite(Arc<Mutex<Connection>>),
    Pg(Arc<crate::pg::Pg>),
}

/// A connection held for direct writes: SQLite's one writer, or a pooled PostgreSQL
/// connection (returned to the pool when dropped).
pub(crate) enum Guard<'s> {
    Lite(MutexGuard<'s, Connection>),
    Pg(Box<crate::pg::Lease<'s>>),
}

impl Guard<'_> {
    /// Whether this SQLite connection's commits wait for the disk (`FULL`) or not
    /// (`NORMAL`: durable once a later commit syncs the WAL). PostgreSQL's commits are
    /// durable as they are: nothing changes there.
    fn set_synchronous(&self, level: &str) -> Result<()> {
        if let Guard::Lite(c) = self {
            c.pragma_update(None, "synchronous", level)?;
        }
        Ok(())
    }

    /// Runs `f` with this SQLite connection's commits not waiting for the disk (durable
    /// once a later commit, or the store's flushing thread, syncs the WAL), and waiting
    /// again afterwards however `f` ends. Nothing changes on PostgreSQL.
    pub(crate) fn unsynced<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.set_synchronous("NORMAL")?;
        let out = f(self);
        self.set_synchronous("FULL")?;
        out
    }

    pub(crate) fn db(&self) -> Db<'_> {
        match self {
            Guard::Lite(c) => Db::Lite(c),
            Guard::Pg(c) => Db::Pg(c.conn()),
        }
    }
    pub(crate) fn execute(&self, sql: &str, args: &[&dyn Arg]) -> Result<usize> {
        self.db().execute(sql, args)
    }
    pub(crate) fn query_row<T>(&self, sql: &str, args: &[&dyn Arg], f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        self.db().query_row(sql, args, f)
    }

    /// A write transaction (SQLite's IMMEDIATE: the write lock from the start), rolled
    /// back unless committed.
    pub(crate) fn transaction(&mut self) -> Result<Tx<'_>> {
        Ok(match self {
            Guard::Lite(c) => Tx::Lite(Some(c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)),
            Guard::Pg(c) => {
                c.conn().batch("BEGIN")?;
                Tx::Pg(c.conn(), false)
            }
        })
    }
}

/// An open write transaction of either engine.
pub(crate) enum Tx<'c> {
    /// (Some until committed.)
    Lite(Option<rusqlite::Transaction<'c>>),
    /// (Whether it was committed.)
    Pg(&'c crate::pg::Conn, bool),
}

impl Tx<'_> {
    pub(crate) fn db(&self) -> Db<'_> {
        match self {
            Tx::Lite(t) => Db::Lite(t.as_ref().expect("an open transaction")),
            Tx::Pg(c, _) => Db::Pg(c),
        }
    }
    pub(crate) fn execute(&self, sql: &str, args: &[&dyn Arg]) -> Result<usize> {
        self.db().execute(sql, args)
    }
    pub(crate) fn query_row<T>(&self, sql: &str, args: &[&dyn Arg], f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        self.db().query_row(sql, args, f)
    }
    pub(crate) fn prepare_cached(&self, sql: &str) -> Result<Stmt<'_>> {
        self.db().prepare_cached(sql)
    }
    pub(crate) fn commit(mut self) -> Result<()> {
        match &mut self {
            Tx::Lite(t) => Ok(t.take().expect("an open transaction").commit()?),
            Tx::Pg(c, done) => {
                *done = true;
                c.batch("COMMIT")
            }
        }
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if let Tx::Pg(c, false) = self {
            let _ = c.batch("ROLLBACK");
        }
    }
}

impl Store {
    pub fn open(path: &Path) -> Result<Store> {
        private_files(path)?;
        let conn = Connection::open(path)?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// A team's gate: the store in the PostgreSQL database at `url`. Its schema is made
    /// or brought up to date first, by one node at a time.
    pub fn open_url(url: &str) -> Result<Store> {
        let pg = Arc::new(crate::pg::Pg::new(url)?);
        pg.with(crate::pg::migrate)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let p = pg.clone();
        let store = Store::with_committer(Engine::Pg(pg), None, tx, move || crate::commit_pg::committer(&p, rx))?;
        store.seal_audit()?;
        store.move_if_never_sealed()?;
        Ok(store)
    }

    /// A store on `engine` whose group commits run on a thread of their own (`commit`).
    fn with_committer(
        engine: Engine,
        path: Option<std::path::PathBuf>,
        jobs: std::sync::mpsc::Sender<Job>,
        commit: impl FnOnce() + Send + 'static,
    ) -> Result<Store> {
        let committer = std::thread::Builder::new()
            .name("gatehouse-commit".into())
            .spawn(commit)
            .map_err(|e| StoreError::CommitFailed(format!("cannot start the commit thread: {e}")))?;
        Ok(Store {
            engine,
            path,
            data_dir: None,
            node: crate::claims::LOCAL.into(),
            readers: Mutex::new(Vec::new()),
            admissions: Mutex::new(std::collections::HashMap::new()),
            sealer: None,
            sealed: Mutex::new(None),
            seals_verified: Mutex::new(std::collections::HashSet::new()),
            jobs: Some(jobs),
            committer: Some(committer),
            waiting: tokio::sync::broadcast::channel(16).0,
            listening: std::sync::Once::new(),
            flusher: std::sync::OnceLock::new(),
        })
    }

    /// The PostgreSQL database at `url` as [`Store::location`] names it, for a message
    /// about a database that could not be opened.
    pub fn describe_url(url: &str) -> String {
        match crate::pg::tls::read(url) {
            Ok((config, _)) => crate::pg::describe(&config),
            Err(_) => "an unreadable database URL".into(),
        }
    }

    /// Where this store is, for messages: a file, or a PostgreSQL database by host and
    /// name (never its password).
    pub fn location(&self) -> String {
        match &self.engine {
            Engine::Pg(pg) => pg.describe(),
            Engine::Lite(_) => self.path.as_ref().map_or_else(|| "memory".to_string(), |p| p.display().to_string()),
        }
    }

    /// A team's gate is one identity: the first node records its public key, and every
    /// node after must have the same. Returns the key the database belongs to when it
    /// is another one. (A data dir's own file needs no such record.)
    pub fn claim_identity(&self, public_key: &str) -> Result<Option<String>> {
        if !self.is_shared() {
            return Ok(None);
        }
        let mut g = self.conn()?;
        let tx = g.transaction()?;
        tx.execute("LOCK TABLE gate_identity IN EXCLUSIVE MODE", args![])?;
        let owner: Option<String> = tx.query_row("SELECT public_key FROM gate_identity", args![], |r| r.get(0)).optional()?;
        let out = match owner {
            Some(o) if o != public_key => Some(o),
            Some(_) => None,
            None => {
                tx.execute("INSERT INTO gate_identity (public_key) VALUES (?1)", args![public_key])?;
                None
            }
        };
        tx.commit()?;
        Ok(out)
    }

    /// Every (table, column) of the schema, sorted: the two engines' schemas are written
    /// apart (`migrations`, `pg/schema.rs`), and a test holds them to the same tables.
    #[doc(hidden)]
    pub fn schema_columns(&self) -> Result<Vec<(String, String)>> {
        self.read(|c| {
            let sql = if c.is_pg() {
                "SELECT CAST(table_name AS TEXT), CAST(column_name AS TEXT) FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2"
            } else {
                "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY 1, 2"
            };
            c.query_map(sql, args![], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
    }

    /// The database answers a query now.
    pub fn ping(&self) -> Result<()> {
        self.read(|c| c.query_row("SELECT 1", args![], |_| Ok(())))
    }

    /// What PostgreSQL counted for this database so far (a team's bench reads it before
    /// and after); zeros on SQLite.
    pub fn database_counters(&self) -> Result<DatabaseCounters> {
        if !self.is_shared() {
            return Ok(DatabaseCounters::default());
        }
        self.read(|c| {
            let commits: i64 = c.query_row("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()", args![], |r| r.get(0))?;
            let statements = c
                .query_row(
                    "SELECT CAST(sum(calls) AS BIGINT) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()",
                    args![],
                    |r| r.get::<Option<i64>>(0),
                )
                .ok()
                .flatten();
            Ok(DatabaseCounters { commits, statements })
        })
    }

    /// Whether this store is a team's (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        matches!(self.engine, Engine::Pg(_))
    }

    /// The directory the database file lives in (the data dir), for on-disk stores.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref().or_else(|| self.path.as_deref().and_then(Path::parent))
    }

    /// Where this node keeps what is its own beside a shared database (its keychain
    /// entries, its TLS certificate, its watched folder's filings).
    pub fn with_data_dir(mut self, dir: &Path) -> Store {
        self.data_dir = Some(dir.to_path_buf());
        self
    }

    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, None)
    }

    pub(crate) fn init(mut conn: Connection, path: Option<std::path::PathBuf>) -> Result<Store> {
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
        let store = Store::with_committer(Engine::Lite(conn), path, tx, move || committer(c, rx, helper, syncer))?;
        store.seal_audit()?;
        store.move_if_never_sealed()?;
        Ok(store)
    }

    /// Runs a read on a pooled read connection, so reads never queue behind a commit.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T> {
        let writer = match &self.engine {
            Engine::Pg(pg) => return pg.with(|c| f(&Db::Pg(c))),
            Engine::Lite(w) => w,
        };
        let Some(path) = &self.path else {
            return f(&Db::Lite(&writer.lock().unwrap_or_else(|p| p.into_inner())));
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
        let out = f(&Db::Lite(&conn));
        let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        // Enough for every concurrent reader under load: a connection dropped here costs
        // the next reader a schema parse and its statement cache.
        if pool.len() < MAX_READERS {
            pool.push(conn);
        }
        out
    }

    /// What syncs the WAL for a write committed without waiting for the disk: SQLite's on
    /// disk, started on first use.
    pub(crate) fn flusher(&self) -> Option<&crate::flush::Flusher> {
        let Engine::Lite(_) = self.engine else { return None };
        self.flusher.get_or_init(|| self.path.as_deref().and_then(crate::flush::Flusher::start)).as_ref()
    }

    /// Runs a small read on SQLite's write connection instead of a pooled reader: a
    /// reader drops every page it cached once anything was committed since its last read
    /// (WAL), so on a path that writes with each call, each of its reads fetched its pages
    /// again (a third of an MCP call's time at the gate went to reading one pin, one
    /// entry and the rules). The writer's cache stays good across its own commits. Such a
    /// read waits for a commit in progress, as the path's own write does; PostgreSQL reads
    /// as [`Store::read`].
    pub(crate) fn read_warm<T>(&self, f: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T> {
        match &self.engine {
            Engine::Pg(_) => self.read(f),
            Engine::Lite(w) => f(&Db::Lite(&w.lock().unwrap_or_else(|p| p.into_inner()))),
        }
    }

    pub(crate) fn conn(&self) -> Result<Guard<'_>> {
        match &self.engine {
            // A panic while holding the lock cannot leave SQLite inconsistent (transactions
            // roll back on drop), so a poisoned lock is safe to reuse.
            Engine::Lite(c) => Ok(Guard::Lite(c.lock().unwrap_or_else(|p| p.into_inner()))),
            Engine::Pg(pg) => Ok(Guard::Pg(Box::new(pg.lease()?))),
        }
    }
}
