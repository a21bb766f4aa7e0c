//! Opening the store: the one write connection (WAL, migrations), the committer, and the
//! pool of read connections; the database files are the user's alone.

use crate::*;
use rusqlite::Connection;
use std::sync::MutexGuard;

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
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
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

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (transactions
        // roll back on drop), so a poisoned lock is safe to reuse.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}
