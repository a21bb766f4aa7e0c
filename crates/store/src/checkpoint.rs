//! WAL checkpoints off the commit path. The writer commits into the WAL only; this
//! thread copies committed frames back into the database file shortly after, with its
//! own connection, so no acceptance waits for a checkpoint's fsyncs.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::Result;

/// How long committed frames may sit in the WAL before they are copied back.
const INTERVAL: Duration = Duration::from_millis(200);

pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    stop: AtomicBool,
    dirty: AtomicBool,
}

impl Checkpointer {
    pub(crate) fn start(path: &Path) -> Result<Checkpointer> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        // Once a checkpoint has let the WAL restart, give the file's space back.
        conn.pragma_update(None, "journal_size_limit", 64 * 1024 * 1024)?;
        let shared = Arc::new(Shared { stop: AtomicBool::new(false), dirty: AtomicBool::new(false) });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("gatehouse-checkpoint".into())
            .spawn(move || {
                while !s.stop.load(Ordering::Acquire) {
                    std::thread::park_timeout(INTERVAL);
                    if s.dirty.swap(false, Ordering::AcqRel) {
                        checkpoint(&conn);
                    }
                }
                checkpoint(&conn);
            })
            .map_err(|e| crate::StoreError::CommitFailed(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer { shared, thread: Some(thread) })
    }

    /// What the committer uses to say something was committed.
    pub(crate) fn nudger(&self) -> Nudge {
        Nudge(self.shared.clone())
    }
}

pub(crate) struct Nudge(Arc<Shared>);

impl Nudge {
    pub(crate) fn nudge(&self) {
        self.0.dirty.store(true, Ordering::Release);
    }
}

fn checkpoint(conn: &Connection) {
    // PASSIVE never waits for readers or the writer; what it cannot copy now it copies
    // next time.
    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "WAL checkpoint failed; will retry");
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
