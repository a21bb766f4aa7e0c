//! The WebSocket binding (spec 7): `wss://host/uamp/1/ws` on the UAMP TLS listener.
//!
//! Every WebSocket message is binary: a 4-byte big-endian length and that many bytes of
//! JSON (several may follow each other in one message). The client sends envelopes; the
//! inbox answers each with the body the HTTP binding would send (receipt or error), then
//! pushes the frames of any stream the envelope opened on the same socket. The bearer
//! token travels in the upgrade request's `Authorization` header; a client certificate is
//! the connection's, as for HTTP.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use futures_util::{SinkExt as _, StreamExt as _};
use gatehouse_uamp::{UampError, MAX_ENVELOPE_BYTES};
use tokio::sync::{mpsc, Semaphore};

use super::{TransportAuth, UampDoor};

/// The path of the binding.
pub const PATH: &str = "/uamp/1/ws";
/// The largest item a peer may send: one envelope and its prefix.
const MAX_ITEM: usize = MAX_ENVELOPE_BYTES + 4;

/// Prefixes `json` with its length, as the binding frames every item.
pub fn frame(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 4);
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json);
    out
}

/// Splits one WebSocket message into its length-prefixed items.
pub fn unframe(mut msg: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut items = Vec::new();
    if msg.is_empty() {
        return Err("an empty message carries no envelope".into());
    }
    while !msg.is_empty() {
        if msg.len() < 4 {
            return Err(format!("{} bytes left where a 4-byte length prefix was due", msg.len()));
        }
        let n = u32::from_be_bytes([msg[0], msg[1], msg[2], msg[3]]) as usize;
        if n > MAX_ENVELOPE_BYTES {
            return Err(format!("an item of {n} bytes exceeds this inbox's limit of {MAX_ENVELOPE_BYTES}"));
        }
        let rest = &msg[4..];
        if rest.len() < n {
            return Err(format!("the length prefix says {n} bytes but {} follow", rest.len()));
        }
        items.push(&rest[..n]);
        msg = &rest[n..];
    }
    Ok(items)
}

/// Sessions open at once. A session outlives its HTTP connection's slot, so it has a cap
/// of its own.
pub const MAX_SESSIONS: usize = 64;
/// A session with no message either way for this long is closed.
pub const IDLE: Duration = Duration::from_secs(300);

static SESSIONS: Semaphore = Semaphore::const_new(MAX_SESSIONS);

pub async fn upgrade(
    State(uamp): State<Arc<UampDoor>>,
    headers: HeaderMap,
    client: Option<axum::Extension<gatehouse_net::tls::PeerCertificate>>,
    ws: WebSocketUpgrade,
) -> Response {
    let auth = super::tls::transport_auth(&headers, client.as_ref().map(|c| &c.0));
    // A socket is only for senders that can prove who they are (a token this inbox issued,
    // or a client certificate); unknown senders knock over plain HTTP, which holds nothing.
    let known_token = match &auth.bearer {
        Some(t) => {
            let (u, hash) = (uamp.clone(), gatehouse_uamp::canonical::sha256_hex(t.as_bytes()));
            tokio::task::spawn_blocking(move || u.store().uamp_token_sender(&hash)).await.ok().and_then(Result::ok).flatten().is_some()
        }
        None => false,
    };
    if !known_token && auth.client_key.is_none() {
        let e = UampError::new(
            gatehouse_uamp::Code::Unauthenticated,
            "no_credentials",
            "a WebSocket session needs a bearer token this inbox issued or a client certificate",
        );
        return (StatusCode::UNAUTHORIZED, axum::Json(e.body())).into_response();
    }
    let Ok(permit) = SESSIONS.try_acquire() else {
        let e = UampError::new(gatehouse_uamp::Code::BackendBusy, "busy", format!("{MAX_SESSIONS} WebSocket sessions are open; try again later"));
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(e.body())).into_response();
    };
    ws.max_message_size(MAX_ITEM * 4).max_frame_size(MAX_ITEM * 4).on_upgrade(move |socket| async move {
        session(uamp, auth, socket).await;
        drop(permit);
    })
}

async fn session(uamp: Arc<UampDoor>, auth: TransportAuth, socket: WebSocket) {
    let (mut sink, mut source) = socket.split();
    let (out, mut outgoing) = mpsc::channel::<Vec<u8>>(64);
    // When anything last went either way (ms since `opened`).
    let opened = tokio::time::Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    // One writer, so answers and stream frames never interleave inside a message.
    let wrote = last.clone();
    let writer = tokio::spawn(async move {
        while let Some(json) = outgoing.recv().await {
            if sink.send(Message::Binary(frame(&json).into())).await.is_err() {
                break;
            }
            wrote.store(opened.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
        let _ = sink.close().await;
    });
    loop {
        let idle_until = opened + Duration::from_millis(last.load(Ordering::Relaxed)) + IDLE;
        let msg = tokio::select! {
            m = source.next() => m,
            () = tokio::time::sleep_until(idle_until) => {
                if opened + Duration::from_millis(last.load(Ordering::Relaxed)) + IDLE <= tokio::time::Instant::now() {
                    break;
                }
                continue;
            }
        };
        let Some(msg) = msg else { break };
        last.store(opened.elapsed().as_millis() as u64, Ordering::Relaxed);
        let bytes = match msg {
            Ok(Message::Binary(b)) => b,
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Text(_)) => {
                let e = UampError::invalid("/", "UAMP over WebSocket uses binary messages: a 4-byte length, then the JSON").with_reason("ws_framing");
                let _ = out.send(e.body().to_string().into_bytes()).await;
                continue;
            }
        };
        let items = match unframe(&bytes) {
            Ok(items) => items,
            Err(m) => {
                let e = UampError::invalid("/", m).with_reason("ws_framing");
                let _ = out.send(e.body().to_string().into_bytes()).await;
                continue;
            }
        };
        for item in items {
            let answer = uamp.submit(item, &auth, gatehouse_gate::clock::now()).await;
            let mut body = answer.body;
            if let Some(s) = answer.retry_after {
                body["retry_after"] = s.into();
            }
            let stream = answer.location.is_some().then(|| body.get("stream_id").and_then(|s| s.as_str()).map(str::to_string)).flatten();
            if out.send(body.to_string().into_bytes()).await.is_err() {
                break;
            }
            if let Some(id) = stream {
                let (tx, mut rx) = mpsc::channel::<(u64, String)>(16);
                tokio::spawn(super::streams::follow(uamp.clone(), id, 0, tx));
                let out = out.clone();
                tokio::spawn(async move {
                    while let Some((_, f)) = rx.recv().await {
                        if out.send(f.into_bytes()).await.is_err() {
                            break;
                        }
                    }
                });
            }
        }
    }
    drop(out);
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_length_prefixed_big_endian() {
        let f = frame(b"{}");
        assert_eq!(f, [0, 0, 0, 2, b'{', b'}']);
        let mut two = f.clone();
        two.extend(frame(b"[1]"));
        assert_eq!(unframe(&two).unwrap(), vec![&b"{}"[..], &b"[1]"[..]]);
        assert!(unframe(&[0, 0, 0, 9, b'{']).unwrap_err().contains("says 9 bytes"));
        assert!(unframe(&[0, 0]).unwrap_err().contains("4-byte"));
        assert!(unframe(&[]).is_err());
        assert!(unframe(&[0xff, 0xff, 0xff, 0xff]).unwrap_err().contains("exceeds"));
    }
}
