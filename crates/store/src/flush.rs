//! Direct writes whose commit does not wait for the disk, made durable by one thread's
//! fdatasync of the WAL for every write waiting at the time (group commit). A caller that
//! has other work to do meanwhile waits for its [`Durable`] only where it must: before
//! anything that depends on the write is acknowledged (an MCP call's record, flushed while
//! the server works; the app sees the server's answer only once the record is on disk).
//! The committer's batches are made durable by a thread of the same kind ([`wal_syncer`]).

use std::path::{Path, PathBuf};

use tokio::sync::oneshot;

use crate::{Result, StoreError};

type Told = oneshot::Sender<std::result::Result<(), String>>;

/// When a write is on disk.
#[derive(Debug)]
pub struct Durable(Option<oneshot::Receiver<std::result::Result<(), String>>>);

impl Durable {
    /// A write that was durable when its commit returned (PostgreSQL, a store in memory,
    /// `synchronous=FULL`).
    pub fn now() -> Durable {
        Durable(None)
    }

    /// Whether the write is on disk (`Some(Ok)`), could not be put there (`Some(Err)`), or
    /// is still waiting (`None`); never waits.
    pub fn try_done(&mut self) -> Option<Result<()>> {
        let Some(rx) = self.0.as_mut() else { return Some(Ok(())) };
        let done = match rx.try_recv() {
            Ok(r) => r.map_err(StoreError::CommitFailed),
            Err(oneshot::error::TryRecvError::Empty) => return None,
            Err(oneshot::error::TryRecvError::Closed) => Err(stopped()),
        };
        self.0 = None;
        Some(done)
    }

    /// Waits until the write is on disk, or could not be put there.
    pub async fn done(self) -> Result<()> {
        match self.0 {
            None => Ok(()),
            Some(rx) => rx.await.unwrap_or_else(|_| Err(STOPPED.into())).map_err(StoreError::CommitFailed),
        }
    }
}

const STOPPED: &str = "the flushing thread stopped";

fn stopped() -> StoreError {
    StoreError::CommitFailed(STOPPED.into())
}

/// The thread that syncs the WAL for writes committed without waiting for the disk.
pub(crate) struct Flusher {
    asks: std::sync::mpsc::Sender<Told>,
}

impl Flusher {
    /// The flusher of the database at `db` (its thread ends when the flusher is dropped).
    pub(crate) fn start(db: &Path) -> Option<Flusher> {
        let (asks, asked) = std::sync::mpsc::channel::<Told>();
        wal_syncer("gatehouse-flush", db, asked, |waiting, synced| {
            for told in waiting {
                let _ = told.send(synced.clone());
            }
        })
        .ok()?;
        Some(Flusher { asks })
    }

    /// When what was committed before this call is on disk.
    pub(crate) fn ask(&self) -> Durable {
        let (tell, told) = oneshot::channel();
        match self.asks.send(tell) {
            Ok(()) => Durable(Some(told)),
            Err(lost) => {
                let _ = lost.0.send(Err(STOPPED.into()));
                Durable(Some(told))
            }
        }
    }
}

/// Starts the thread `name` that syncs the WAL of the database at `db` once for everything
/// waiting in `queued` when the sync starts (everything committed before it is covered),
/// then hands what waited and the sync's outcome to `synced`. It ends when `queued` closes.
pub(crate) fn wal_syncer<T: Send + 'static>(
    name: &str,
    db: &Path,
    queued: std::sync::mpsc::Receiver<T>,
    mut synced: impl FnMut(Vec<T>, std::result::Result<(), String>) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let wal = PathBuf::from(wal);
    std::thread::Builder::new().name(name.into()).spawn(move || {
        let mut file = None;
        while let Ok(first) = queued.recv() {
            let waiting: Vec<T> = std::iter::once(first).chain(queued.try_iter()).collect();
            let outcome = sync_file(&wal, &mut file).map_err(|e| {
                tracing::error!(error = %e, "the write-ahead log could not be synced");
                format!("the write-ahead log could not be synced to disk: {e}")
            });
            synced(waiting, outcome);
        }
    })
}

/// fdatasync of `path`, through a descriptor kept open while it still names that file.
fn sync_file(path: &Path, file: &mut Option<std::fs::File>) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SQLite keeps the WAL while a connection is open, but never sync a descriptor
        // of a file that a path no longer names: that would sync nothing we wrote.
        if let Some(f) = file.as_ref() {
            let (open, now) = (f.metadata()?, std::fs::metadata(path)?);
            if (open.dev(), open.ino()) != (now.dev(), now.ino()) {
                *file = None;
            }
        }
    }
    #[cfg(not(unix))]
    {
        *file = None;
    }
    let f = match file {
        Some(f) => f,
        None => file.insert(std::fs::OpenOptions::new().read(true).write(true).open(path)?),
    };
    f.sync_data()
}
