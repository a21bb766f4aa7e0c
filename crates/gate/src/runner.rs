//! Runs executors for accepted envelopes, off the request path: the sender's receipt
//! never waits for an executor, and a failing executor never loses the envelope (it
//! stays stored with the failure recorded beside it).

use std::sync::Arc;

use gatehouse_store::{EnvelopeRow, ExecStatus, Store};
use tokio::sync::mpsc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::executor::{self, Delegates, ExecutorConfig, ExecutorSpec, Sink, Update, Work};

/// Prepares the queue after a restart: envelopes this node was running when it stopped
/// (and, on a team's gate, those of a node gone for longer than any executor runs) are
/// marked failed (a command may have had side effects, so it is not re-run behind the
/// user's back); queued ones are returned to be claimed and run.
pub fn recover(store: &Store) -> gatehouse_store::Result<Vec<i64>> {
    let now = chrono::Utc::now();
    abandon(store, store.abandoned_claims(&stale_before(now))?, now)?;
    Ok(store.envelopes_with_status(ExecStatus::Queued)?.into_iter().map(|r| r.id).collect())
}

/// On a team's gate, while it runs: the claims of nodes gone for longer than any executor
/// runs are marked failed, so that no envelope stays "running" for a node that never
/// comes back.
fn sweep_stale(store: &Store) -> gatehouse_store::Result<()> {
    let now = chrono::Utc::now();
    abandon(store, store.stale_claims(&stale_before(now))?, now)
}

fn stale_before(now: chrono::DateTime<chrono::Utc>) -> String {
    crate::clock::utc_string_ms(now - chrono::Duration::milliseconds(gatehouse_store::STALE_AFTER_MS))
}

fn abandon(store: &Store, rows: Vec<EnvelopeRow>, now: chrono::DateTime<chrono::Utc>) -> gatehouse_store::Result<()> {
    for row in rows {
        let note = serde_json::json!({"executor": row.executor, "error": "Gatehouse stopped while this executor was running; it was not re-run"});
        store.set_exec(row.id, ExecStatus::Failed, Some(&note), &crate::clock::utc_string_ms(now))?;
    }
    Ok(())
}

/// How many looks for queued envelopes between two sweeps of stale claims (10 minutes).
const LOOKS_PER_SWEEP: u32 = 300;

/// Queues a failed envelope again under the executor set now, which the row then names
/// (the user asked: a model that was unreachable, another agent that refused its token). Only
/// failed envelopes. The caller hands it to the runner ([`crate::state::Gate::retry`]).
pub fn requeue_failed(store: &Store, row_id: i64) -> Result<(), RetryError> {
    let row = store.envelope(row_id)?.ok_or(RetryError::NotFound)?;
    if row.exec_status != ExecStatus::Failed {
        return Err(RetryError::NotFailed(row.exec_status.as_str().to_string()));
    }
    let spec = ExecutorConfig::load(store)?.for_scope(&row.scope).clone();
    store.requeue(row_id, spec.name(), &serde_json::to_string(&spec).unwrap_or_default(), &now_string())?;
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("no such envelope")]
    NotFound,
    #[error("only a failed executor is run again (this one is {0})")]
    NotFailed(String),
    #[error(transparent)]
    Store(#[from] gatehouse_store::StoreError),
}

fn now_string() -> String {
    crate::clock::utc_string_ms(chrono::Utc::now())
}

/// How many queued envelopes the runner takes at once: their status changes share a
/// commit, so a burst of accepted envelopes does not cost two fsyncs each.
const BATCH: usize = 256;

/// What an executor at work tells the window.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExecProgress {
    /// The answer so far, whole: a listener that joins late or lags still sees all of it.
    Partial { envelope_row: i64, text: String },
    /// Work without text to show yet (another agent's stream: what has arrived).
    Note { envelope_row: i64, note: String },
    /// The result is stored (the status is `succeeded` or `failed`).
    Finished { envelope_row: i64, status: gatehouse_store::ExecStatus },
}

/// How often a streaming answer is passed on: often enough to read along, rarely enough
/// that a fast model does not flood the window with redraws.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(80);

type Progress = tokio::sync::broadcast::Sender<ExecProgress>;

/// What runs after an envelope's executor succeeded (a door drafts or sends a reply).
pub type OnSuccess = Arc<dyn Fn(Arc<Store>, EnvelopeRow, Value) -> BoxFuture<'static, ()> + Send + Sync>;

/// How the door that accepted an envelope describes it to its executor (who, the prompt,
/// the facts a command finds in its environment, the file-queue record): the runner
/// knows no protocol.
pub type Describe = Arc<dyn Fn(&ExecutorSpec, &EnvelopeRow, Option<&str>) -> Work + Send + Sync>;

/// What the service gives the runner: the delegate executors, how an envelope is
/// described to them, and what follows success.
#[derive(Clone)]
pub struct Hooks {
    pub delegates: Delegates,
    /// What this machine's operator allowed to run here.
    pub runs_here: executor::here::RunsHere,
    pub describe: Describe,
    pub on_success: Option<OnSuccess>,
}

/// How often a node of a team's gate looks for queued envelopes it was not handed: those
/// another process released (a decision made at another node or by the CLI).
pub const LOOK_FOR_QUEUED: std::time::Duration = std::time::Duration::from_secs(2);

/// Consumes envelope row ids and runs their executors in arrival order. On a team's gate
/// it also takes, every [`LOOK_FOR_QUEUED`], what is queued in the database: claims
/// decide which node runs each.
pub async fn run(store: Arc<Store>, mut rx: mpsc::UnboundedReceiver<i64>, progress: Progress, hooks: Hooks) {
    let mut look = tokio::time::interval(LOOK_FOR_QUEUED);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut looks = 0u32;
    loop {
        let first = tokio::select! {
            id = rx.recv() => match id {
                Some(id) => id,
                None => return,
            },
            _ = look.tick(), if store.is_shared() => {
                looks = (looks + 1) % LOOKS_PER_SWEEP;
                if looks == 1 {
                    blocking(&store, sweep_stale).await;
                }
                let queued = blocking(&store, |s| s.queued_ids(BATCH)).await.unwrap_or_default();
                if !queued.is_empty() {
                    run_batch(&store, queued, &progress, &hooks).await;
                }
                continue;
            }
        };
        let mut ids = vec![first];
        while ids.len() < BATCH {
            match rx.try_recv() {
                Ok(id) => ids.push(id),
                Err(_) => break,
            }
        }
        run_batch(&store, ids, &progress, &hooks).await;
    }
}

async fn blocking<T: Send + 'static>(store: &Arc<Store>, f: impl FnOnce(&Store) -> gatehouse_store::Result<T> + Send + 'static) -> Option<T> {
    let s = store.clone();
    match tokio::task::spawn_blocking(move || f(&s)).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "executor bookkeeping failed");
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "executor task failed");
            None
        }
    }
}

/// Runs one batch: all marked running in one commit; instant executors run in order and
/// share one commit for their results; the others run side by side, each recording its
/// own result when it ends.
async fn run_batch(store: &Arc<Store>, ids: Vec<i64>, progress: &Progress, hooks: &Hooks) {
    let loaded = blocking(store, move |s| {
        let config = ExecutorConfig::load(s)?;
        let (mut rows, mut changed) = (Vec::new(), Vec::new());
        // Only what is queued runs, and only once: never a held envelope, never one
        // another node of a team's gate claimed.
        for id in s.claim_queued(&ids, &now_string())? {
            if let Some(r) = s.envelope(id)? {
                match chosen(&r, config.for_scope(&r.scope)) {
                    Ok(spec) => {
                        let name = s.trust_name(&r.sender)?;
                        rows.push((spec, r, name));
                    }
                    Err(note) => changed.push((r.id, ExecStatus::Failed, Some(note))),
                }
            }
        }
        let not_run: Vec<_> = changed.iter().map(|(id, st, _)| ExecProgress::Finished { envelope_row: *id, status: *st }).collect();
        s.set_exec_many(&changed, &now_string())?;
        Ok((rows, not_run))
    })
    .await;
    let Some((rows, not_run)) = loaded else { return };
    for f in not_run {
        let _ = progress.send(f);
    }
    let mut done = Vec::new();
    for (spec, row, name) in rows {
        // Executors that wait on a program, a model or another agent run side by side
        // (at most SLOW_AT_ONCE): one that takes its whole timeout must not hold up the
        // envelopes behind it. Instant ones stay in the batch and share its commit.
        if !is_instant(&spec) {
            let (store, progress, hooks) = (store.clone(), progress.clone(), hooks.clone());
            let permit = SLOW.acquire().await.expect("the semaphore is never closed");
            tokio::spawn(async move {
                let result = run_one(&store, &spec, &row, name.as_deref(), &progress, &hooks).await;
                commit(&store, vec![result], &progress).await;
                drop(permit);
            });
            continue;
        }
        done.push(run_one(store, &spec, &row, name.as_deref(), progress, hooks).await);
    }
    if !done.is_empty() {
        commit(store, done, progress).await;
    }
}

/// The executor admission chose for `row`, which runs only while it is still the one
/// set for its scope (`now`): the receipt named it, and a user who changed it (a command
/// they no longer want run) is not overruled. A changed one fails with why; running the
/// envelope again uses the executor set now.
fn chosen(row: &EnvelopeRow, now: &ExecutorSpec) -> Result<ExecutorSpec, Value> {
    crate::executor::still_chosen(row.executor_spec.as_deref(), now).map_err(|_| {
        serde_json::json!({
            "executor": row.executor,
            "error": format!(
                "the executor for “{}” was changed after this envelope was accepted (for {}); it was not run. Run it again to use the executor set now ({})",
                row.scope, row.executor, now.name()
            ),
        })
    })
}

/// Executors with nothing to wait for.
fn is_instant(spec: &ExecutorSpec) -> bool {
    matches!(spec, ExecutorSpec::Noop | ExecutorSpec::FileQueue { .. })
}

/// Slow executors running at once; more wait for one of them to finish.
const SLOW_AT_ONCE: usize = 8;
static SLOW: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(SLOW_AT_ONCE);

/// Runs one envelope's executor (progress passed on, throttled) and says how it ended.
async fn run_one(store: &Arc<Store>, spec: &ExecutorSpec, row: &EnvelopeRow, name: Option<&str>, progress: &Progress, hooks: &Hooks) -> Finished {
    let mut sink = Passing { envelope_row: row.id, progress, last: None };
    let out = executor::run(spec, &(hooks.describe)(spec, row, name), store, &hooks.delegates, &hooks.runs_here, &mut sink).await;
    let (status, result) = match executor::record(spec, out) {
        Ok(v) => {
            if let Some(after) = &hooks.on_success {
                after(store.clone(), row.clone(), v.clone()).await;
            }
            (ExecStatus::Succeeded, v)
        }
        Err(v) => {
            tracing::warn!(envelope_id = %row.envelope_id, result = %v, "executor failed");
            (ExecStatus::Failed, v)
        }
    };
    (row.id, status, Some(result))
}

type Finished = (i64, ExecStatus, Option<Value>);

/// Output is kept in the record by the executor; the sink passes progress on to the
/// window, at most every [`PROGRESS_EVERY`].
struct Passing<'a> {
    envelope_row: i64,
    progress: &'a Progress,
    last: Option<std::time::Instant>,
}

impl Sink for Passing<'_> {
    type Stop = std::convert::Infallible;

    async fn output(&mut self, _bytes: &[u8]) -> Result<(), Self::Stop> {
        Ok(())
    }

    fn update(&mut self, u: Update<'_>) {
        if self.last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        let envelope_row = self.envelope_row;
        let _ = self.progress.send(match u {
            Update::Text(t) => ExecProgress::Partial { envelope_row, text: t.to_string() },
            Update::Note(note) => ExecProgress::Note { envelope_row, note },
        });
    }
}

/// Stores finished results, then says so (never before: the window reloads on it).
async fn commit(store: &Arc<Store>, done: Vec<Finished>, progress: &Progress) {
    let finished: Vec<_> = done.iter().map(|(id, st, _)| ExecProgress::Finished { envelope_row: *id, status: *st }).collect();
    if blocking(store, move |s| s.set_exec_many(&done, &now_string())).await.is_some() {
        for f in finished {
            let _ = progress.send(f);
        }
    }
}
