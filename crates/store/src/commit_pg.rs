//! The group commit on PostgreSQL (a team's gate): SQLite's is `commit`.

use crate::jobs::{answer, commit_batch, Job, Transact, MAX_BATCH};
use crate::pg::{Conn, Pg};
use crate::sql::Db;
use crate::Result;

use std::time::{Duration, Instant};

/// How long a small batch under load is held open for more jobs, and the size at which
/// it stops waiting (see [`committer`]).
const HOLD: Duration = Duration::from_millis(2);
const HOLD_UNTIL: usize = 16;

/// The group commit on PostgreSQL: whatever queued while the last transaction ran is
/// the next transaction, and its callers hear back once it is committed. Uniqueness
/// (nonces, message ids) is the database's constraint, so a copy committed by another
/// node fails this batch's insert; the batch is then retried job by job, where the
/// copy is seen and refused as a replay.
pub(crate) fn committer(pg: &Pg, jobs: std::sync::mpsc::Receiver<Job>) {
    let mut own = Own { pg, conn: None };
    let mut stopping = false;
    while !stopping {
        let Ok(first) = jobs.recv() else { break };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        // A small batch under load (more than one job waiting, fewer than HOLD_UNTIL) is
        // held open a little for more: each transaction carries work of its own (its
        // statement's start, its commit), which three nodes on two cores paid per 9-10
        // envelopes. Held up to 2 ms, batches were 13-15 and PostgreSQL's CPU per envelope
        // fell by a sixth; on that saturated machine p50 and p99 fell too. A batch already
        // large (one node's: ~30) is not held: there the committer, not the CPU, was the
        // limit, and holding every batch cost one node 8% of its rate. A lone job, an idle
        // gate's, is not held either (docs/performance.md).
        if batch.len() > 1 {
            let until = Instant::now() + HOLD;
            while batch.len() < HOLD_UNTIL {
                match jobs.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(j) => batch.push(j),
                    Err(_) => break,
                }
            }
        }
        batch.retain(|j| match j {
            Job::Shutdown => {
                stopping = true;
                false
            }
            Job::Synced => false,
            _ => true,
        });
        if batch.is_empty() {
            continue;
        }
        // Every node locks the rows it counts on (a sender's minute of usage, its knock)
        // in one order, by sender: two nodes' batches wait for each other instead of
        // deadlocking. One sender's jobs keep their order.
        batch.sort_by(|a, b| a.sender().cmp(&b.sender()));
        for (job, r) in commit_batch(&mut own, batch) {
            answer(job, r);
        }
    }
}

/// The committer's own connection (out of the pool, driven by the committer's thread),
/// made again when the server has gone.
struct Own<'a> {
    pg: &'a Pg,
    conn: Option<Conn>,
}

impl Transact for Own<'_> {
    fn transact<T>(&mut self, f: impl FnOnce(&Db<'_>) -> Result<T>) -> Result<T> {
        let c = match self.conn.take().filter(|c| !c.is_closed()) {
            Some(c) => self.conn.insert(c),
            None => self.conn.insert(self.pg.own_connection()?),
        };
        c.within("BEGIN", || f(&Db::Pg(c)))
    }
}
