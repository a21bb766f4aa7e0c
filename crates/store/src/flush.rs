//! Direct writes whose commit does not wait for the disk, made durable by one thread's
//! fdatasync of the WAL for every write waiting at the time (group commit). A caller that
//! has other work to do meanwhile waits for its [`Durable`] only where it must: before
//! anything that depends on the write is acknowledged (an MCP call's record, flushed while
//! the server works; the app sees the server's answer only once the record is on disk).

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
            Some(rx) => rx.await.unwrap_or_else(|_| Err("the flushing thread stopped".into())).map_err(StoreError::CommitFailed),
        }
    }
}

fn stopped() -> StoreError {
    StoreError::CommitFailed("the flushing thread stopped".into())
}

/// The thread that syncs the WAL for writes committed without waiting for the disk.
pub(crate) struct Flusher {
    asks: std::sync::mpsc::Sender<Told>,
}

impl Flusher {
    /// The flusher of the database at `db` (its thread ends when the flusher is dropped).
    pub(crate) fn start(db: &Path) -> Option<Flusher> {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let (asks, asked) = std::sync::mpsc::channel::<Told>();
        std::thread::Builder::new()
            .name("gatehouse-flush".into())
            .spawn(move || {
                let mut file = None;
                while let Ok(first) = asked.recv() {
                    // Everything committed before this sync starts is covered by it.
                    let waiting: Vec<Told> = std::iter::once(first).chain(asked.try_iter()).collect();
                    let synced = crate::commit::sync_file(&wal, &mut file).map_err(|e| {
                        tracing::error!(error = %e, "the write-ahead log could not be synced");
                        format!("the write-ahead log could not be synced to disk: {e}")
                    });
                    for told in waiting {
                        let _ = told.send(synced.clone());
                    }
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
                let _ = lost.0.send(Err("the flushing thread stopped".into()));
                Durable(Some(told))
            }
        }
    }
}
