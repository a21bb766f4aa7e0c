//! The HTTP transport (spec 8.1): `POST /epp/v1/submit`, answered with a receipt.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gatehouse_epp::{ErrorCode, MAX_ENVELOPE_BYTES};

use crate::body::BodyError;
use crate::pipeline::{Inbox, Outcome};

pub use crate::body::BODY_TIMEOUT;
/// Request headers must arrive within this time, and an idle keep-alive connection is
/// closed after it: a slow-loris client cannot hold a connection open by trickling.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; further clients wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 1024;

/// Serves `app` on `listener` until `shutdown` resolves, with the limits above; then
/// stops accepting, lets requests in progress finish, and closes idle connections.
/// Only requests naming this listener (its address or one of `public_names`) and sent by
/// no web page are routed ([`crate::host_check`]).
pub async fn serve(listener: tokio::net::TcpListener, app: Router, public_names: &[String], shutdown: impl std::future::Future<Output = ()>) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let app = crate::host_check::layer(app, crate::host_check::Allowed::new(listener.local_addr()?, false, public_names));
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).max_buf_size(256 * 1024);
    tokio::pin!(shutdown);
    while let Some((stream, permit)) = accept(&listener, &connections, shutdown.as_mut()).await {
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // Errors here are the client's (reset, timed out headers): nothing to report.
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    // Requests in progress get a moment to finish; idle keep-alives close at once.
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
    Ok(())
}

/// The next connection, once one of `connections` is free (its permit travels with it),
/// or None when `shutdown` resolves first. Shared by the plain and the TLS listeners.
pub(crate) async fn accept<F: std::future::Future<Output = ()>>(
    listener: &tokio::net::TcpListener,
    connections: &Arc<tokio::sync::Semaphore>,
    mut shutdown: std::pin::Pin<&mut F>,
) -> Option<(tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let permit = tokio::select! {
        p = connections.clone().acquire_owned() => p.expect("the semaphore is never closed"),
        () = shutdown.as_mut() => return None,
    };
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return Some((stream, permit));
                }
                Err(e) => {
                    // Out of file descriptors, say: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = shutdown.as_mut() => return None,
        }
    }
}

pub fn router(inbox: Arc<Inbox>) -> Router {
    Router::new()
        .route("/epp/v1/submit", post(submit))
        .route("/epp/v1/inbox", get(inbox_info))
        .route("/health", get(health))
        .route("/v1/messages", axum::routing::any(crate::uamp::http::tls_required))
        .route("/v1/stream/{*rest}", axum::routing::any(crate::uamp::http::tls_required))
        .route("/uamp/1/ws", axum::routing::any(crate::uamp::http::tls_required))
        .route("/.well-known/agent-manifest.json", axum::routing::any(crate::uamp::http::tls_required))
        .with_state(inbox)
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

async fn inbox_info(State(inbox): State<Arc<Inbox>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "protocol": "EPP",
        "version": "1",
        "public_key": inbox.public_key(),
        "submit": "/epp/v1/submit",
    }))
}

/// Every answer of the submit endpoint is a receipt, even when nothing could be read.
struct ReceiptResponse(Outcome);

impl IntoResponse for ReceiptResponse {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (status, Json(&self.0.receipt)).into_response();
        if let Some(secs) = self.0.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

async fn early_rejection(inbox: &Inbox, code: ErrorCode, message: String) -> ReceiptResponse {
    ReceiptResponse(inbox.submit_failure_async(code, message, "http", chrono::Utc::now()).await)
}

async fn submit(State(inbox): State<Arc<Inbox>>, req: Request<Body>) -> ReceiptResponse {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > MAX_ENVELOPE_BYTES as u64) {
        return early_rejection(&inbox, ErrorCode::SizeExceeded, format!("envelope is {n} bytes; this inbox accepts at most {MAX_ENVELOPE_BYTES}")).await;
    }
    // Charged against the shared budget as it arrives (crate::body).
    let read = match crate::body::read(req.into_body(), declared.map(|n| n as usize), MAX_ENVELOPE_BYTES).await {
        Ok(r) => r,
        Err(BodyError::TooLarge(_)) => {
            return early_rejection(&inbox, ErrorCode::SizeExceeded, format!("envelope exceeds this inbox's limit of {MAX_ENVELOPE_BYTES} bytes")).await
        }
        Err(BodyError::Timeout) => {
            return early_rejection(&inbox, ErrorCode::InvalidFormat, format!("the request body did not arrive within {} s", BODY_TIMEOUT.as_secs())).await
        }
        Err(e @ BodyError::Read(_)) => return early_rejection(&inbox, ErrorCode::InvalidFormat, e.to_string()).await,
    };
    let bytes = read.bytes;
    ReceiptResponse(inbox.submit_async(&bytes, "http", chrono::Utc::now()).await)
}
