//! UAMP in the window: this inbox's DID and certificate, tokens for trusted senders, the
//! peers the user sends to (added by URL after seeing their manifest and fingerprint),
//! asks with live progress (`uamp://progress`), and every stream in both directions.

use std::path::PathBuf;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use gatehouse_inbox::uamp::client::{self, Ask, AskProgress, Client, Discovered};
use gatehouse_keys::Secrets;
use gatehouse_store::uamp::{PeerRow, StreamRow, UampMessageRow};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};

use crate::commands::{blocking, Code, CommandError, CoreState};
use crate::service::Core;

type Result<T> = std::result::Result<T, CommandError>;

/// Images the window shows inline; anything else is offered as a file (and SVG, which
/// can carry script, is never rendered).
const INLINE_IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The largest file the window is handed inline.
const MAX_INLINE_BYTES: u64 = 16 * 1024 * 1024;

/// A peer (by DID or name) and the token it issued to this inbox, from the keychain.
async fn peer_with_token(c: &Arc<Core>, peer: String) -> Result<(PeerRow, Option<String>)> {
    let c = c.clone();
    blocking(move || {
        let row = gatehouse_app::peers::find(&c.store, &peer)?;
        let token = Secrets::open(&c.data_dir).and_then(|s| s.get(&client::token_name(&row.did)))?;
        Ok((row, token))
    })
    .await
}

/// Sends as this inbox's identity, keeping answers under the data dir.
fn sender(c: &Core) -> Client {
    Client { key: c.key.clone(), store: c.store.clone(), files_dir: client::files_dir(&c.data_dir) }
}

#[derive(Serialize, specta::Type)]
pub struct UampInfo {
    pub did: String,
    pub cert_sha256: String,
    pub listening: Option<String>,
    pub error: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_info(core: CoreState<'_>) -> Result<UampInfo> {
    let c = core.inner().clone();
    blocking(move || {
        let cert = gatehouse_inbox::uamp::tls::load_or_create(&c.data_dir, &c.key).map_err(|e| CommandError::new(Code::Tls, e.to_string()))?;
        let st = c.status();
        Ok(UampInfo { did: gatehouse_uamp::sign::did_of(&c.key), cert_sha256: cert.fingerprint, listening: st.uamp_listening, error: st.uamp_error })
    })
    .await
}

/// Issues a bearer token for a trusted UAMP sender; the window shows it once.
#[tauri::command]
#[specta::specta]
pub async fn uamp_token_issue(core: CoreState<'_>, sender: String) -> Result<String> {
    let c = core.inner().clone();
    blocking(move || {
        if c.store.trust_get(&sender)?.is_none() {
            return Err(CommandError::new(Code::NotTrusted, format!("{sender} is not a trusted sender")));
        }
        Ok(gatehouse_app::trust::token_issue(&c.store, &sender, chrono::Utc::now())?)
    })
    .await
}

/// Revokes every bearer token issued to a sender (it must then present a new one).
#[tauri::command]
#[specta::specta]
pub async fn uamp_token_revoke(core: CoreState<'_>, sender: String) -> Result<usize> {
    let c = core.inner().clone();
    blocking(move || Ok(gatehouse_app::trust::token_revoke(&c.store, &sender, chrono::Utc::now())?)).await
}

/// Step one of adding a peer: what it is, for the user to check before trusting it.
#[tauri::command]
#[specta::specta]
pub async fn uamp_discover(url: String) -> Result<Discovered> {
    Ok(client::discover(&url, None).await?)
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
pub async fn uamp_peer_add(core: CoreState<'_>, input: PeerInput) -> Result<PeerRow> {
    gatehouse_app::peers::add(core.store.clone(), &core.data_dir, &input.url, &input.name, &input.cert_sha256, input.token).await
}

pub use gatehouse_app::peers::PeerView;

#[tauri::command]
#[specta::specta]
pub async fn uamp_peers(core: CoreState<'_>) -> Result<Vec<PeerView>> {
    let c = core.inner().clone();
    blocking(move || gatehouse_app::peers::list(&c.store, &c.data_dir)).await
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_peer_remove(core: CoreState<'_>, did: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || gatehouse_app::peers::remove(&c.store, &c.data_dir, &did).map(|_| ())).await
}

#[derive(Debug, Serialize, Clone, specta::Type)]
pub struct ProgressEvent {
    pub peer: String,
    #[serde(flatten)]
    pub progress: AskProgress,
    /// Set when the ask failed before or while streaming.
    pub error: Option<CommandError>,
}

/// Sends an ask and returns its stream id as soon as the peer accepted it; the stream's
/// progress arrives as `uamp://progress` events until its final state.
#[tauri::command]
#[specta::specta]
pub async fn uamp_ask<R: Runtime>(app: AppHandle<R>, core: CoreState<'_>, peer: String, content: String, body_type: Option<String>) -> Result<String> {
    let c: Arc<Core> = core.inner().clone();
    let (row, token) = peer_with_token(&c, peer).await?;
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<Result<String>>();
    let ask = Ask { body_type: body_type.unwrap_or_else(|| "text/plain".into()), content, delta_window: client::DEFAULT_WINDOW };
    tauri::async_runtime::spawn(async move {
        let sender = sender(&c);
        let mut first = Some(first_tx);
        let name = row.name.clone();
        let emit = |p: &AskProgress, error: Option<CommandError>| {
            let _ = tauri_specta::Event::emit(&crate::events::UampProgress(ProgressEvent { peer: name.clone(), progress: p.clone(), error }), &app);
        };
        let result = sender
            .ask(&row, token.as_deref(), &ask, |p| {
                if let Some(tx) = first.take() {
                    let _ = tx.send(Ok(p.stream_id.clone()));
                }
                emit(p, None);
            })
            .await;
        match result {
            Ok(_) => {}
            Err(e) => {
                let err = CommandError::from(e);
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
pub async fn uamp_cancel(core: CoreState<'_>, stream_id: String) -> Result<()> {
    let c = core.inner().clone();
    let peer = {
        let (c, stream_id) = (c.clone(), stream_id.clone());
        blocking(move || Ok(c.store.uamp_stream(&stream_id)?.ok_or_else(|| CommandError::new(Code::NotFound, "no such stream"))?.peer)).await?
    };
    let (row, token) = peer_with_token(&c, peer).await?;
    Ok(sender(&c).cancel(&row, token.as_deref(), &stream_id).await?)
}

#[derive(Serialize, specta::Type)]
pub struct StreamView {
    #[serde(flatten)]
    pub stream: StreamRow,
    /// The peer's name (a peer added here, or a trusted sender), when known.
    pub peer_name: Option<String>,
    /// The message that opened the stream.
    pub ask: Option<UampMessageRow>,
}

/// Streams in both directions, newest first, with who and what opened them.
#[tauri::command]
#[specta::specta]
pub async fn uamp_streams(core: CoreState<'_>) -> Result<Vec<StreamView>> {
    let c = core.inner().clone();
    blocking(move || {
        let peers = c.store.uamp_peers()?;
        let mut out = Vec::new();
        for s in c.store.uamp_streams(200)? {
            let peer_name = match peers.iter().find(|p| p.did == s.peer) {
                Some(p) => Some(p.name.clone()),
                None => c.store.trust_get(&s.peer)?.map(|t| t.name),
            };
            let ask = c.store.uamp_message_by_row(s.message_row)?;
            out.push(StreamView { stream: s, peer_name, ask });
        }
        Ok(out)
    })
    .await
}

#[derive(Serialize, specta::Type)]
pub struct StreamDetail {
    #[serde(flatten)]
    pub view: StreamView,
    /// The conversation the stream belongs to (threaded by reply_to), oldest first.
    pub thread: Vec<UampMessageRow>,
    /// The frames, oldest first (chunk payloads shortened for display).
    pub frames: Vec<serde_json::Value>,
    /// Text the stream produced, when it is text.
    pub text: Option<String>,
    /// An image the stream produced, as a data: URL the CSP allows.
    pub image: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn uamp_stream_detail(core: CoreState<'_>, stream_id: String) -> Result<StreamDetail> {
    let c = core.inner().clone();
    blocking(move || {
        let s = c.store.uamp_stream(&stream_id)?.ok_or_else(|| CommandError::new(Code::NotFound, "no such stream"))?;
        let ask = c.store.uamp_message_by_row(s.message_row)?;
        let thread = match &ask {
            Some(m) => c.store.uamp_thread(&m.thread)?,
            None => Vec::new(),
        };
        let mut frames = Vec::new();
        let mut assembled: Vec<u8> = Vec::new();
        for (_, f) in c.store.uamp_deltas(&stream_id, 0)? {
            let mut v: serde_json::Value = serde_json::from_str(&f).unwrap_or_default();
            if let Some(b64) = v.pointer("/payload/chunk_b64").and_then(|x| x.as_str()).map(str::to_string) {
                if s.direction == "in" && assembled.len() < MAX_INLINE_BYTES as usize {
                    assembled.extend(STANDARD.decode(&b64).unwrap_or_default());
                }
                v["payload"]["chunk_b64"] = format!("… {} bytes", b64.len() / 4 * 3).into();
            }
            frames.push(v);
        }
        let (text, image) = match (&s.file, s.direction.as_str()) {
            (Some(path), "out") => file_view(&PathBuf::from(path), s.mime.as_deref())?,
            _ => (String::from_utf8(assembled).ok().filter(|t| !t.is_empty()), None),
        };
        let peer_name = c.store.uamp_peer(&s.peer)?.map(|p| p.name).or(c.store.trust_get(&s.peer)?.map(|t| t.name));
        Ok(StreamDetail { view: StreamView { stream: s, peer_name, ask }, thread, frames, text, image })
    })
    .await
}

fn file_view(path: &std::path::Path, mime: Option<&str>) -> Result<(Option<String>, Option<String>)> {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if len == 0 || len > MAX_INLINE_BYTES {
        return Ok((None, None));
    }
    let bytes = std::fs::read(path).map_err(|e| CommandError::new(Code::Io, format!("{}: {e}", path.display())))?;
    let essence = mime.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if INLINE_IMAGES.contains(&essence.as_str()) {
        return Ok((None, Some(format!("data:{essence};base64,{}", STANDARD.encode(&bytes)))));
    }
    Ok((String::from_utf8(bytes).ok(), None))
}
