//! The HTTP/2 + SSE binding (spec 7): `POST /v1/messages`, `GET /v1/stream/{id}`, and the
//! signed manifest at `/.well-known/agent-manifest.json` (spec 8). Served only over TLS.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gatehouse_uamp::{Code, UampError, MAX_ENVELOPE_BYTES};
use tokio::sync::mpsc;

use super::streams::follow;
use super::tls::transport_auth;
use super::{Answer, UampDoor};
use gatehouse_net::tls::PeerCertificate;

pub fn router(uamp: Arc<UampDoor>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/stream/{id}", get(stream))
        .route("/.well-known/agent-manifest.json", get(manifest))
        // `any`: an HTTP/1.1 upgrade is a GET, an HTTP/2 extended CONNECT (RFC 8441) is not.
        .route(super::ws::PATH, axum::routing::any(super::ws::upgrade))
        .route("/health", get(|| async { Json(serde_json::json!({"status": "ok"})) }))
        .with_state(uamp)
}

/// What the plain-HTTP listener answers on UAMP paths: UAMP 6.1 forbids unencrypted
/// connections, so nothing is read and the caller is told where to go.
/// UAMP's paths on the plain listener: each says UAMP is served only over TLS.
pub fn plain_router() -> axum::Router {
    axum::Router::new()
        .route("/v1/messages", axum::routing::any(tls_required))
        .route("/v1/stream/{*rest}", axum::routing::any(tls_required))
        .route("/uamp/1/ws", axum::routing::any(tls_required))
        .route("/.well-known/agent-manifest.json", axum::routing::any(tls_required))
}

pub async fn tls_required() -> Response {
    let e = UampError::new(Code::Unauthorized, "tls_required", "UAMP is served only over TLS 1.3 (https) on this inbox's UAMP port");
    (StatusCode::FORBIDDEN, Json(e.body())).into_response()
}

fn error_response(status: u16, e: &UampError, retry_after: Option<u64>) -> Response {
    let mut resp = (StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST), Json(e.body())).into_response();
    if let Some(s) = retry_after {
        resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    resp
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut resp = (StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), Json(self.body)).into_response();
        if let Some(loc) = self.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            resp.headers_mut().insert(header::LOCATION, loc);
        }
        if let Some(s) = self.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

/// `application/uamp+json`, with `v=1` or no version parameter.
fn media_type_ok(headers: &HeaderMap) -> Result<(), String> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mut parts = ct.split(';').map(str::trim);
    if !parts.next().unwrap_or("").eq_ignore_ascii_case(gatehouse_uamp::MEDIA_TYPE) {
        return Err(format!("Content-Type is {ct:?}; UAMP envelopes are {};v=1", gatehouse_uamp::MEDIA_TYPE));
    }
    for p in parts {
        if let Some(v) = p.strip_prefix("v=") {
            if v.trim_matches('"') != "1" {
                return Err(format!("UAMP version {v} is not supported; this inbox speaks v=1"));
            }
        }
    }
    Ok(())
}

async fn messages(State(uamp): State<Arc<UampDoor>>, req: Request<Body>) -> Response {
    let now = gatehouse_gate::clock::now();
    let auth = transport_auth(req.headers(), req.extensions().get::<PeerCertificate>());
    if let Err(m) = media_type_ok(req.headers()) {
        // Recorded like any refusal, so the user sees it.
        let e = UampError::invalid("Content-Type", m).with_reason("media_type");
        return refuse(&uamp, e, now).await;
    }
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_ENVELOPE_BYTES) {
        let e = UampError::new(
            Code::PayloadTooLarge,
            "too_large",
            format!("the envelope is {} bytes; this inbox takes at most {MAX_ENVELOPE_BYTES}", declared.unwrap_or_default()),
        );
        return refuse(&uamp, e, now).await;
    }
    let read = match gatehouse_net::body::read(req.into_body(), declared, MAX_ENVELOPE_BYTES).await {
        Ok(r) => r,
        Err(gatehouse_net::body::BodyError::TooLarge(_)) => {
            let e = UampError::new(Code::PayloadTooLarge, "too_large", format!("the envelope exceeds this inbox's limit of {MAX_ENVELOPE_BYTES} bytes"));
            return refuse(&uamp, e, now).await;
        }
        Err(e @ gatehouse_net::body::BodyError::Timeout) => {
            return refuse(&uamp, UampError::invalid("/", e.to_string()).with_reason("body_timeout"), now).await
        }
        Err(e @ gatehouse_net::body::BodyError::Read(_)) => {
            return refuse(&uamp, UampError::invalid("/", e.to_string()).with_reason("body_unreadable"), now).await
        }
    };
    uamp.submit(&read.bytes, &auth, now).await.into_response()
}

/// A refusal before the envelope could be read: still a receipt for the user.
async fn refuse(uamp: &Arc<UampDoor>, e: UampError, now: chrono::DateTime<chrono::Utc>) -> Response {
    let this = uamp.clone();
    let status = e.code.http_status();
    let body = tokio::task::spawn_blocking(move || {
        let f = super::Failure::from(e);
        this.record_refusal(b"", &f, now, &uuid::Uuid::now_v7().to_string())
    })
    .await
    .unwrap_or_default();
    (StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST), Json(body)).into_response()
}

async fn manifest(State(uamp): State<Arc<UampDoor>>) -> Response {
    ([(header::CONTENT_TYPE, gatehouse_uamp::MANIFEST_MEDIA_TYPE)], uamp.signed_manifest()).into_response()
}

/// Serves a stream's frames as SSE (`id:` = delta_seq, `data:` = the frame), from
/// `Last-Event-ID` + 1 when the consumer resumes, until the terminal frame. Only the
/// sender that opened the stream may read it (its client certificate or bearer token).
async fn stream(State(uamp): State<Arc<UampDoor>>, Path(id): Path<String>, headers: HeaderMap, client: Option<Extension<PeerCertificate>>) -> Response {
    let store = uamp.store().clone();
    let (sid, auth) = (id.clone(), transport_auth(&headers, client.as_ref().map(|c| &c.0)));
    let checked = tokio::task::spawn_blocking(move || -> Result<(), (u16, UampError)> {
        let storage = |e: gatehouse_store::StoreError| (504, UampError::new(Code::BackendBusy, "storage", e.to_string()));
        let s = store.uamp_stream(&sid).map_err(storage)?;
        let Some(s) = s else {
            return Err((404, UampError::invalid("/stream_id", format!("no stream {sid:?} here")).with_reason("unknown_stream")));
        };
        let Some(t) = auth.bearer else {
            if let Some(k) = &auth.client_key {
                if super::key_speaks_for(k, &s.peer, store.trust_get(&s.peer).map_err(storage)?.as_ref()) {
                    return Ok(());
                }
            }
            return Err((
                401,
                UampError::new(
                    Code::Unauthenticated,
                    "no_credentials",
                    "present the client certificate or the bearer token of the sender that opened this stream",
                ),
            ));
        };
        match store.uamp_token_sender(&gatehouse_uamp::canonical::sha256_hex(t.as_bytes())).map_err(storage)? {
            Some(sender) if sender == s.peer => Ok(()),
            Some(_) => Err((403, UampError::new(Code::Unauthorized, "not_your_stream", "this stream belongs to another sender"))),
            None => Err((401, UampError::new(Code::Unauthenticated, "unknown_token", "the bearer token is unknown or revoked"))),
        }
    })
    .await;
    match checked {
        Ok(Ok(())) => {}
        Ok(Err((status, e))) => return error_response(status, &e, None),
        Err(e) => return error_response(504, &UampError::new(Code::BackendBusy, "internal", e.to_string()), Some(super::BUSY_RETRY_AFTER_SECS)),
    }
    let from = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok()).map_or(0, |n| n + 1);
    let (tx, rx) = mpsc::channel::<(u64, String)>(16);
    tokio::spawn(follow(uamp, id, from, tx));
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|(seq, frame)| (Ok::<_, Infallible>(Event::default().id(seq.to_string()).data(frame)), rx))
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}
