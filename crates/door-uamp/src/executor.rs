//! The peer executor: an accepted EPP prompt is asked of a UAMP peer the user added, its
//! stream followed; the answer (text, or the file it returned) is kept as the result, and
//! the stream shows in the window's Conversations. Registered as a delegate by the service.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use gatehouse_store::Store;
use serde_json::{json, Value};

use super::client;
use gatehouse_gate::executor::command::KEEP_OUTPUT_BYTES;
use gatehouse_gate::executor::{default_model_timeout, secret, Delegate, Delegation, ExecutorSpec, Update, Work};
use serde::{Deserialize, Serialize};

/// The kind this door's executor is registered under.
pub const KIND: &str = "peer";

/// Asks a UAMP peer the user added (by DID or name) and follows its stream; the answer
/// (text, or the file it returned) is kept, and the stream shows in the window's Conversations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerSpec {
    pub peer: String,
    #[serde(default = "default_model_timeout")]
    pub timeout_secs: u64,
}

impl PeerSpec {
    pub fn executor(peer: &str, timeout_secs: u64) -> ExecutorSpec {
        Delegation::of(KIND, &PeerSpec { peer: peer.to_string(), timeout_secs })
    }
}

pub struct PeerExecutor {
    pub store: Arc<Store>,
    /// The identity key the asks are signed with (read from the keychain when absent).
    pub key: Option<ed25519_dalek::SigningKey>,
}

impl Delegate for PeerExecutor {
    fn run<'a>(&'a self, spec: &'a Delegation, work: &'a Work, on_update: &'a mut (dyn FnMut(Update<'_>) + Send)) -> BoxFuture<'a, Result<Value, Value>> {
        Box::pin(async move {
            let PeerSpec { peer, timeout_secs } = spec.read().map_err(|e| json!({"executor": KIND, "error": e}))?;
            ask(&self.store, self.key.as_ref(), &peer, Duration::from_secs(timeout_secs), &work.prompt, on_update).await
        })
    }
}

async fn ask(
    store: &Arc<Store>,
    key: Option<&ed25519_dalek::SigningKey>,
    peer: &str,
    timeout: Duration,
    prompt: &str,
    on_update: &mut (dyn FnMut(Update<'_>) + Send),
) -> Result<Value, Value> {
    let fail = |e: String| json!({"executor": "peer", "peer": peer, "error": e});
    let row = store.uamp_peer(peer).map_err(|e| fail(e.to_string()))?.ok_or_else(|| fail(format!("no UAMP peer {peer:?} was added")))?;
    let token = secret(store, &client::token_name(&row.did)).map_err(fail)?;
    let key = match key {
        Some(k) => k.clone(),
        None => gatehouse_gate::state::identity_key(store).map_err(fail)?,
    };
    let data_dir = store.data_dir().ok_or_else(|| fail("this inbox has no data dir".into()))?;
    let c = client::Client { key, store: store.clone(), files_dir: client::files_dir(data_dir) };
    let ask = client::Ask { body_type: "text/plain".into(), content: prompt.to_string(), delta_window: client::DEFAULT_WINDOW };
    let p = match tokio::time::timeout(
        timeout,
        c.ask(&row, token.as_deref(), &ask, |p| on_update(Update::Note(format!("{peer}: {} ({} bytes so far)", p.state, p.bytes)))),
    )
    .await
    {
        Err(_) => return Err(fail(format!("{} did not finish within {} s", row.name, timeout.as_secs()))),
        Ok(Err(e)) => return Err(fail(format!("{e} [{}]", e.code()))),
        Ok(Ok(p)) => p,
    };
    let file = p.file.as_ref().map(|f| f.display().to_string());
    // A text answer is kept as text (up to the output limit); anything else by its file.
    let text = match (&p.file, p.mime.as_deref()) {
        (Some(f), Some(m)) if m.starts_with("text/") || m == "application/json" => {
            tokio::fs::read(f).await.ok().map(|b| String::from_utf8_lossy(&b[..b.len().min(KEEP_OUTPUT_BYTES)]).into_owned())
        }
        (Some(f), None) => tokio::fs::read(f)
            .await
            .ok()
            .filter(|b| std::str::from_utf8(b).is_ok())
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(KEEP_OUTPUT_BYTES)]).into_owned()),
        _ => None,
    };
    let record = json!({"executor": "peer", "peer": row.did, "name": row.name, "stream_id": p.stream_id, "state": p.state, "mime": p.mime, "file": file, "answer": text});
    if p.state == "COMPLETED" {
        Ok(record)
    } else {
        let mut r = record;
        r["error"] = format!("{}'s stream ended {}: {}", row.name, p.state, p.detail.map(|d| d.to_string()).unwrap_or_default()).into();
        Err(r)
    }
}
