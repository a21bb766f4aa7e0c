//! A2A's JSON-RPC binding: one endpoint ([`PATH`]) for every method, streams as
//! server-sent events of JSON-RPC answers, and the Agent Card at
//! [`gatehouse_a2a::CARD_PATH`], signed with the gate's identity key. Served on the TLS
//! listener, whose Host checks and connection bounds apply; the client certificate's key
//! comes from it ([`gatehouse_net::peer::PeerKey`]). On the plain loopback listener too,
//! but only while the user allows it ([`Listener::PlainLoopback`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::Signer as _;
use gatehouse_a2a::rpc::{self, code, Call, RpcError};
use gatehouse_a2a::types::{Artifact, ArtifactUpdate, Event, Part, StatusUpdate, Task, TaskState};
use gatehouse_gate::runner::ExecProgress;
use gatehouse_net::peer::PeerKey;
use gatehouse_store::ExecStatus;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};

use crate::task::{ANSWER, CANCELED_BY_SENDER};
use crate::{internal, A2aDoor, Caller, Listener, Unauthenticated, MAX_REQUEST_BYTES};

/// The JSON-RPC endpoint.
pub const PATH: &str = "/a2a";
/// How long a send that asked to wait waits for its task to end or to wait for the user;
/// after this it is answered with the task as it is (follow it with GetTask).
const SEND_WAITS: Duration = Duration::from_secs(60);
/// How long one stream follows a task.
const STREAM_LASTS: Duration = Duration::from_secs(30 * 60);
/// How often a followed task is read again (a state the runner or the user changed).
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// The door's routes on the listener `on`. On the plain loopback listener every request
/// is first checked against the user's setting: while it is off, nothing is read.
pub fn router(door: Arc<A2aDoor>, on: Listener) -> Router {
    let routes = Router::new().route(gatehouse_a2a::CARD_PATH, get(card)).route(PATH, post(call));
    let routes = match on {
        Listener::Tls => routes,
        Listener::PlainLoopback => routes.route_layer(axum::middleware::from_fn_with_state(door.clone(), while_allowed)),
    };
    routes.layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES)).layer(Extension(on)).with_state(door)
}

/// Passes a request on the plain listener only while the user lets agents on this
/// computer call without TLS.
async fn while_allowed(State(door): State<Arc<A2aDoor>>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let store = door.store().clone();
    match blocking(move || crate::plain_loopback_allowed(&store).map_err(internal)).await {
        Ok(true) => next.run(req).await,
        Ok(false) => refused(
            StatusCode::FORBIDDEN,
            "A2A over plain HTTP is off on this gate: call its TLS address, or ask the person to let agents on their computer call without TLS (Settings)",
        ),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, Json(rpc::error(&Value::Null, &e))).into_response(),
    }
}

/// A refusal before any JSON-RPC is read, as an HTTP error: A2A 1.0 has no JSON-RPC code
/// for "who are you" or "not here", and a JSON-RPC error would read to the SDKs as a
/// malformed request (`@a2a-js/sdk` says exactly that), hiding the status.
fn refused(status: StatusCode, why: &str) -> Response {
    let word = status.canonical_reason().unwrap_or("refused").to_lowercase();
    (status, Json(json!({"error": word, "message": why}))).into_response()
}

/// The card, with the endpoint at the address the caller reached (its Host was checked
/// against this listener's names before any handler runs).
async fn card(State(door): State<Arc<A2aDoor>>, Extension(on): Extension<Listener>, uri: Uri, headers: HeaderMap) -> Response {
    let host = uri.authority().map(|a| a.to_string()).or_else(|| headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string));
    let Some(host) = host else { return (StatusCode::BAD_REQUEST, "no Host").into_response() };
    let scheme = match on {
        Listener::Tls => "https",
        Listener::PlainLoopback => "http",
    };
    Json(door.signed_card(&format!("{scheme}://{host}{PATH}"))).into_response()
}

impl A2aDoor {
    /// The Agent Card, signed (JWS, EdDSA, detached: `a2a-sdk`'s card signature) with the
    /// gate's identity key; `kid` is that key as the gate shows it.
    pub fn signed_card(&self, url: &str) -> Value {
        let mut card = gatehouse_a2a::card::card(&gatehouse_a2a::card::About {
            name: "Gatehouse",
            description: "A person's own gate for messages from AI agents: who may reach their AI, and for what, is theirs to decide.",
            url,
            version: env!("CARGO_PKG_VERSION"),
        });
        let protected = URL_SAFE_NO_PAD.encode(json!({"alg": "EdDSA", "typ": "JOSE", "kid": self.gate.public_key()}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(gatehouse_a2a::card::signing_input(&card));
        let signature = URL_SAFE_NO_PAD.encode(self.key.sign(format!("{protected}.{payload}").as_bytes()).to_bytes());
        card["signatures"] = json!([{"protected": protected, "signature": signature}]);
        card
    }
}

fn answer(id: &Value, result: Result<Value, RpcError>) -> Response {
    match result {
        Ok(v) => Json(rpc::result(id, v)).into_response(),
        Err(e) => Json(rpc::error(id, &e)).into_response(),
    }
}

fn event_value(e: &Event) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, RpcError> + Send + 'static) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| Err(internal(e)))
}

async fn call(State(door): State<Arc<A2aDoor>>, peer: Option<Extension<PeerKey>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    // Who calls is judged first: a stranger without a credential is told so and nothing
    // of what it sent is read further or kept.
    let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(|t| t.trim().to_string());
    let spki = peer.and_then(|Extension(p)| p.0);
    let caller = {
        let door = door.clone();
        tokio::task::spawn_blocking(move || door.authenticate(bearer.as_deref(), spki.as_deref())).await.unwrap_or_else(|e| Err(Unauthenticated(e.to_string())))
    };
    let caller = match caller {
        Ok(c) => c,
        Err(Unauthenticated(why)) => {
            let mut r = refused(StatusCode::UNAUTHORIZED, &why);
            r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return r;
        }
    };
    if let Some(v) = headers.get(gatehouse_a2a::VERSION_HEADER) {
        let v = v.to_str().unwrap_or("");
        if !(v == "1" || v.starts_with("1.")) {
            let e = RpcError::new(code::VERSION_NOT_SUPPORTED, format!("this agent speaks A2A {}; the request asks for {v:?}", gatehouse_a2a::VERSION));
            return Json(rpc::error(&Value::Null, &e)).into_response();
        }
    }
    let req = match rpc::parse(&body) {
        Ok(r) => r,
        Err((id, e)) => return Json(rpc::error(&id, &e)).into_response(),
    };
    let id = req.id;
    match req.call {
        Call::Send { send, streaming } => {
            // Room for the stream first: a message refused for room is not accepted.
            let slot = match streaming.then(|| door.reserve_stream(&caller)).transpose() {
                Ok(slot) => slot,
                Err(why) => return no_room(&id, &why),
            };
            let size = body.len();
            let wait = !streaming && !send.configuration.as_ref().is_some_and(|c| c.return_immediately);
            let sent = {
                let (door, caller) = (door.clone(), caller.clone());
                blocking(move || door.send_blocking(&caller, &send, size, chrono::Utc::now())).await
            };
            let sent = match sent {
                Ok(s) => s,
                Err(e) => return answer(&id, Err(e)),
            };
            if let Some(slot) = slot {
                return stream(door, id, sent.task, sent.row, slot);
            }
            let task = match (wait, sent.row) {
                (true, Some(row)) if !sent.task.status.state.ends_stream() => settled(&door, &sent.task.id, row).await.unwrap_or(sent.task),
                _ => sent.task,
            };
            answer(&id, Ok(event_value(&Event::Task(task))))
        }
        Call::GetTask { id: task_id } => {
            let door2 = door.clone();
            answer(&id, blocking(move || door2.owned(&caller, &task_id).map(|(t, _)| serde_json::to_value(t).unwrap_or(Value::Null))).await)
        }
        Call::Cancel { id: task_id } => {
            let door2 = door.clone();
            answer(&id, blocking(move || door2.cancel(&caller, &task_id)).await.map(|t| serde_json::to_value(t).unwrap_or(Value::Null)))
        }
        Call::Subscribe { id: task_id } => {
            let slot = match door.reserve_stream(&caller) {
                Ok(slot) => slot,
                Err(why) => return no_room(&id, &why),
            };
            let door2 = door.clone();
            match blocking(move || door2.owned(&caller, &task_id)).await {
                // A2A 1.0: a task that ended has nothing left to follow (read it with GetTask).
                Ok((task, _)) if task.status.state.terminal() => {
                    let state = serde_json::to_value(task.status.state).unwrap_or(Value::Null);
                    answer(&id, Err(RpcError::new(code::UNSUPPORTED_OPERATION, format!("this task ended ({state}): read it with GetTask"))))
                }
                Ok((task, row)) => stream(door, id, task, row, slot),
                Err(e) => answer(&id, Err(e)),
            }
        }
    }
}

impl A2aDoor {
    /// The caller's own task and its envelope row; another caller's is not found.
    fn owned(&self, caller: &Caller, task_id: &str) -> Result<(Task, Option<i64>), RpcError> {
        let not_found = || RpcError::new(code::TASK_NOT_FOUND, format!("no task {task_id:?} of yours"));
        let r = self.store().receipt(task_id).map_err(internal)?.ok_or_else(not_found)?;
        if r.transport != crate::DOOR || r.sender.as_deref() != Some(caller.id()) {
            return Err(not_found());
        }
        Ok((self.task_of(task_id)?, r.envelope_row))
    }

    /// Cancels a task that waits for the user; one that runs or ended is not cancelable.
    fn cancel(&self, caller: &Caller, task_id: &str) -> Result<Task, RpcError> {
        let (task, row) = self.owned(caller, task_id)?;
        let now = gatehouse_gate::clock::utc_string(chrono::Utc::now());
        let note = json!({CANCELED_BY_SENDER: true, "at": now});
        let moved = match row {
            Some(row) => self.store().set_exec_from(row, ExecStatus::Held, ExecStatus::Denied, Some(&note), &now).map_err(internal)?,
            None => false,
        };
        if !moved {
            let state = serde_json::to_value(task.status.state).unwrap_or(Value::Null);
            return Err(RpcError::new(code::TASK_NOT_CANCELABLE, format!("only a task waiting for the user can be canceled; this one is {state}")));
        }
        self.task_of(task_id)
    }
}

/// Waits until the task ends or waits for the user, within [`SEND_WAITS`].
async fn settled(door: &Arc<A2aDoor>, task_id: &str, row: i64) -> Option<Task> {
    let mut progress = door.gate.subscribe_progress();
    let started = Instant::now();
    loop {
        let (d, t) = (door.clone(), task_id.to_string());
        let task = blocking(move || d.task_of(&t)).await.ok()?;
        if task.status.state.ends_stream() || started.elapsed() > SEND_WAITS {
            return Some(task);
        }
        let _ = tokio::time::timeout(LOOK_EVERY, async {
            loop {
                match progress.recv().await {
                    Ok(ExecProgress::Finished { envelope_row, .. }) if envelope_row == row => return,
                    Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
                    _ => {}
                }
            }
        })
        .await;
    }
}

/// No room for a stream: 503, nothing done.
fn no_room(id: &Value, why: &str) -> Response {
    let e = RpcError::new(code::INTERNAL, why.to_string());
    (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "5")], Json(rpc::error(id, &e))).into_response()
}

/// The task now, then what happens to it, until it ends or waits for the user; `slot`
/// is held until the follower ends.
fn stream(door: Arc<A2aDoor>, id: Value, first: Task, row: Option<i64>, slot: crate::StreamSlot) -> Response {
    let (tx, mut rx) = mpsc::channel::<Value>(32);
    tokio::spawn(async move {
        let _slot = slot;
        follow(door, first, row, tx).await;
    });
    let events = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
        .map(move |result| Ok::<_, Infallible>(SseEvent::default().data(rpc::result(&id, result).to_string())));
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

use futures_util::StreamExt as _;

/// Sends the task's events into `tx` until the task ends or waits, the stream closes, or
/// [`STREAM_LASTS`] passes. The answer streams as it comes: each piece is what was added
/// to it since the last (`append`), the last one marked `lastChunk`.
async fn follow(door: Arc<A2aDoor>, first: Task, row: Option<i64>, tx: mpsc::Sender<Value>) {
    let mut progress = door.gate.subscribe_progress();
    let (task_id, context_id) = (first.id.clone(), first.context_id.clone());
    let mut state = first.status.state;
    for event in opening(first, row.is_some()) {
        if tx.send(event_value(&event)).await.is_err() {
            return;
        }
    }
    let Some(row) = row else { return };
    let started = Instant::now();
    let mut streamed = String::new();
    while !state.ends_stream() && started.elapsed() < STREAM_LASTS {
        let partial = tokio::time::timeout(LOOK_EVERY, async {
            loop {
                match progress.recv().await {
                    Ok(ExecProgress::Partial { envelope_row, text }) if envelope_row == row => return Some(text),
                    Ok(ExecProgress::Finished { envelope_row, .. }) if envelope_row == row => return None,
                    Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
                    _ => {}
                }
            }
        })
        .await;
        if let Ok(Some(text)) = partial {
            // The answer so far, whole: what is new is sent.
            let (piece, append) = match text.strip_prefix(streamed.as_str()) {
                Some(rest) => (rest.to_string(), !streamed.is_empty()),
                None => (text.clone(), false),
            };
            streamed = text;
            if !piece.is_empty() && tx.send(event_value(&chunk(&task_id, &context_id, piece, append, false))).await.is_err() {
                return;
            }
            continue;
        }
        let (d, t) = (door.clone(), task_id.clone());
        let Ok(now) = blocking(move || d.task_of(&t)).await else { return };
        if now.status.state == state {
            continue;
        }
        state = now.status.state;
        for event in closing(now, &streamed) {
            if tx.send(event_value(&event)).await.is_err() {
                return;
            }
        }
    }
}

/// A piece of the answer as an artifact update.
fn chunk(task_id: &str, context_id: &str, text: String, append: bool, last: bool) -> Event {
    Event::ArtifactUpdate(ArtifactUpdate {
        task_id: task_id.to_string(),
        context_id: context_id.to_string(),
        artifact: Artifact { artifact_id: ANSWER.into(), name: Some(ANSWER.into()), description: None, parts: vec![Part::text(text)] },
        append,
        last_chunk: last,
    })
}

/// What a stream opens with: the task as it is; and when a message that ran (`ran`) had
/// already ended before the stream's first look, what a stream that saw it end sends
/// (the answer, the final status), so a client reads the same events however fast the
/// executor was.
fn opening(first: Task, ran: bool) -> Vec<Event> {
    let ended = ran && first.status.state.terminal();
    let rest = if ended { closing(first.clone(), "") } else { Vec::new() };
    std::iter::once(Event::Task(first)).chain(rest).collect()
}

/// The task moved to `now`: the rest of the answer (after `streamed`, what was already
/// sent) as the last chunk when it completed, then its status.
fn closing(now: Task, streamed: &str) -> Vec<Event> {
    let mut events = Vec::new();
    if now.status.state == TaskState::Completed {
        if let Some(text) = now.artifacts.first().and_then(|a| a.parts.first()).and_then(|p| p.text.clone()) {
            let (piece, append) = match text.strip_prefix(streamed.trim()) {
                Some(rest) if !streamed.is_empty() => (rest.to_string(), true),
                _ => (text.clone(), false),
            };
            events.push(chunk(&now.id, &now.context_id, piece, append, true));
        }
    }
    events.push(Event::StatusUpdate(StatusUpdate { task_id: now.id, context_id: now.context_id, status: now.status }));
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_a2a::types::TaskStatus;

    fn task(state: TaskState, answer: Option<&str>) -> Task {
        Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state, message: None, timestamp: None },
            artifacts: answer
                .map(|a| vec![Artifact { artifact_id: ANSWER.into(), name: None, description: None, parts: vec![Part::text(a.to_string())] }])
                .unwrap_or_default(),
            history: Vec::new(),
            metadata: None,
        }
    }

    // The executor may finish before a stream first reads its task: the client still
    // gets the answer as an artifact and the final status, as when it saw the end.
    #[test]
    fn a_stream_whose_task_ended_before_it_looked_still_sends_the_answer_and_the_end() {
        let events = opening(task(TaskState::Completed, Some("HELLO")), true);
        let [Event::Task(_), Event::ArtifactUpdate(a), Event::StatusUpdate(s)] = events.as_slice() else { panic!("{events:?}") };
        assert_eq!((a.artifact.parts[0].text.as_deref(), a.append, a.last_chunk), (Some("HELLO"), false, true));
        assert_eq!(s.status.state, TaskState::Completed);

        // Still running, or refused before anything ran: the task alone.
        assert_eq!(opening(task(TaskState::Working, None), true).len(), 1);
        assert_eq!(opening(task(TaskState::Rejected, None), false).len(), 1);
    }

    #[test]
    fn the_last_chunk_is_what_was_not_streamed_yet() {
        let events = closing(task(TaskState::Completed, Some("HELLO THERE")), "HELLO");
        let Event::ArtifactUpdate(a) = &events[0] else { panic!("{events:?}") };
        assert_eq!((a.artifact.parts[0].text.as_deref(), a.append), (Some(" THERE"), true));
    }
}
