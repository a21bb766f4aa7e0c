//! Runs executors for accepted envelopes, off the request path: the sender's receipt
//! never waits for an executor, and a failing executor never loses the envelope (it
//! stays stored with the failure recorded beside it).

use std::sync::Arc;

use gatehouse_store::{ExecStatus, Store};
use tokio::sync::mpsc;

use crate::executor::{execute, ExecutorConfig};

/// Prepares the queue after a restart: envelopes that were running when Gatehouse
/// stopped are marked failed (a command may have had side effects, so it is not re-run
/// behind the user's back); queued ones are returned to be run.
pub fn recover(store: &Store) -> gatehouse_store::Result<Vec<i64>> {
    let now = now_string();
    for row in store.envelopes_with_status(ExecStatus::Running)? {
        let note = serde_json::json!({"executor": row.executor, "error": "Gatehouse stopped while this executor was running; it was not re-run"});
        store.set_exec(row.id, ExecStatus::Failed, Some(&note), &now)?;
    }
    Ok(store.envelopes_with_status(ExecStatus::Queued)?.into_iter().map(|r| r.id).collect())
}

fn now_string() -> String {
    gatehouse_epp::crypto::utc_string_ms(chrono::Utc::now())
}

/// Runs one envelope's executor and records the result.
pub async fn run_one(store: &Arc<Store>, id: i64) {
    let s = store.clone();
    let loaded = tokio::task::spawn_blocking(move || -> gatehouse_store::Result<_> {
        let row = s.envelope(id)?;
        let config = ExecutorConfig::load(&s)?;
        if row.is_some() {
            s.set_exec(id, ExecStatus::Running, None, &now_string())?;
        }
        Ok(row.map(|r| (config.for_scope(&r.scope).clone(), r)))
    })
    .await;
    let (spec, row) = match loaded {
        Ok(Ok(Some(x))) => x,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => return tracing::error!(id, error = %e, "could not load an envelope for its executor"),
        Err(e) => return tracing::error!(id, error = %e, "executor task failed"),
    };
    let (status, result) = match execute(&spec, &row).await {
        Ok(v) => (ExecStatus::Succeeded, v),
        Err(v) => {
            tracing::warn!(envelope_id = %row.envelope_id, result = %v, "executor failed");
            (ExecStatus::Failed, v)
        }
    };
    let s = store.clone();
    let saved = tokio::task::spawn_blocking(move || s.set_exec(id, status, Some(&result), &now_string())).await;
    if !matches!(saved, Ok(Ok(()))) {
        tracing::error!(id, "could not record an executor result");
    }
}

/// Consumes envelope row ids and runs their executors one at a time, in arrival order.
pub async fn run(store: Arc<Store>, mut rx: mpsc::UnboundedReceiver<i64>) {
    while let Some(id) = rx.recv().await {
        run_one(&store, id).await;
    }
}
