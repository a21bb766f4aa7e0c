//! A MAIL 1.3 swarm that Gatehouse's tests (and demos) run on loopback. It follows the
//! spec's openapi.yaml and the reference server's behaviour where the YAML is silent:
//!
//! - bearer tokens with roles (`user`, `admin`, `agent`); 401 without a token the route's
//!   roles accept, 400 for a malformed body, 500 when the task's body says `explode`;
//! - `POST /message` with `stream=true`: a scripted multi-agent task (supervisor, weather,
//!   math, a remote `forecast@<remote>` agent) streamed as `new_message` events with pings,
//!   ending in `broadcast_complete` and `task_complete`; a body with `fail` ends in a system
//!   `::task_error::`, one with `misroute` reports a `task_error` mid-stream (no `response`)
//!   and goes on, one with `stall` stops sending anything; a known `task_id` continues
//!   the task (multi-turn);
//! - [`reference`]: the real reference server (mail-swarms 1.3.6), for tests that must
//!   agree with it rather than with this crate;
//! - the interswarm hop is real when a remote swarm is configured: the wrapper is POSTed to
//!   its `/interswarm/forward` with the agent token, where it is validated.

pub mod reference;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// A remote swarm this one hops to.
#[derive(Debug, Clone)]
pub struct Remote {
    pub swarm: String,
    pub base_url: String,
    /// A token with role `agent` at the remote.
    pub agent_token: String,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub swarm: String,
    /// token → (id, role)
    pub tokens: HashMap<String, (String, String)>,
    /// Between two steps of the scripted task.
    pub step: Duration,
    /// Between two pings on a stream.
    pub ping: Duration,
    pub remote: Option<Remote>,
}

impl Config {
    /// A swarm named `swarm` with one user (`user-token`), one admin (`admin-token`) and one
    /// agent (`agent-token`).
    pub fn new(swarm: &str) -> Config {
        let tokens = [("user-token", "u-1", "user"), ("admin-token", "a-1", "admin"), ("agent-token", "swarm-peer", "agent")]
            .into_iter()
            .map(|(t, id, role)| (t.to_string(), (id.to_string(), role.to_string())))
            .collect();
        Config { swarm: swarm.into(), tokens, step: Duration::from_millis(60), ping: Duration::from_millis(150), remote: None }
    }
}

#[derive(Default)]
struct Shared {
    /// task_id → messages so far (the runtime's history, kept after completion).
    tasks: HashMap<String, Vec<Value>>,
    /// Interswarm wrappers received on /interswarm/forward and /back.
    received: Vec<Value>,
    registry: Vec<Value>,
}

#[derive(Clone)]
pub struct Swarm {
    cfg: Arc<Config>,
    started: Instant,
    shared: Arc<Mutex<Shared>>,
}

impl Swarm {
    pub fn new(cfg: Config) -> Swarm {
        let mut shared = Shared::default();
        if let Some(r) = &cfg.remote {
            shared.registry.push(json!({
                "swarm_name": r.swarm, "base_url": r.base_url, "version": "1.3", "is_active": true,
                "last_seen": now(), "swarm_description": "forecasts", "keywords": ["weather"], "latency": 0.012
            }));
        }
        Swarm { cfg: Arc::new(cfg), started: Instant::now(), shared: Arc::new(Mutex::new(shared)) }
    }

    /// The interswarm wrappers this swarm received, in order.
    pub fn received(&self) -> Vec<Value> {
        self.lock().received.clone()
    }

    /// The messages of a task so far.
    pub fn task(&self, task_id: &str) -> Vec<Value> {
        self.lock().tasks.get(task_id).cloned().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub fn router(swarm: Swarm) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/health", get(health))
        .route("/whoami", get(whoami))
        .route("/status", get(status))
        .route("/message", post(message))
        .route("/swarms", get(swarms))
        .route("/swarms/register", post(register))
        .route("/interswarm/message", post(interswarm_message))
        .route("/interswarm/forward", post(interswarm_forward))
        .route("/interswarm/back", post(interswarm_back))
        .with_state(swarm)
}

/// Serves until `shutdown` resolves.
pub async fn run(listener: tokio::net::TcpListener, swarm: Swarm, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
    axum::serve(listener, router(swarm)).with_graceful_shutdown(shutdown).await
}

/// Starts a swarm on a free loopback port in the current runtime; returns its base URL.
pub async fn spawn(swarm: Swarm) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(run(listener, swarm, std::future::pending()));
    url
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn detail(status: StatusCode, d: impl Into<String>) -> Response {
    (status, Json(json!({"detail": d.into()}))).into_response()
}

/// The caller's (id, role) if its bearer token is known and its role is one of `roles`.
// The error is the response to send: a test server's handler returns it at once.
#[allow(clippy::result_large_err)]
fn caller(s: &Swarm, headers: &axum::http::HeaderMap, roles: &[&str]) -> Result<(String, String), Response> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| detail(StatusCode::UNAUTHORIZED, "missing bearer token"))?;
    let (id, role) = s.cfg.tokens.get(token).cloned().ok_or_else(|| detail(StatusCode::UNAUTHORIZED, "invalid token"))?;
    if !roles.contains(&role.as_str()) {
        return Err(detail(StatusCode::UNAUTHORIZED, format!("role {role} may not call this endpoint")));
    }
    Ok((id, role))
}

async fn body_json(req: Request) -> Result<Value, Response> {
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 20).await.map_err(|e| detail(StatusCode::BAD_REQUEST, e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| detail(StatusCode::BAD_REQUEST, format!("error parsing request: {e}")))
}

async fn root(State(s): State<Swarm>) -> Json<Value> {
    Json(json!({"name": "mail", "version": "1.3", "swarm": s.cfg.swarm, "status": "running", "uptime": s.started.elapsed().as_secs_f64()}))
}

async fn health(State(s): State<Swarm>) -> Json<Value> {
    Json(json!({"status": "ok", "swarm_name": s.cfg.swarm, "timestamp": now()}))
}

async fn whoami(State(s): State<Swarm>, headers: axum::http::HeaderMap) -> Response {
    match caller(&s, &headers, &["user", "admin"]) {
        Ok((id, role)) => Json(json!({"id": id, "role": role})).into_response(),
        Err(r) => r,
    }
}

async fn status(State(s): State<Swarm>, headers: axum::http::HeaderMap) -> Response {
    if let Err(r) = caller(&s, &headers, &["user", "admin"]) {
        return r;
    }
    let running = !s.lock().tasks.is_empty();
    Json(json!({"swarm": {"name": s.cfg.swarm, "status": "ready"}, "active_users": 1, "user_mail_ready": true, "user_task_running": running})).into_response()
}

async fn swarms(State(s): State<Swarm>) -> Json<Value> {
    Json(json!({"swarms": s.lock().registry.clone()}))
}

async fn register(State(s): State<Swarm>, req: Request) -> Response {
    if let Err(r) = caller(&s, req.headers(), &["admin"]) {
        return r;
    }
    let v = match body_json(req).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (Some(name), Some(url)) = (v.get("name").and_then(Value::as_str), v.get("base_url").and_then(Value::as_str)) else {
        return detail(StatusCode::BAD_REQUEST, "name and base_url are required");
    };
    s.lock()
        .registry
        .push(json!({"swarm_name": name, "base_url": url, "version": "1.3", "is_active": true, "last_seen": now(), "swarm_description": "", "keywords": []}));
    Json(json!({"status": "success", "swarm_name": name})).into_response()
}

fn addr(kind: &str, name: &str) -> Value {
    json!({"address_type": kind, "address": name})
}

fn request(task: &str, from: Value, to: Value, subject: &str, body: &str) -> Value {
    json!({"id": uuid::Uuid::new_v4().to_string(), "timestamp": now(), "msg_type": "request",
        "message": {"task_id": task, "request_id": uuid::Uuid::new_v4().to_string(), "sender": from, "recipient": to, "subject": subject, "body": body,
            // As the reference sends agents' messages: off the spec's schema, which wants strings.
            "sender_swarm": null, "recipient_swarm": null}})
}

fn response(task: &str, from: Value, to: Value, subject: &str, body: &str) -> Value {
    let mut m = request(task, from, to, subject, body);
    m["msg_type"] = "response".into();
    m
}

fn multi(task: &str, kind: &str, from: Value, subject: &str, body: &str) -> Value {
    let id_key = if kind == "interrupt" { "interrupt_id" } else { "broadcast_id" };
    json!({"id": uuid::Uuid::new_v4().to_string(), "timestamp": now(), "msg_type": kind,
        "message": {"task_id": task, id_key: uuid::Uuid::new_v4().to_string(), "sender": from, "recipients": [addr("agent", "all")], "subject": subject, "body": body,
            "sender_swarm": null, "recipient_swarms": null}})
}

/// What the swarm does for one turn of a task, as (event name, data) pairs.
async fn script(s: &Swarm, task: &str, user: &str, subject: &str, body: &str, turn: usize) -> Vec<(String, Value)> {
    let sup = || addr("agent", "supervisor");
    let me = addr("user", user);
    let mut first = request(task, me.clone(), sup(), subject, body);
    first["message"]["sender_swarm"] = s.cfg.swarm.clone().into();
    first["message"]["recipient_swarm"] = s.cfg.swarm.clone().into();
    let mut msgs = vec![first];
    if turn > 0 {
        msgs.push(response(task, sup(), me.clone(), &format!("Re: {subject}"), "Following up on our earlier exchange."));
        msgs.push(multi(task, "broadcast_complete", sup(), "::task_complete::", &format!("Turn {}: done — {body}", turn + 1)));
    } else {
        msgs.push(request(task, sup(), addr("agent", "weather"), "Forecast", "What is the weather in Lyon tomorrow?"));
        msgs.push(response(task, addr("agent", "weather"), sup(), "Forecast", "Sunny, 24 °C."));
        msgs.push(request(task, sup(), addr("agent", "math"), "Convert", "24 °C in °F?"));
        msgs.push(response(task, addr("system", &s.cfg.swarm), addr("agent", "math"), "::tool_call_error::", "calculator timed out; retrying"));
        msgs.push(response(task, addr("agent", "math"), sup(), "Convert", "75.2 °F"));
        msgs.push(multi(task, "interrupt", sup(), "Stop", "weather: no need for the weekly outlook"));
        if let Some(r) = &s.cfg.remote {
            let remote_agent = format!("forecast@{}", r.swarm);
            let mut out =
                request(task, addr("agent", &format!("supervisor@{}", s.cfg.swarm)), addr("agent", &remote_agent), "Second opinion", "Lyon tomorrow?");
            out["message"]["sender_swarm"] = s.cfg.swarm.clone().into();
            out["message"]["recipient_swarm"] = r.swarm.clone().into();
            let hop = hop(s, r, task, &out, user).await;
            msgs.push(out);
            let mut back = response(task, addr("agent", &remote_agent), addr("agent", &format!("supervisor@{}", s.cfg.swarm)), "Second opinion", &hop);
            back["message"]["sender_swarm"] = r.swarm.clone().into();
            back["message"]["recipient_swarm"] = s.cfg.swarm.clone().into();
            msgs.push(back);
        }
        msgs.push(multi(task, "broadcast", sup(), "Status", "Collecting the answers."));
        if body.contains("fail") {
            msgs.push(multi(
                task,
                "broadcast_complete",
                addr("system", &s.cfg.swarm),
                "::task_error::",
                "the supervisor could not finish: the math agent kept failing",
            ));
        } else {
            msgs.push(multi(task, "broadcast_complete", sup(), "::task_complete::", "Lyon tomorrow: sunny, 24 °C (75.2 °F)."));
        }
    }
    let mut events: Vec<(String, Value)> = Vec::new();
    events.push(("action_call".into(), json!({"timestamp": now(), "description": "supervisor is planning", "task_id": task, "extra_data": {"tool": "plan"}})));
    for (i, m) in msgs.iter().enumerate() {
        if i == 2 && body.contains("misroute") {
            // The reference's mid-stream task_error: a description, no response; the task goes on.
            events.push(("task_error".into(), json!({"timestamp": now(), "description": format!("agent {} is the swarm name; message from supervisor cannot be delivered to it", s.cfg.swarm), "task_id": task, "extra_data": {}})));
        }
        events.push(("new_message".into(), json!({"timestamp": now(), "description": format!("sending message: {}", m["message"]["subject"]), "task_id": task, "extra_data": {"full_message": m}})));
    }
    let finish = msgs.last().map(|m| m["message"]["body"].as_str().unwrap_or_default().to_string()).unwrap_or_default();
    events.push(("task_complete".into(), json!({"timestamp": now(), "task_id": task, "response": finish})));
    s.lock().tasks.entry(task.to_string()).or_default().extend(msgs);
    events
}

/// The interswarm hop: the request wrapped and POSTed to the remote's /interswarm/forward.
async fn hop(s: &Swarm, r: &Remote, task: &str, out: &Value, user: &str) -> String {
    let owner = format!("user:{user}@{}", s.cfg.swarm);
    let wrapper = json!({
        "message_id": uuid::Uuid::new_v4().to_string(), "source_swarm": s.cfg.swarm, "target_swarm": r.swarm,
        "timestamp": now(), "payload": out["message"], "msg_type": "request",
        "task_owner": owner, "task_contributors": [owner, format!("swarm:{}@{}", s.cfg.swarm, r.swarm)],
        "metadata": {"expect_response": true}
    });
    let _ = task;
    let res =
        reqwest::Client::new().post(format!("{}/interswarm/forward", r.base_url)).bearer_auth(&r.agent_token).json(&json!({"message": wrapper})).send().await;
    match res {
        Ok(resp) if resp.status().is_success() => "Sunny as well, 23–25 °C.".into(),
        Ok(resp) => format!("the remote swarm answered HTTP {}", resp.status()),
        Err(e) => format!("the remote swarm is unreachable: {e}"),
    }
}

async fn message(State(s): State<Swarm>, req: Request) -> Response {
    let (id, _) = match caller(&s, req.headers(), &["user", "admin"]) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let v = match body_json(req).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    // The spec's text and the reference read `body`; the YAML names it `message`.
    let body = match v.get("body").or_else(|| v.get("message")) {
        Some(Value::String(b)) if !b.is_empty() => b.clone(),
        Some(Value::String(_)) | None => return detail(StatusCode::BAD_REQUEST, "no message provided"),
        Some(other) => return detail(StatusCode::BAD_REQUEST, format!("body must be a string, got {other}")),
    };
    if body.contains("explode") {
        return detail(StatusCode::INTERNAL_SERVER_ERROR, "error processing message: the supervisor crashed");
    }
    let subject = v.get("subject").and_then(Value::as_str).unwrap_or("New Message").to_string();
    let (task, turn) = match v.get("task_id").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        Some(t) => (t.to_string(), usize::from(s.lock().tasks.contains_key(t))),
        None => (uuid::Uuid::new_v4().to_string(), 0),
    };
    let events = script(&s, &task, &id, &subject, &body, turn).await;
    if !v.get("stream").and_then(Value::as_bool).unwrap_or(false) {
        let finish = events.last().map(|(_, d)| d["response"].clone()).unwrap_or_default();
        return Json(json!({"response": finish, "events": null})).into_response();
    }
    // Like the reference, a known task continues only when told `resume_from:
    // "user_response"`; otherwise the stream never ends.
    let stall = body.contains("stall") || (turn > 0 && v.get("resume_from").and_then(Value::as_str) != Some("user_response"));
    let (step, ping) = (s.cfg.step, s.cfg.ping);
    // A ping whenever `ping` has passed since the last one, but never two in a row, so
    // the task moves on however the step and ping intervals compare.
    let stream =
        futures_util::stream::unfold((events.into_iter().peekable(), Instant::now(), task, false), move |(mut it, mut last_ping, task, pinged)| async move {
            if stall {
                // Sends no event at all (only SSE keep-alive comments): the client's idle limit ends it.
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return None;
            }
            it.peek()?;
            tokio::time::sleep(step).await;
            if !pinged && last_ping.elapsed() >= ping {
                last_ping = Instant::now();
                let e = Event::default().event("ping").data(json!({"timestamp": now(), "task_id": task}).to_string());
                return Some((Ok::<_, Infallible>(e), (it, last_ping, task, true)));
            }
            let (name, data) = it.next()?;
            Some((Ok(Event::default().event(name).data(data.to_string())), (it, last_ping, task, false)))
        });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

async fn interswarm_message(State(s): State<Swarm>, req: Request) -> Response {
    let (id, _) = match caller(&s, req.headers(), &["user", "admin"]) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let v = match body_json(req).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if v.get("user_token").and_then(Value::as_str).is_none_or(str::is_empty) {
        return detail(StatusCode::BAD_REQUEST, "user_token is required");
    }
    let Some(body) = v.get("body").or_else(|| v.get("message")).and_then(Value::as_str) else {
        return detail(StatusCode::BAD_REQUEST, "body is required");
    };
    let targets: Vec<String> =
        v.get("targets").and_then(Value::as_array).map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect()).unwrap_or_default();
    if targets.is_empty() {
        return detail(StatusCode::BAD_REQUEST, "targets must name at least one agent@swarm");
    }
    let task = v.get("task_id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let subject = v.get("subject").and_then(Value::as_str).unwrap_or("Interswarm Message");
    let from = addr("user", &id);
    let msg = if v.get("msg_type").and_then(Value::as_str) == Some("broadcast") || targets.len() > 1 {
        let mut m = multi(&task, "broadcast", from, subject, body);
        m["message"]["recipients"] = targets.iter().map(|t| addr("agent", t)).collect();
        m["message"]["recipient_swarms"] = targets.iter().filter_map(|t| t.rsplit_once('@').map(|(_, sw)| Value::from(sw))).collect();
        m
    } else {
        let mut m = request(&task, from, addr("agent", &targets[0]), subject, body);
        if let Some((_, sw)) = targets[0].rsplit_once('@') {
            m["message"]["recipient_swarm"] = sw.into();
        }
        m
    };
    m_sender_swarm(&s, msg, &task)
}

fn m_sender_swarm(s: &Swarm, mut msg: Value, task: &str) -> Response {
    msg["message"]["sender_swarm"] = s.cfg.swarm.clone().into();
    s.lock().tasks.entry(task.to_string()).or_default().push(msg.clone());
    Json(json!({"response": msg, "events": null})).into_response()
}

async fn receive(s: Swarm, req: Request) -> Response {
    if let Err(r) = caller(&s, req.headers(), &["agent"]) {
        return r;
    }
    let v = match body_json(req).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(wrapper) = v.get("message") else {
        return detail(StatusCode::BAD_REQUEST, "message is required");
    };
    match gatehouse_mail::Interswarm::from_value(wrapper) {
        Ok(w) => {
            s.lock().received.push(wrapper.clone());
            Json(json!({"swarm": s.cfg.swarm, "status": "success", "task_id": w.payload.task_id, "local_runner": "forecast"})).into_response()
        }
        Err(e) => detail(StatusCode::BAD_REQUEST, format!("invalid interswarm message: {e}")),
    }
}

async fn interswarm_forward(State(s): State<Swarm>, req: Request) -> Response {
    receive(s, req).await
}

async fn interswarm_back(State(s): State<Swarm>, req: Request) -> Response {
    receive(s, req).await
}
