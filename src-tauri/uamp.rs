//! UAMP in the window: this inbox's DID and certificate, tokens for trusted senders, the
//! peers the user sends to (added by URL after seeing their manifest and fingerprint),
//! asks with live progress (`uamp://progress`), and every stream in both directions.

use std::sync::Arc;

use gatehouse_app::peers::{self, Ask, AskProgress, Discovered, PeerRow};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};

use crate::events::{ProgressEvent, UampProgress};
use crate::shell::{blocking, Shell, ShellState};
use gatehouse_app::{Code, CommandError};

type Result<T> = std::result::Result<T, CommandError>;

#[derive(Serialize, specta::Type)]
pub struct UampInfo {
    pub did: String,
    pub cert_sha256: String,
    pub listening: Option<String>,
    pub error: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_info(shell: ShellState<'_>) -> Result<UampInfo> {
    let c = shell.inner().clone();
    blocking(move || {
        let id = gatehouse_app::streams::identity(&c.data_dir, &c.key)?;
        let st = c.status();
        Ok(UampInfo { did: id.did, cert_sha256: id.certificate.fingerprint, listening: st.uamp_listening, error: st.uamp_error })
    })
    .await
}

/// Issues a bearer token for a trusted UAMP sender; the window shows it once.
#[tauri::command]
#[specta::specta]
pub async fn uamp_token_issue(shell: ShellState<'_>, sender: String) -> Result<String> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::trust::token_issue(&c, &sender, chrono::Utc::now())).await
}

/// Revokes every bearer token issued to a sender (it must then present a new one).
#[tauri::command]
#[specta::specta]
pub async fn uamp_token_revoke(shell: ShellState<'_>, sender: String) -> Result<usize> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::trust::token_revoke(&c, &sender, chrono::Utc::now())?)).await
}

/// Step one of adding a peer: what it is, for the user to check before trusting it.
#[tauri::command]
#[specta::specta]
pub async fn uamp_discover(url: String) -> Result<Discovered> {
    peers::discover(&url, None).await
}

#[derive(Deserialize, specta::Type)]
pub struct PeerInput {
    pub url: String,
    pub name: String,
    /// The fingerprint the user was shown and confirmed; the peer must still present it.
    pub cert_sha256: String,
    pub token: Option<String>,
}

/// Step two: the manifest is fetched again under the confirmed pin, then the peer is kept
/// (its token in the keychain).
#[tauri::command]
#[specta::specta]
pub async fn uamp_peer_add(shell: ShellState<'_>, input: PeerInput) -> Result<PeerRow> {
    gatehouse_app::peers::add(&shell, &input.url, &input.name, &input.cert_sha256, input.token).await
}

pub use gatehouse_app::peers::PeerView;

#[tauri::command]
#[specta::specta]
pub async fn uamp_peers(shell: ShellState<'_>) -> Result<Vec<PeerView>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::peers::list(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_peer_remove(shell: ShellState<'_>, did: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::peers::remove(&c, &did).map(|_| ())).await
}

/// Sends an ask and returns its stream id as soon as the peer accepted it; the stream's
/// progress arrives as `uamp://progress` events until its final state.
#[tauri::command]
#[specta::specta]
pub async fn uamp_ask<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, peer: String, content: String, body_type: Option<String>) -> Result<String> {
    let c: Arc<Shell> = shell.inner().clone();
    let row = {
        let c = c.clone();
        blocking(move || peers::find(&c, &peer)).await?
    };
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<Result<String>>();
    let ask = Ask { body_type: body_type.unwrap_or_else(|| "text/plain".into()), content, delta_window: peers::DEFAULT_WINDOW };
    tauri::async_runtime::spawn(async move {
        let mut first = Some(first_tx);
        let name = row.name.clone();
        let emit = |p: &AskProgress, error: Option<CommandError>| {
            let _ = tauri_specta::Event::emit(&UampProgress(ProgressEvent { peer: name.clone(), progress: p.clone(), error }), &app);
        };
        let result = peers::ask(&c, &row, &ask, |p| {
            if let Some(tx) = first.take() {
                let _ = tx.send(Ok(p.stream_id.clone()));
            }
            emit(p, None);
        })
        .await;
        match result {
            Ok(_) => {}
            Err(err) => {
                match first.take() {
                    // Refused before a stream existed: the caller gets the error itself.
                    Some(tx) => {
                        let _ = tx.send(Err(err));
                    }
                    None => tracing::warn!(error = %err, "an ask's stream failed"),
                }
            }
        }
    });
    first_rx.await.map_err(|_| CommandError::new(Code::Internal, "the ask stopped before it was sent"))?
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_cancel(shell: ShellState<'_>, stream_id: String) -> Result<()> {
    peers::cancel(&shell, &stream_id).await
}

pub use gatehouse_app::streams::{StreamDetail, StreamView};

/// Streams in both directions, newest first, with who and what opened them.
#[tauri::command]
#[specta::specta]
pub async fn uamp_streams(shell: ShellState<'_>) -> Result<Vec<StreamView>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::streams::list(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_stream_detail(shell: ShellState<'_>, stream_id: String) -> Result<StreamDetail> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::streams::detail(&c, &stream_id)).await
}
