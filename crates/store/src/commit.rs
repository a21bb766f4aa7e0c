//! The group-commit loop: every acceptance, rejection and executor status waiting is
//! written in one transaction, and its callers hear back only once that transaction is
//! durable.
//!
//! For a store on disk the fsync that makes a batch durable runs on the syncer's thread,
//! and while it runs the committer goes on executing the writes that arrive into the
//! next, still open, transaction; that transaction commits the moment the fsync is done.
//! The disk's wait and the SQL work overlap instead of taking turns, yet every batch is
//! still as large as what arrived during one fsync (committing without waiting for the
//! previous fsync made batches of a handful of writes, each rewriting the same index
//! pages: measured slower). The batch's own commit writes its WAL frames with
//! `synchronous=NORMAL` (no fsync) and the syncer's `fdatasync` of the WAL file makes
//! them durable before anyone is answered. Direct writes (trust, settings) keep
//! `synchronous=FULL`.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use rusqlite::{Connection, TransactionBehavior};

use crate::jobs::{answer, blocking, commit_batch, run_job, Job, MAX_BATCH};
use crate::replay::AcceptResult;
use crate::sql::Db;
use crate::{Result, StoreError};

type Settled = Vec<(Job, AcceptResult)>;

/// Makes committed batches durable (one fdatasync of the WAL for all batches waiting)
/// and answers their callers.
pub(crate) struct Syncer {
    batches: std::sync::mpsc::Sender<Settled>,
    thread: std::thread::JoinHandle<()>,
}

impl Syncer {
    /// `wake` is the committer's own queue: it hears `Job::Synced` when a sync is done.
    pub(crate) fn start(db: &Path, wake: std::sync::mpsc::Sender<Job>) -> Option<Syncer> {
        let (batches, queued) = std::sync::mpsc::channel::<Settled>();
        let thread = crate::flush::wal_syncer("gatehouse-sync", db, queued, move |batches, synced| {
            for (job, r) in batches.into_iter().flatten() {
                answer(job, synced.clone().map_err(StoreError::CommitFailed).and(r));
            }
            let _ = wake.send(Job::Synced);
        })
        .ok()?;
        Some(Syncer { batches, thread })
    }

    fn stop(self) {
        drop(self.batches);
        let _ = self.thread.join();
    }
}

pub(crate) fn committer(conn: Arc<Mutex<Connection>>, jobs: std::sync::mpsc::Receiver<Job>, mut helper: Option<Checkpointer>, mut syncer: Option<Syncer>) {
    let lock = || conn.lock().unwrap_or_else(|p| p.into_inner());
    let mut since_checkpoint = 0u32;
    let mut last_checkpoint = Instant::now();
    let mut index_due = false;
    // A batch is with the syncer.
    let mut syncing = false;
    let mut stopping = false;
    // Writes executed in the open transaction, with what each will be answered.
    let mut open: Settled = Vec::new();
    // Held from BEGIN to COMMIT, so direct writes never land inside a batch.
    let mut writer: Option<MutexGuard<'_, Connection>> = None;
    // Once stopping, what was open has been committed and handed to the syncer (whose
    // stop below waits for it).
    while !stopping {
        let first = if open.is_empty() && !syncing && since_checkpoint > 0 {
            match jobs.recv_timeout(CHECKPOINT_EVERY) {
                Ok(j) => Some(j),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    // Idle: no commit to hold up, so finish the checkpoint here.
                    if let Some(h) = helper.as_mut().filter(|h| h.busy) {
                        let _ = h.done.recv();
                        h.busy = false;
                    }
                    checkpoint(&conn);
                    since_checkpoint = 0;
                    last_checkpoint = Instant::now();
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            }
        } else {
            jobs.recv().ok()
        };
        // A closed queue stops the loop like a Shutdown.
        let mut next = Some(first.unwrap_or(Job::Shutdown));
        let mut taken = 0;
        while let Some(job) = next.take() {
            match job {
                Job::Synced => syncing = false,
                Job::Shutdown => stopping = true,
                work => {
                    taken += 1;
                    let c = writer.get_or_insert_with(lock);
                    if !execute(c, work, &mut open, &mut index_due, syncer.is_some()) {
                        writer = None;
                    }
                }
            }
            if taken < MAX_BATCH {
                next = jobs.try_recv().ok();
            }
        }
        // Commit when the disk is free; until then the transaction keeps taking writes
        // (up to a batch's worth).
        if open.is_empty() || (syncing && !stopping && open.len() < MAX_BATCH) {
            continue;
        }
        let c = writer.take().unwrap_or_else(lock);
        let committed = c.execute_batch("COMMIT");
        if committed.is_err() {
            let _ = c.execute_batch("ROLLBACK");
        }
        let _ = c.pragma_update(None, "synchronous", "FULL");
        drop(c);
        let settled = std::mem::take(&mut open);
        match (committed, syncer.as_ref()) {
            (Ok(()), Some(s)) => match s.batches.send(settled) {
                Ok(()) => syncing = true,
                Err(lost) => lost.0.into_iter().for_each(|(job, _)| answer(job, Err(StoreError::CommitFailed("the sync thread stopped".into())))),
            },
            // No syncer (an in-memory store): the commit ran with synchronous=FULL.
            (Ok(()), None) => settled.into_iter().for_each(|(job, r)| answer(job, r)),
            (Err(e), _) => {
                let msg = e.to_string();
                settled.into_iter().for_each(|(job, _)| answer(job, Err(StoreError::CommitFailed(msg.clone()))));
            }
        }
        since_checkpoint += 1;
        let due = since_checkpoint >= CHECKPOINT_EVERY_COMMITS || last_checkpoint.elapsed() >= CHECKPOINT_EVERY;
        let finished = match helper.as_mut() {
            Some(h) if h.busy => {
                let done = h.done.try_recv().is_ok();
                if done {
                    h.busy = false;
                    wal_checkpoint(&lock());
                }
                done
            }
            Some(h) => {
                if due {
                    h.busy = h.wake.try_send(()).is_ok();
                    index_due = true;
                }
                false
            }
            None => {
                if due {
                    checkpoint(&conn);
                }
                due
            }
        };
        if finished {
            since_checkpoint = 0;
            last_checkpoint = Instant::now();
        }
    }
    drop(writer);
    if let Some(s) = syncer.take() {
        s.stop();
    }
    if let Some(h) = helper.take().filter(|h| h.busy) {
        let _ = h.done.recv();
    }
    checkpoint(&conn);
}

/// Runs one write in the open transaction (opening it first if need be). False when
/// no transaction is left open: it could not begin, or a statement failed and every
/// write of the batch was retried and answered on its own.
fn execute(c: &mut Connection, work: Job, open: &mut Settled, index_due: &mut bool, synced_apart: bool) -> bool {
    if open.is_empty() {
        if let Err(e) = begin(c, synced_apart) {
            answer(work, Err(StoreError::CommitFailed(e.to_string())));
            return false;
        }
        if std::mem::take(index_due) {
            // Search indexing shares this batch's transaction and sync rather than
            // taking a commit of its own while callers wait.
            let job = Job::IndexSearch { reply: blocking().0 };
            match run_job(&Db::Lite(c), &job) {
                Ok(r) => open.push((job, Ok(r))),
                Err(e) => tracing::warn!(error = %e, "search indexing failed; will retry"),
            }
        }
    }
    match run_job(&Db::Lite(c), &work) {
        Ok(r) => {
            open.push((work, Ok(r)));
            true
        }
        Err(_) => {
            // A statement failed: undo the batch and give each write its own
            // transaction, so that the bad one fails alone.
            let _ = c.execute_batch("ROLLBACK");
            let _ = c.pragma_update(None, "synchronous", "FULL");
            let mut retry: Vec<Job> = open.drain(..).map(|(j, _)| j).collect();
            retry.push(work);
            for job in retry {
                for (job, r) in commit_batch(c, vec![job]) {
                    answer(job, r);
                }
            }
            false
        }
    }
}

/// Opens a batch's transaction; with a syncer, its commit will not fsync by itself.
fn begin(c: &Connection, synced_apart: bool) -> rusqlite::Result<()> {
    if synced_apart {
        c.pragma_update(None, "synchronous", "NORMAL")?;
    }
    let begun = c.execute_batch("BEGIN IMMEDIATE");
    if begun.is_err() && synced_apart {
        // Direct writes on this connection must stay durable by themselves.
        let _ = c.pragma_update(None, "synchronous", "FULL");
    }
    begun
}

/// Commits every so many batches, or this often, are followed by a checkpoint.
/// (Measured: every 8 commits keeps p99 lowest but costs 10% throughput; every 256,
/// the reverse; 32 is the knee.)
pub(crate) const CHECKPOINT_EVERY_COMMITS: u32 = 32;

pub(crate) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Copies the WAL back into the database file on its own connection and thread, while
/// the committer goes on committing, and says when it is done.
pub(crate) struct Checkpointer {
    wake: std::sync::mpsc::SyncSender<()>,
    done: std::sync::mpsc::Receiver<()>,
    busy: bool,
}

impl Checkpointer {
    pub(crate) fn start(path: &Path) -> Option<Checkpointer> {
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
pub(crate) fn index_receipts(tx: &Connection) -> Result<()> {
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
pub(crate) fn checkpoint(conn: &Mutex<Connection>) {
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
pub(crate) fn wal_checkpoint(c: &Connection) {
    // PASSIVE: never waits for a reader; frames a reader still needs are copied next time.
    if let Err(e) = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!(error = %e, "WAL checkpoint failed; will retry");
    }
}
