//! UAMP streams in both directions and this inbox's UAMP identity, as both faces show
//! them: who and what opened each stream, its conversation, its frames, what it produced.

use crate::Context;
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::SigningKey;
use gatehouse_store::uamp::{StreamRow, UampMessageRow};
use gatehouse_store::Store;
use serde::Serialize;

use crate::{Code, CommandError, Result};

/// Images a face shows inline; anything else is offered as a file (and SVG, which can
/// carry script, is never rendered).
const INLINE_IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The largest file a face is handed inline.
const MAX_INLINE_BYTES: u64 = 16 * 1024 * 1024;
/// How many streams a list shows.
const LISTED: u32 = 200;

/// This inbox as UAMP peers see it: its DID and its TLS certificate (made on first use).
pub struct Identity {
    pub did: String,
    pub certificate: crate::doors::uamp::tls::Certificate,
}

pub fn identity(data_dir: &Path, key: &SigningKey) -> Result<Identity> {
    Ok(Identity { did: gatehouse_uamp::sign::did_of(key), certificate: crate::doors::uamp::tls::load_or_create(data_dir, key)? })
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StreamView {
    #[serde(flatten)]
    pub stream: StreamRow,
    /// The peer's name (a peer added here, or a trusted sender), when known.
    pub peer_name: Option<String>,
    /// The message that opened the stream.
    pub ask: Option<UampMessageRow>,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StreamDetail {
    #[serde(flatten)]
    pub view: StreamView,
    /// The conversation the stream belongs to (threaded by reply_to), oldest first.
    pub thread: Vec<UampMessageRow>,
    /// The frames, oldest first (chunk payloads shortened for display).
    pub frames: Vec<serde_json::Value>,
    /// Text the stream produced, when it is text.
    pub text: Option<String>,
    /// An image the stream produced, as a data: URL the window's CSP allows.
    pub image: Option<String>,
}

/// Streams in both directions, newest first, with who and what opened them.
pub fn list(ctx: &Context) -> Result<Vec<StreamView>> {
    let store: &Store = &ctx.store;
    let peers = store.uamp_peers()?;
    let mut out = Vec::new();
    for s in store.uamp_streams(LISTED)? {
        let peer_name = match peers.iter().find(|p| p.did == s.peer) {
            Some(p) => Some(p.name.clone()),
            None => store.trust_get(&s.peer)?.map(|t| t.name),
        };
        let ask = store.uamp_message_by_row(s.message_row)?;
        out.push(StreamView { stream: s, peer_name, ask });
    }
    Ok(out)
}

/// The peer a stream is with (to cancel it there).
pub fn peer_of(store: &Store, stream_id: &str) -> Result<String> {
    Ok(store.uamp_stream(stream_id)?.ok_or_else(|| CommandError::new(Code::NotFound, "no such stream"))?.peer)
}

/// One stream: its conversation, its frames and what it produced.
pub fn detail(ctx: &Context, stream_id: &str) -> Result<StreamDetail> {
    let store: &Store = &ctx.store;
    let s = store.uamp_stream(stream_id)?.ok_or_else(|| CommandError::new(Code::NotFound, "no such stream"))?;
    let ask = store.uamp_message_by_row(s.message_row)?;
    let thread = match &ask {
        Some(m) => store.uamp_thread(&m.thread)?,
        None => Vec::new(),
    };
    let mut frames = Vec::new();
    let mut assembled: Vec<u8> = Vec::new();
    for (_, f) in store.uamp_deltas(stream_id, 0)? {
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
        (Some(path), "out") => file_view(Path::new(path), s.mime.as_deref())?,
        _ => (String::from_utf8(assembled).ok().filter(|t| !t.is_empty()), None),
    };
    let peer_name = store.uamp_peer(&s.peer)?.map(|p| p.name).or(store.trust_get(&s.peer)?.map(|t| t.name));
    Ok(StreamDetail { view: StreamView { stream: s, peer_name, ask }, thread, frames, text, image })
}

fn file_view(path: &Path, mime: Option<&str>) -> Result<(Option<String>, Option<String>)> {
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
