//! Following an ask's stream: frames read across resumptions, acknowledged within the
//! window, `chunk_b64` frames reassembled into a file named locally (never after the
//! peer's ids) with an extension from a fixed list of data types.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use futures_util::StreamExt as _;
use gatehouse_store::uamp::PeerRow;
use gatehouse_uamp::{sign, Delta, DeltaType, Intent};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;

use super::connect::{blocking, post, refused, unreachable, ClientError};

/// One stream frame larger than this ends the stream (chunks carry 16 KiB).
pub(super) const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// Where an ask's stream stands, reported after every frame.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AskProgress {
    pub stream_id: String,
    pub message_id: String,
    pub frames: u64,
    /// Bytes reassembled so far.
    pub bytes: u64,
    /// The peer's own estimate (`progress` frames' `pct`), when it sends one.
    pub pct: Option<f64>,
    /// NEW, IN_PROGRESS, COMPLETED, CANCELLED or ERROR.
    pub state: String,
    pub mime: Option<String>,
    pub file: Option<PathBuf>,
    /// The peer's final payload (`done`) or its error message.
    pub detail: Option<Value>,
}

/// The file an outgoing stream's chunks are written to until it ends.
pub(super) async fn open_part(files_dir: &Path, stream_id: &str) -> Result<(PathBuf, tokio::fs::File), ClientError> {
    tokio::fs::create_dir_all(files_dir).await.map_err(|source| ClientError::Io { path: files_dir.to_path_buf(), source })?;
    let part = files_dir.join(format!("{stream_id}.part"));
    let file = tokio::fs::File::create(&part).await.map_err(|source| ClientError::Io { path: part.clone(), source })?;
    Ok((part, file))
}

/// Reading one outgoing stream, across resumptions.
pub(super) struct Follow<'a> {
    /// This inbox's identity, which acknowledges frames.
    pub(super) key: &'a ed25519_dalek::SigningKey,
    /// Where what was sent and received is kept, and reassembled files are written.
    pub(super) store: &'a std::sync::Arc<gatehouse_store::Store>,
    pub(super) files_dir: &'a Path,
    pub(super) peer: &'a PeerRow,
    pub(super) token: Option<&'a str>,
    pub(super) http: &'a reqwest::Client,
    pub(super) seen: &'a Mutex<Option<String>>,
    pub(super) ask_id: &'a str,
    pub(super) window: u32,
    pub(super) stream_id: &'a str,
    /// Names the files of this stream: made locally, never the peer's stream id.
    pub(super) file_stem: &'a str,
    pub(super) part: PathBuf,
    pub(super) file: tokio::fs::File,
    pub(super) next: u64,
    pub(super) acked: i64,
}

impl Follow<'_> {
    /// Reads frames until the terminal one (Ok) or until the connection drops (Err).
    pub(super) async fn read(&mut self, location: &str, p: &mut AskProgress, on: &mut (impl FnMut(&AskProgress) + Send)) -> Result<(), ClientError> {
        let mut req = self.http.get(format!("{}{location}", self.peer.url)).header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(t) = self.token {
            req = req.bearer_auth(t);
        }
        if self.next > 0 {
            req = req.header("Last-Event-ID", (self.next - 1).to_string());
        }
        let resp = req.send().await.map_err(|e| unreachable(&self.peer.url, e, self.seen, Some(&self.peer.cert_sha256)))?;
        let status = resp.status().as_u16();
        if status != 200 {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            return Err(refused(status, &body));
        }
        let mut events = std::pin::pin!(gatehouse_sse::events(resp.bytes_stream(), MAX_EVENT_BYTES));
        while let Some(ev) = events.next().await {
            let ev = ev.map_err(|e| ClientError::Interrupted(e.to_string()))?;
            if ev.data.is_empty() {
                continue;
            }
            let delta = Delta::parse_from_peer(ev.data.as_bytes(), self.stream_id)
                .map_err(|e| ClientError::Protocol(format!("frame after {}: {}", self.next, e.message)))?;
            if delta.delta_seq < self.next {
                continue; // already have it (a resumed stream may repeat)
            }
            if delta.delta_seq > self.next {
                return Err(ClientError::Protocol(format!("frame {} arrived where {} was due", delta.delta_seq, self.next)));
            }
            let done = self.take(&delta, &ev.data, p).await?;
            on(p);
            if done {
                return Ok(());
            }
            self.maybe_ack(delta.delta_seq as i64).await?;
        }
        Err(ClientError::Interrupted(format!("the connection closed after frame {}", self.next as i64 - 1)))
    }

    /// Applies one frame: chunk bytes to the file, the state to the store. True at the end.
    pub(super) async fn take(&mut self, d: &Delta, raw: &str, p: &mut AskProgress) -> Result<bool, ClientError> {
        let mut added = 0usize;
        match d.kind {
            DeltaType::Chunk => {
                let b64 = d.payload.as_ref().and_then(|x| x.get("chunk_b64")).and_then(|x| x.as_str());
                if let Some(b64) = b64 {
                    let bytes = STANDARD.decode(b64).map_err(|e| ClientError::Protocol(format!("frame {}: chunk_b64 is not base64: {e}", d.delta_seq)))?;
                    self.file.write_all(&bytes).await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
                    added = bytes.len();
                } else if let Some(text) = d.payload.as_ref().and_then(|x| x.get("text")).and_then(|x| x.as_str()) {
                    // Text deltas (a peer streaming tokens) land in the same file.
                    self.file.write_all(text.as_bytes()).await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
                    added = text.len();
                }
            }
            DeltaType::Progress => {
                if let Some(pct) = d.payload.as_ref().and_then(|x| x.get("pct")).and_then(|x| x.as_f64()) {
                    p.pct = Some(pct.clamp(0.0, 100.0));
                }
            }
            _ => {}
        }
        p.frames += 1;
        p.bytes += added as u64;
        self.next = d.delta_seq + 1;
        let terminal = d.kind.is_terminal();
        let state = match d.kind {
            DeltaType::Done => "COMPLETED",
            DeltaType::Cancel => "CANCELLED",
            DeltaType::Error => "ERROR",
            _ => "IN_PROGRESS",
        };
        p.state = state.into();
        if terminal {
            p.detail = d.payload.clone();
            if d.kind == DeltaType::Done {
                p.pct = Some(100.0);
            }
        }
        let store = self.store.clone();
        let (sid, seq, raw) = (self.stream_id.to_string(), d.delta_seq, raw.to_string());
        let st = state.to_string();
        blocking(move || store.uamp_out_frame(&sid, seq, &raw, added, Some(&st), &gatehouse_gate::clock::utc_string(chrono::Utc::now()))).await?;
        if terminal {
            self.finish(d, p).await?;
        }
        Ok(terminal)
    }

    /// The terminal frame: the `.part` file becomes the result (named for its type), or,
    /// when the stream failed, stays beside it as `.partial` with the reason.
    pub(super) async fn finish(&mut self, d: &Delta, p: &mut AskProgress) -> Result<(), ClientError> {
        self.file.flush().await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
        self.file.sync_all().await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
        let declared = d.payload.as_ref().and_then(|x| x.get("mime")).and_then(|x| x.as_str()).map(str::to_string);
        let head = read_head(&self.part).await;
        let mime = match declared {
            Some(m) if m != "application/octet-stream" => Some(m),
            other => infer::get(&head).map(|t| t.mime_type().to_string()).or(other),
        };
        let (path, detail) = if d.kind == DeltaType::Done {
            (self.files_dir.join(format!("{}.{}", self.file_stem, extension(mime.as_deref(), &head))), None)
        } else {
            let why = d
                .payload
                .as_ref()
                .and_then(|x| x.get("message").or_else(|| x.get("reason")))
                .and_then(|x| x.as_str())
                .unwrap_or("the stream ended early")
                .to_string();
            (self.files_dir.join(format!("{}.partial", self.file_stem)), Some(why))
        };
        tokio::fs::rename(&self.part, &path).await.map_err(|source| ClientError::Io { path: path.clone(), source })?;
        if let Some(why) = &detail {
            let reason = path.with_extension("partial.reason.txt");
            let _ = tokio::fs::write(&reason, format!("{}: {why}\n", p.state)).await;
        }
        let store = self.store.clone();
        let (sid, file, m) = (self.stream_id.to_string(), path.to_string_lossy().into_owned(), mime.clone());
        let st = p.state.clone();
        blocking(move || {
            store.uamp_set_file(&sid, &file, m.as_deref())?;
            if let Some(why) = detail {
                store.uamp_set_state(&sid, &st, Some(&why), &gatehouse_gate::clock::utc_string(chrono::Utc::now()))?;
            }
            Ok(())
        })
        .await?;
        p.mime = mime;
        p.file = Some(path);
        Ok(())
    }

    /// Acknowledges (a signed `progress` envelope) once half the window is used, so the
    /// peer never stalls on a full window while the acknowledgement travels.
    pub(super) async fn maybe_ack(&mut self, seq: i64) -> Result<(), ClientError> {
        let half = i64::from(self.window.div_ceil(2));
        if seq - self.acked < half {
            return Ok(());
        }
        let mut env = sign::draft(&sign::did_of(self.key), &[&self.peer.did], Intent::Progress, "application/json", &json!({"delta_seq": seq}).to_string());
        env["stream_id"] = self.stream_id.into();
        env["reply_to"] = self.ask_id.into();
        env["ext"] = json!({"delta_seq": seq});
        let env = sign::sign(env, self.key);
        let resp = post(self.http, self.peer, self.token, serde_json::to_vec(&env).expect("serialises"), self.seen).await?;
        let status = resp.status().as_u16();
        if status != 200 {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            return Err(refused(status, &body));
        }
        self.acked = seq;
        Ok(())
    }

    /// The stream cannot be followed further: keep what arrived, aside, with the reason.
    pub(super) async fn abandon(&mut self, p: &mut AskProgress, e: &ClientError) {
        let _ = self.file.flush().await;
        let path = self.files_dir.join(format!("{}.partial", self.file_stem));
        if tokio::fs::rename(&self.part, &path).await.is_ok() {
            let _ = tokio::fs::write(path.with_extension("partial.reason.txt"), format!("ERROR: {e}\n")).await;
            p.file = Some(path.clone());
            let (store, sid, file) = (self.store.clone(), self.stream_id.to_string(), path.to_string_lossy().into_owned());
            let _ = blocking(move || store.uamp_set_file(&sid, &file, None)).await;
        }
        p.state = "ERROR".into();
        p.detail = Some(json!({"message": e.to_string()}));
        let (store, sid, why) = (self.store.clone(), self.stream_id.to_string(), e.to_string());
        let _ = blocking(move || store.uamp_set_state(&sid, "ERROR", Some(&why), &gatehouse_gate::clock::utc_string(chrono::Utc::now()))).await;
    }
}

async fn read_head(path: &Path) -> Vec<u8> {
    use tokio::io::AsyncReadExt as _;
    let mut head = vec![0u8; 8192];
    let n = match tokio::fs::File::open(path).await {
        Ok(mut f) => f.read(&mut head).await.unwrap_or(0),
        Err(_) => 0,
    };
    head.truncate(n);
    head
}

/// Extensions a received file may get: documents, images, audio, video and archives the
/// user's tools open as data. Anything else (a program, a script, a shortcut, a type
/// only a peer's claim names) is saved as `.bin`, so opening it never runs it.
const DATA_EXTENSIONS: &[&str] = &[
    "txt", "md", "json", "csv", "pdf", "png", "jpg", "gif", "webp", "bmp", "tif", "ico", "avif", "heif", "mp3", "wav", "ogg", "flac", "m4a", "mp4", "webm",
    "mkv", "mov", "avi", "zip", "gz", "tar", "xz", "bz2", "zst", "7z",
];

/// A file extension for what arrived, so the user's tools open it.
fn extension(mime: Option<&str>, head: &[u8]) -> String {
    let essence = mime.map(|m| m.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
    let ext = match essence.as_deref() {
        Some("text/plain") => "txt",
        Some("text/markdown") => "md",
        Some("application/json") => "json",
        _ => infer::get(head).map(|t| t.extension()).unwrap_or("bin"),
    };
    if DATA_EXTENSIONS.contains(&ext) { ext } else { "bin" }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn a_reassembled_file_is_named_for_what_it_is() {
        let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D', b'R'];
        assert_eq!(extension(Some("image/png"), &png), "png");
        assert_eq!(extension(None, &png), "png");
        assert_eq!(extension(Some("text/plain; charset=utf-8"), b"hi"), "txt");
        assert_eq!(extension(None, b"\x00\x01"), "bin");
        // A program is data to keep, never something a double-click runs.
        assert_eq!(extension(Some("application/x-msdownload"), b"MZ\x90\x00\x03\x00\x00\x00\x04\x00"), "bin");
        assert_eq!(extension(None, b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "bin");
    }
}
