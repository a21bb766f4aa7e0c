//! Writes queued for the committer and how their answers get back: a [`Job`] per write,
//! one transaction per batch ([`commit_batch`]), each job run by [`run_job`].

use crate::sql::{args, Db};
use crate::*;

/// At most this many writes share one transaction (bounds a commit's latency).
pub(crate) const MAX_BATCH: usize = 1024;

/// One write waiting for a group commit, and where its answer goes once it is durable.
pub(crate) enum Job {
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

impl Job {
    pub(crate) fn accept(rec: NewEnvelope, limits: &RateLimit, reply: Reply<Result<i64, AcceptRefusal>>) -> Job {
        let json = Serialized { receipt: rec.receipt.receipt.to_string(), exec_result: rec.exec_result.as_ref().map(|r| r.to_string()) };
        Job::Accept { rec: Box::new(rec), limits: limits.clone(), json, reply }
    }

    /// The sender whose rows this job writes, if any.
    pub(crate) fn sender(&self) -> Option<&str> {
        match self {
            Job::Accept { rec, .. } => Some(&rec.sender),
            Job::Receipt { knock: Some(k), .. } => Some(&k.sender),
            _ => None,
        }
    }

    pub(crate) fn receipt(row: &ReceiptRow, knock: Option<&Knock>, reply: Reply<()>) -> Job {
        let json = Serialized { receipt: row.receipt.to_string(), exec_result: None };
        Job::Receipt { row: Box::new(row.clone()), knock: knock.cloned(), json, reply }
    }
}

/// A thread waiting (blocking) or a task awaiting the commit.
pub(crate) enum Reply<T> {
    Blocking(std::sync::mpsc::SyncSender<Result<T>>),
    Async(tokio::sync::oneshot::Sender<Result<T>>),
}

impl<T> Reply<T> {
    pub(crate) fn send(self, r: Result<T>) {
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

pub(crate) fn blocking<T>() -> (Reply<T>, std::sync::mpsc::Receiver<Result<T>>) {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    (Reply::Blocking(tx), rx)
}

pub(crate) fn asynchronous<T>() -> (Reply<T>, tokio::sync::oneshot::Receiver<Result<T>>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    (Reply::Async(tx), rx)
}

pub(crate) fn closing() -> StoreError {
    StoreError::CommitFailed("the store is closing".into())
}

/// One transaction and one fsync for a whole batch of writes; answers go out only after
/// the commit. Refusals (replay, rate) write nothing, so no savepoints are needed; if a
/// statement fails, the batch is rolled back and each job retried in its own transaction
/// so that one bad row fails alone.
/// One write transaction of an engine: committed if `f` returns Ok, rolled back otherwise.
pub(crate) trait Transact {
    fn transact<T>(&mut self, f: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T>;
}

impl Transact for rusqlite::Connection {
    fn transact<T>(&mut self, f: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T> {
        let tx = self.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&Db::Lite(&tx))?;
        tx.commit()?;
        Ok(out)
    }
}

pub(crate) fn commit_batch(conn: &mut impl Transact, batch: Vec<Job>) -> Vec<(Job, AcceptResult)> {
    let together = conn.transact(|tx| run_jobs(tx, &batch));
    match together {
        Ok(results) => batch.into_iter().zip(results).collect(),
        Err(e) if batch.len() > 1 || e.is_retryable() => batch
            .into_iter()
            .map(|job| {
                // A job that lost a race to another node is run once more: it then sees
                // what that node committed (a replay, a count that is now full).
                let r = match conn.transact(|tx| run_job(tx, &job)) {
                    Err(e) if e.is_retryable() => conn.transact(|tx| run_job(tx, &job)),
                    r => r,
                };
                (job, r)
            })
            .collect(),
        Err(e) => {
            let unavailable = e.is_unavailable();
            let msg = e.to_string();
            let failed = |msg: &String| if unavailable { StoreError::Unavailable(msg.clone()) } else { StoreError::CommitFailed(msg.clone()) };
            batch.into_iter().map(|job| (job, Err(failed(&msg)))).collect()
        }
    }
}

/// A batch's jobs in one transaction, in order; the first error fails them all. On
/// PostgreSQL the acceptances of senders without rate limits go together (one round trip
/// for their checks, one for their inserts: `pg::accept`), the other jobs after them.
fn run_jobs(tx: &Db<'_>, batch: &[Job]) -> Result<Vec<AcceptResult>> {
    if !tx.is_pg() {
        return batch.iter().map(|job| run_job(tx, job).map(Ok)).collect();
    }
    let unlimited = |j: &Job| matches!(j, Job::Accept { limits, .. } if !limits.is_set());
    let together: Vec<(usize, (&NewEnvelope, &Serialized))> = batch
        .iter()
        .enumerate()
        .filter(|(_, j)| unlimited(j))
        .filter_map(|(i, j)| match j {
            Job::Accept { rec, json, .. } => Some((i, (&**rec, json))),
            _ => None,
        })
        .collect();
    let recs: Vec<_> = together.iter().map(|(_, r)| *r).collect();
    let mut out: Vec<Option<AcceptResult>> = batch.iter().map(|_| None).collect();
    for ((i, _), r) in together.iter().zip(crate::pg::accept::accept_many(tx, &recs)?) {
        out[*i] = Some(Ok(r?));
    }
    for (i, job) in batch.iter().enumerate() {
        if out[i].is_none() {
            out[i] = Some(Ok(run_job(tx, job)?));
        }
    }
    Ok(out.into_iter().map(|r| r.expect("every job ran")).collect())
}

pub(crate) fn run_job(tx: &Db<'_>, job: &Job) -> AcceptResult {
    match job {
        // PostgreSQL's acceptance makes the same checks in fewer round trips (`pg::accept`).
        Job::Accept { rec, limits, json, .. } if tx.is_pg() => crate::pg::accept::accept_one(tx, rec, limits, json),
        Job::Accept { rec, limits, json, .. } => accept_one(tx, rec, limits, json),
        Job::Receipt { row, knock, json, .. } => {
            if let Some(k) = knock {
                upsert_pending(tx, k)?;
            }
            insert_receipt_as(tx, row, row.envelope_row, &json.receipt).map(|()| Ok(0))
        }
        Job::SetExec { updates, now, .. } => {
            let stmt = tx.prepare_cached("UPDATE envelopes SET exec_status = ?2, exec_result = ?3, exec_updated_at = ?4 WHERE id = ?1")?;
            for (id, status, result) in updates {
                stmt.execute(args![id, status.as_str(), result.as_ref().map(|r| r.to_string()), now])?;
            }
            Ok(Ok(0))
        }
        // PostgreSQL searches the prompts themselves (see `inbox`).
        Job::IndexSearch { .. } => match tx {
            Db::Lite(c) => index_receipts(c).map(|()| Ok(0)),
            Db::Pg(_) => Ok(Ok(0)),
        },
        Job::Synced | Job::Shutdown => Ok(Ok(0)),
    }
}

pub(crate) fn answer(job: Job, r: AcceptResult) {
    match job {
        Job::Accept { reply, .. } => reply.send(r),
        Job::Receipt { reply, .. } | Job::SetExec { reply, .. } | Job::IndexSearch { reply } => reply.send(r.map(|_| ())),
        Job::Synced | Job::Shutdown => {}
    }
}

impl Store {
    pub(crate) fn enqueue(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            // The committer only stops when the store is dropped, so this cannot fail
            // while `self` is alive; a dropped job would answer its caller with an error.
            let _ = jobs.send(job);
        }
    }

    /// Waits until the committer has made this write durable (or failed to).
    pub(crate) fn commit_until_answered<T>(&self, answer: &std::sync::mpsc::Receiver<Result<T>>) -> Result<T> {
        answer.recv().unwrap_or_else(|_| Err(closing()))
    }
}
