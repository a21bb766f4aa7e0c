//! The HTTP transport (spec 8.1): `POST /epp/v1/submit`, answered with a receipt.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gatehouse_epp::{ErrorCode, MAX_ENVELOPE_BYTES};

use crate::pipeline::{Inbox, Outcome};

/// A body that has not fully arrived within this time is refused (slow senders must not
/// hold a connection and a buffer forever).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

pub fn router(inbox: Arc<Inbox>) -> Router {
    Router::new()
        .route("/epp/v1/submit", post(submit))
        .route("/epp/v1/inbox", get(inbox_info))
        .route("/health", get(health))
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

fn early_rejection(inbox: &Inbox, code: ErrorCode, message: String) -> ReceiptResponse {
    ReceiptResponse(inbox.submit_failure(code, message, "http", chrono::Utc::now()))
}

async fn submit(State(inbox): State<Arc<Inbox>>, req: Request<Body>) -> ReceiptResponse {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > MAX_ENVELOPE_BYTES as u64) {
        return early_rejection(&inbox, ErrorCode::SizeExceeded, format!("envelope is {n} bytes; this inbox accepts at most {MAX_ENVELOPE_BYTES}"));
    }
    let read = tokio::time::timeout(BODY_TIMEOUT, to_bytes(req.into_body(), MAX_ENVELOPE_BYTES)).await;
    let bytes = match read {
        Err(_) => {
            return early_rejection(&inbox, ErrorCode::InvalidFormat, format!("the request body did not arrive within {} s", BODY_TIMEOUT.as_secs()))
        }
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            let too_big = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
                || e.to_string().contains("length limit");
            return if too_big {
                early_rejection(&inbox, ErrorCode::SizeExceeded, format!("envelope exceeds this inbox's limit of {MAX_ENVELOPE_BYTES} bytes"))
            } else {
                early_rejection(&inbox, ErrorCode::InvalidFormat, format!("could not read the request body: {e}"))
            };
        }
    };
    let inbox2 = inbox.clone();
    match tokio::task::spawn_blocking(move || inbox2.submit(&bytes, "http", chrono::Utc::now())).await {
        Ok(outcome) => ReceiptResponse(outcome),
        Err(e) => early_rejection(&inbox, ErrorCode::InternalError, format!("inbox processing failed: {e}")),
    }
}
