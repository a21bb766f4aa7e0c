//! Remote MCP servers the user added by address, served to their AI app on the inbox at
//! [`PATH`] (Streamable HTTP): Gatehouse is the server to the app and the client to the
//! remote server, with the relay between (its calls, lists and requests judged at the gate
//! as any wrapped server's). The user's credentials for the remote server stay with the
//! gate (the composition reads them from the keychain, [`Remotes`]); the app proves it is
//! the user's with the token Gatehouse gave when the server was added.
//!
//! A session begins with the app's `initialize` (answered with `Mcp-Session-Id`); each POST
//! is one message (a request is answered with its response as JSON; a notification or a
//! response with 202); a GET opens the stream of what the remote server says unasked; a
//! DELETE ends the session. Bounded: [`MAX_SESSIONS`] sessions, [`MAX_WAITING`] requests
//! waiting per session, a body at most [`signed::MAX_BODY`], [`QUEUED`] messages queued for
//! the app's stream (more are dropped while it does not read).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures_util::stream::StreamExt as _;
use gatehouse_mcp::message::{peek, Id, Kind};
use gatehouse_mcp::tools::Pin;
use gatehouse_mcp::MAX_MESSAGE;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::answered::Summary;
use crate::at_gate::McpDoor;
use crate::frame::{Line, Lines};
use crate::relay::{self, Called, Keeper, Verdict};
use crate::signed::{self, Answered, Answers, Asked, Listed, ServerAsks};

/// Where the app reaches a server the user added (`{name}`: what they called it).
pub const PATH: &str = "/mcp/v1/servers/{name}";
/// Sessions open at once, over every served server.
pub const MAX_SESSIONS: usize = 32;
/// Requests of the app's waiting for their answers at once, per session.
pub const MAX_WAITING: usize = 32;
/// What the remote server says unasked, queued for the app's stream.
pub const QUEUED: usize = 64;
/// How long a request may wait for its answer (a call may wait for the user).
const ANSWER_WITHIN: Duration = Duration::from_secs(16 * 60);
const SESSION: &str = "mcp-session-id";
/// A session the app has sent nothing for this long may be closed to make room.
const IDLE: Duration = Duration::from_secs(30 * 60);

/// A server the user added by address.
pub struct Remote {
    pub url: String,
    /// SHA-256 (hex) of the token the app presents (`Authorization: Bearer …`).
    pub token_sha256: String,
}

/// The servers the user added, as the composition keeps them (its settings, the keychain).
pub trait Remotes: Send + Sync + 'static {
    /// Read at every request of the app's.
    fn remote(&self, name: &str) -> Option<Remote>;
    /// The headers every request to the server carries (the user's credential for it):
    /// read once, when a session begins (the keychain is not asked at every message).
    fn credential(&self, name: &str) -> Result<reqwest::header::HeaderMap, String>;
}

/// The key a served server is known by at the gate: its address, hashed (what the user
/// added is that address; another address under the same name is another server).
pub fn address_key(url: &str) -> String {
    hex::encode(Sha256::digest(url.as_bytes()))
}

struct Session {
    name: String,
    to_relay: mpsc::Sender<Vec<u8>>,
    waiting: Mutex<HashMap<Id, oneshot::Sender<Vec<u8>>>>,
    /// The app's stream of what the server says unasked, while one is open.
    stream: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// Its relay and the tasks feeding it: they go when the session does.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// When the app last sent it something.
    last: Mutex<std::time::Instant>,
}

impl Session {
    /// Whether it can be closed to make room: its relay ended (the server went), or the app
    /// has sent nothing for [`IDLE`].
    fn spent(&self) -> bool {
        let ended = self.tasks.lock().unwrap_or_else(|p| p.into_inner()).first().is_some_and(|t| t.is_finished());
        ended || self.last.lock().unwrap_or_else(|p| p.into_inner()).elapsed() > IDLE
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for t in self.tasks.get_mut().unwrap_or_else(|p| p.into_inner()).iter() {
            t.abort();
        }
    }
}

/// The endpoint's state.
pub struct Served {
    door: Arc<McpDoor>,
    remotes: Arc<dyn Remotes>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Served {
    pub fn new(door: Arc<McpDoor>, remotes: Arc<dyn Remotes>) -> Arc<Served> {
        Arc::new(Served { door, remotes, sessions: Mutex::new(HashMap::new()) })
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new session with the remote server `name`, its relay running.
    fn open(&self, name: &str, remote: &Remote) -> Result<(String, Arc<Session>), String> {
        {
            // Room is made from sessions whose server went or whose app went quiet (an app
            // that quits without ending its session leaves one behind).
            let mut open = self.sessions();
            if open.len() >= MAX_SESSIONS {
                open.retain(|_, s| !s.spent());
            }
            if open.len() >= MAX_SESSIONS {
                return Err(format!("{MAX_SESSIONS} MCP sessions are open; close one first"));
            }
        }
        let headers = self.remotes.credential(name)?;
        let upstream = crate::upstream::connect(&remote.url, headers)?;
        let (app_side, relay_side) = tokio::io::duplex(1 << 16);
        let (from_app, to_app) = tokio::io::split(relay_side);
        let (from_upstream, to_upstream) = tokio::io::split(upstream);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let keeper = InGate { door: self.door.clone(), name: name.to_string(), public: address_key(&remote.url), session: id.clone() };
        let relay = tokio::spawn(async move {
            let _ = relay::run(BufReader::new(from_app), to_app, BufReader::new(from_upstream), to_upstream, keeper).await;
        });
        let (ours_read, mut ours_write) = tokio::io::split(app_side);
        let (to_relay, mut lines_in) = mpsc::channel::<Vec<u8>>(QUEUED);
        let writer = tokio::spawn(async move {
            while let Some(mut line) = lines_in.recv().await {
                line.push(b'\n');
                if ours_write.write_all(&line).await.is_err() {
                    return;
                }
            }
        });
        let session = Arc::new(Session {
            name: name.to_string(),
            to_relay,
            waiting: Mutex::new(HashMap::new()),
            stream: Mutex::new(None),
            tasks: Mutex::new(vec![relay, writer]),
            last: Mutex::new(std::time::Instant::now()),
        });
        // What the relay hands the app: answers to their waiting requests, the rest to the
        // app's stream (or dropped while none is open).
        let reader = {
            let session = Arc::downgrade(&session);
            tokio::spawn(async move {
                let mut lines = Lines::new(BufReader::new(ours_read), MAX_MESSAGE);
                while let Ok(Some(Line::Message(m))) = lines.next().await {
                    let Some(s) = session.upgrade() else { return };
                    let bytes = m.into_vec();
                    match peek(&bytes) {
                        Ok(Kind::Response { id, .. }) => {
                            if let Some(w) = s.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
                                let _ = w.send(bytes);
                            }
                        }
                        _ => {
                            let stream = s.stream.lock().unwrap_or_else(|p| p.into_inner()).clone();
                            if let Some(out) = stream {
                                let _ = out.try_send(bytes);
                            }
                        }
                    }
                }
            })
        };
        session.tasks.lock().unwrap_or_else(|p| p.into_inner()).push(reader);
        self.sessions().insert(id.clone(), session.clone());
        Ok((id, session))
    }
}

/// Judges a served server's calls, lists and requests at the gate, in this process.
struct InGate {
    door: Arc<McpDoor>,
    name: String,
    public: String,
    session: String,
}

impl Keeper for InGate {
    async fn call(&self, call: &gatehouse_mcp::call::ToolCall) -> Called {
        let arguments = call.arguments.to_serde();
        let size = arguments.to_string().len() as u64;
        let asked = Asked { server: self.name.clone(), session: self.session.clone(), tool: call.name.clone(), arguments, description: None };
        let ruling = self.door.ask(&self.public, asked, size).await;
        let on_disk: crate::relay::OnDisk = Box::pin(async move { ruling.on_disk.done().await.map_err(|e| e.to_string()) });
        ruling.decided.called(Some(on_disk))
    }

    async fn answered(&self, step: String, answer: Summary) {
        self.door.answered(&self.public, Answers { server: self.name.clone(), answers: vec![Answered::new(step, answer)] }).await;
    }

    async fn listed(&self, tools: &[Pin]) -> Vec<String> {
        let listed = Listed { server: self.name.clone(), session: self.session.clone(), tools: tools.to_vec() };
        self.door.listed(&self.public, listed, 0).await.withhold
    }

    async fn server_asks(&self, method: &str, message: &[u8]) -> Verdict {
        let params = serde_json::from_slice::<serde_json::Value>(message).ok().and_then(|m| m.get("params").cloned()).unwrap_or_default();
        let asked = ServerAsks { server: self.name.clone(), session: self.session.clone(), method: method.to_string(), params };
        self.door.server_asks(&self.public, asked, 0).await.for_request()
    }
}

/// `POST`, `GET` and `DELETE` at [`PATH`].
pub fn router(served: Arc<Served>) -> Router {
    Router::new().route(PATH, post(message).get(stream).delete(end)).with_state(served)
}

fn refused(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": message}}).to_string())
        .into_response()
}

/// The server `name` if the request carries the app's token for it.
fn authorized(served: &Served, name: &str, headers: &HeaderMap) -> Result<Remote, Box<Response>> {
    let remote =
        served.remotes.remote(name).ok_or_else(|| Box::new(refused(StatusCode::NOT_FOUND, &format!("no MCP server {name:?} was added to Gatehouse"))))?;
    let token = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default();
    let presented = hex::encode(Sha256::digest(token.as_bytes()));
    // Compared in full whatever differs first: the time says nothing of the token.
    let same = presented.len() == remote.token_sha256.len() && presented.bytes().zip(remote.token_sha256.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
    match same && !token.is_empty() {
        true => Ok(remote),
        false => Err(Box::new(refused(StatusCode::UNAUTHORIZED, "the token Gatehouse gave for this server is missing or wrong (Authorization: Bearer …)"))),
    }
}

fn session_of(served: &Served, name: &str, headers: &HeaderMap) -> Option<Arc<Session>> {
    let id = headers.get(SESSION).and_then(|v| v.to_str().ok())?;
    served.sessions().get(id).filter(|s| s.name == name).cloned()
}

async fn message(State(served): State<Arc<Served>>, Path(name): Path<String>, req: axum::extract::Request) -> Response {
    let headers = req.headers().clone();
    let remote = match authorized(&served, &name, &headers) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let body = match gatehouse_net::body::read(req.into_body(), declared, signed::MAX_BODY).await {
        Ok(b) => b.bytes.to_vec(),
        Err(_) => return refused(StatusCode::PAYLOAD_TOO_LARGE, &format!("a message is taken up to {} bytes, in time", signed::MAX_BODY)),
    };
    let kind = match peek(&body) {
        Ok(k) => k,
        Err(e) => return refused(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let (id, session, new) = match (session_of(&served, &name, &headers), &kind) {
        (Some(s), _) => (headers.get(SESSION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string(), s, false),
        (None, Kind::Request { method, .. }) if method == "initialize" && !headers.contains_key(SESSION) => match served.open(&name, &remote) {
            Ok((id, s)) => (id, s, true),
            Err(e) => return refused(StatusCode::SERVICE_UNAVAILABLE, &e),
        },
        // A session that ended (or never was): the app begins again with initialize.
        (None, _) => return refused(StatusCode::NOT_FOUND, "no such session: begin with initialize"),
    };
    *session.last.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
    let Kind::Request { id: request, .. } = kind else {
        let _ = session.to_relay.send(body).await;
        return StatusCode::ACCEPTED.into_response();
    };
    let answer = {
        let mut waiting = session.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if waiting.len() >= MAX_WAITING || waiting.contains_key(&request) {
            return refused(StatusCode::TOO_MANY_REQUESTS, &format!("at most {MAX_WAITING} requests wait at once, each under its own id"));
        }
        let (tx, rx) = oneshot::channel();
        waiting.insert(request.clone(), tx);
        rx
    };
    if session.to_relay.send(body).await.is_err() {
        return refused(StatusCode::BAD_GATEWAY, "the session with the server ended");
    }
    match tokio::time::timeout(ANSWER_WITHIN, answer).await {
        Ok(Ok(bytes)) => {
            let mut r = ([(header::CONTENT_TYPE, "application/json")], bytes).into_response();
            if new {
                if let Ok(v) = id.parse() {
                    r.headers_mut().insert(SESSION, v);
                }
            }
            r
        }
        _ => {
            session.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&request);
            if new {
                served.sessions().remove(&id);
            }
            refused(StatusCode::GATEWAY_TIMEOUT, "the server did not answer in time")
        }
    }
}

async fn stream(State(served): State<Arc<Served>>, Path(name): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = authorized(&served, &name, &headers) {
        return *r;
    }
    let Some(session) = session_of(&served, &name, &headers) else { return refused(StatusCode::NOT_FOUND, "no such session") };
    let (tx, rx) = mpsc::channel::<Vec<u8>>(QUEUED);
    *session.stream.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
    let events = tokio_stream_of(rx).map(|bytes| Ok::<Event, Infallible>(Event::default().event("message").data(String::from_utf8_lossy(&bytes))));
    Sse::new(events).keep_alive(axum::response::sse::KeepAlive::default()).into_response()
}

fn tokio_stream_of(mut rx: mpsc::Receiver<Vec<u8>>) -> impl futures_util::Stream<Item = Vec<u8>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn end(State(served): State<Arc<Served>>, Path(name): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = authorized(&served, &name, &headers) {
        return *r;
    }
    let id = headers.get(SESSION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    match served.sessions().remove(&id) {
        Some(_) => StatusCode::OK.into_response(),
        None => refused(StatusCode::NOT_FOUND, "no such session"),
    }
}
