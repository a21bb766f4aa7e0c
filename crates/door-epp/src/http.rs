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
    Router::new().route("/epp/v1/submit", post(submit)).route("/epp/v1/inbox", get(inbox_info)).route("/health", get(health)).with_state(inbox)
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
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
