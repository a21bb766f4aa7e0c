//! An OpenAI-compatible `POST /v1/chat/completions` for tests. It answers
//! `"<model> read: <the user message>"` (the text inside Gatehouse's `<external_message>`
//! wrapper, when it has one), streamed word by word as SSE chunks ending with a
//! usage chunk and `[DONE]` (or as one JSON answer without `stream`). It keeps what it was
//! sent, and misbehaves on demand: a user message containing `explode` gets HTTP 500,
//! `stall` gets nothing for a minute; with a key set, a request without it gets 401.
//! `pace` spaces the words out (an answer to watch being written); `set_down(true)`
//! answers every request with 503 until it is set back.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures_util::StreamExt as _;
use serde_json::{json, Value};

#[derive(Clone, Default)]
pub struct ModelServer {
    /// A bearer key the server requires, if any.
    pub key: Option<String>,
    /// The pause before each streamed word.
    pub pace: std::time::Duration,
    seen: Arc<Mutex<Vec<Value>>>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl ModelServer {
    pub fn with_key(key: &str) -> ModelServer {
        ModelServer { key: Some(key.into()), ..Default::default() }
    }

    pub fn paced(pace: std::time::Duration) -> ModelServer {
        ModelServer { pace, ..Default::default() }
    }

    /// While down, every request gets 503 (an overloaded or restarting model).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    /// The request bodies received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

pub fn router(s: ModelServer) -> Router {
    Router::new().route("/v1/chat/completions", post(chat)).with_state(s)
}

/// Starts on a free loopback port in the current runtime; returns the API base (`…/v1`).
pub async fn spawn(s: ModelServer) -> String {
    spawn_at(s, 0).await
}

/// Starts on loopback `port` (a model that comes back where it was).
pub async fn spawn_at(s: ModelServer, port: u16) -> String {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("a loopback port");
    let base = format!("http://{}/v1", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, router(s)).await });
    base
}

async fn chat(State(s): State<ModelServer>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    s.seen.lock().unwrap_or_else(|p| p.into_inner()).push(body.clone());
    if s.down.load(std::sync::atomic::Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": {"message": "the model is loading", "type": "server_error"}}))).into_response();
    }
    if let Some(k) = &s.key {
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(k.as_str()) {
            return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})))
                .into_response();
        }
    }
    let model = body["model"].as_str().unwrap_or("test-model").to_string();
    let user =
        body["messages"].as_array().and_then(|m| m.iter().rev().find(|x| x["role"] == "user")).and_then(|m| m["content"].as_str()).unwrap_or("").to_string();
    if user.contains("explode") {
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": {"message": "the model crashed", "type": "server_error"}}))).into_response();
    }
    if user.contains("stall") {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    }
    // What it read is the sender's text when Gatehouse wrapped it as data.
    let read = user.strip_prefix("<external_message>\n").and_then(|r| r.split("\n</external_message>").next()).unwrap_or(&user);
    let answer = format!("{model} read: {read}");
    let prompt_tokens =
        body["messages"].as_array().map(|m| m.iter().map(|x| x["content"].as_str().unwrap_or("").split_whitespace().count()).sum::<usize>()).unwrap_or(0);
    let words: Vec<String> = answer.split_inclusive(' ').map(str::to_string).collect();
    let completion_tokens = words.len();
    if !body["stream"].as_bool().unwrap_or(false) {
        return Json(json!({"id": "chatcmpl-test", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}}))
        .into_response();
    }
    let mut events: Vec<String> = words
        .iter()
        .map(|w| json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": null}]}).to_string())
        .collect();
    events.push(json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}}).to_string());
    events.push("[DONE]".into());
    let pace = s.pace;
    let stream = futures_util::stream::iter(events).then(move |d| async move {
        if !pace.is_zero() {
            tokio::time::sleep(pace).await;
        }
        Ok::<_, Infallible>(Event::default().data(d))
    });
    Sse::new(stream).into_response()
}
