//! The HTTP transport (spec 8.1): `POST /epp/v1/submit`, answered with a receipt.

use crate::pipeline::Submit as _;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gatehouse_epp::{ErrorCode, MAX_ENVELOPE_BYTES};

use crate::pipeline::Outcome;
use gatehouse_gate::state::Gate;
use gatehouse_net::body::BodyError;

pub use gatehouse_net::body::BODY_TIMEOUT;
pub use gatehouse_net::plain::HEADER_TIMEOUT;

pub fn router(inbox: Arc<Gate>) -> Router {
    Router::new()
        .route("/epp/v1/submit", post(submit))
        .route("/epp/v1/inbox", get(inbox_info))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .with_state(inbox)
}

/// This process answers (for a supervisor): never waits on the database, so a slow one
/// cannot make a live node look dead.
async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

/// How long `/ready` waits for the database before saying it is not ready.
pub const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// This node can take envelopes now: its database answers (for a load balancer, which
/// sends traffic elsewhere on 503).
async fn ready(State(inbox): State<Arc<Gate>>) -> Response {
    let store = inbox.store().clone();
    let checked = tokio::time::timeout(READY_TIMEOUT, tokio::task::spawn_blocking(move || store.ping())).await;
    // What the node found wrong with the state it shares (a rewound activity log) is
    // told, without taking the node out of service: the database alone could otherwise
    // stop every node.
    let problems: serde_json::Map<String, serde_json::Value> = inbox.problems().into_iter().map(|(what, text)| (what.to_string(), text.into())).collect();
    let reason = match checked {
        Ok(Ok(Ok(()))) if problems.is_empty() => return Json(serde_json::json!({"status": "ready"})).into_response(),
        Ok(Ok(Ok(()))) => return Json(serde_json::json!({"status": "ready", "problems": problems})).into_response(),
        Ok(Ok(Err(e))) => e.to_string(),
        Ok(Err(e)) => format!("the check did not finish: {e}"),
        Err(_) => format!("the database did not answer within {} s", READY_TIMEOUT.as_secs()),
    };
    let mut resp = (StatusCode::SERVICE_UNAVAILABLE, Json(serde_json::json!({"status": "unavailable", "reason": reason}))).into_response();
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(crate::pipeline::UNAVAILABLE_RETRY_SECS));
    resp
}

async fn inbox_info(State(inbox): State<Arc<Gate>>) -> Json<serde_json::Value> {
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

async fn early_rejection(inbox: &Gate, code: ErrorCode, message: String) -> ReceiptResponse {
    ReceiptResponse(inbox.submit_failure_async(code, message, "http", gatehouse_gate::clock::now()).await)
}

async fn submit(State(inbox): State<Arc<Gate>>, req: Request<Body>) -> ReceiptResponse {
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > MAX_ENVELOPE_BYTES as u64) {
        return early_rejection(&inbox, ErrorCode::SizeExceeded, format!("envelope is {n} bytes; this inbox accepts at most {MAX_ENVELOPE_BYTES}")).await;
    }
    // Charged against the shared budget as it arrives (gatehouse_net::body).
    let read = match gatehouse_net::body::read(req.into_body(), declared.map(|n| n as usize), MAX_ENVELOPE_BYTES).await {
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
    ReceiptResponse(inbox.submit_async(&bytes, "http", gatehouse_gate::clock::now()).await)
}
