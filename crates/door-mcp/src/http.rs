//! The door's endpoint on the inbox ([`crate::signed::PATH`]): a wrap asks about one call,
//! signed by its server's key; the answer is the gate's. The inbox's listener checks Host
//! and Origin before a request gets here (a web page cannot ask on a server's behalf).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::json;

use crate::at_gate::McpDoor;
use crate::signed::{self, Asked};

/// `POST /mcp/v1/calls`.
pub fn router(door: Arc<McpDoor>) -> Router {
    Router::new().route(signed::PATH, post(call)).with_state(door)
}

fn refused(status: StatusCode, message: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"error": message}).to_string()).into_response()
}

async fn call(State(door): State<Arc<McpDoor>>, req: axum::extract::Request) -> Response {
    let headers: HeaderMap = req.headers().clone();
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let body = match gatehouse_net::body::read(req.into_body(), declared, signed::MAX_BODY).await {
        Ok(r) => r,
        Err(gatehouse_net::body::BodyError::TooLarge(_)) => {
            return refused(StatusCode::PAYLOAD_TOO_LARGE, format!("a call is judged up to {} bytes; this one is larger", signed::MAX_BODY))
        }
        Err(_) => return refused(StatusCode::REQUEST_TIMEOUT, "the request did not arrive in time".into()),
    };
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now = gatehouse_gate::clock::now().timestamp();
    // The signature first: nothing of an unsigned body is read.
    let public = match signed::verify(h(signed::KEY_HEADER), h(signed::TIME_HEADER), h(signed::SIGNATURE_HEADER), &body.bytes, now) {
        Ok(k) => k,
        Err(e) => return refused(StatusCode::UNAUTHORIZED, e.to_string()),
    };
    let asked: Asked = match serde_json::from_slice(&body.bytes) {
        Ok(a) => a,
        Err(e) => return refused(StatusCode::BAD_REQUEST, format!("not a call Gatehouse can judge: {e}")),
    };
    if !signed::name_ok(&asked.server) || !asked.arguments.is_object() || asked.tool.is_empty() {
        return refused(StatusCode::BAD_REQUEST, "a call names its server (letters, digits, - and _), its tool, and its arguments (an object)".into());
    }
    let answer = door.ask(&public, asked, body.bytes.len() as u64).await;
    ([(header::CONTENT_TYPE, "application/json")], json!(answer).to_string()).into_response()
}
