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

use crate::epp::pipeline::Outcome;
use crate::gate::hub::Inbox;
use crate::net::body::BodyError;

pub use crate::net::body::BODY_TIMEOUT;
/// Request headers must arrive within this time, and an idle keep-alive connection is
/// closed after it: a slow-loris client cannot hold a connection open by trickling.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `shutdown` resolves, admitting connections within
/// `limits` ([`crate::net::conn`]); then stops accepting, lets requests in progress finish,
/// and closes idle connections. Only requests naming this listener (its address or one
/// of `public_names`) and sent by no web page are routed ([`crate::net::host_check`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    public_names: &[String],
    limits: crate::net::conn::Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let app = crate::net::host_check::layer(app, crate::net::host_check::Allowed::new(listener.local_addr()?, false, public_names));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).max_buf_size(256 * 1024);
    crate::net::conn::serve(listener, limits, shutdown, move |stream, stopped| {
        let activity = crate::net::conn::Activity::new();
        let service = hyper_util::service::TowerToHyperService::new(crate::net::conn::tracked(app.clone(), activity.clone()));
        let conn = http.serve_connection(TokioIo::new(stream), service);
        crate::net::conn::drive(conn, activity, limits.idle, stopped)
    })
    .await;
    Ok(())
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
    ReceiptResponse(inbox.submit_failure_async(code, message, "http", crate::gate::clock::now()).await)
}

async fn submit(State(inbox): State<Arc<Inbox>>, req: Request<Body>) -> ReceiptResponse {
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > MAX_ENVELOPE_BYTES as u64) {
        return early_rejection(&inbox, ErrorCode::SizeExceeded, format!("envelope is {n} bytes; this inbox accepts at most {MAX_ENVELOPE_BYTES}")).await;
    }
    // Charged against the shared budget as it arrives (crate::net::body).
    let read = match crate::net::body::read(req.into_body(), declared.map(|n| n as usize), MAX_ENVELOPE_BYTES).await {
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
    ReceiptResponse(inbox.submit_async(&bytes, "http", crate::gate::clock::now()).await)
}
