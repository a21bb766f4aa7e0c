//! The approvers' API, served beside the doors on the gate's HTTP listener (its Host and
//! Origin checks apply): a device joins with an invitation's code, then reads what waits
//! and decides, every request signed by its key (`approvers`).
//!
//! - `GET /approve`: the approval page a phone opens from an invitation (`ui/approve/`)
//! - `GET /approve/gate`: the gate's key
//! - `POST /approve/join` `{code, public_key, signature}` → the approver, named as invited
//! - `GET /approve/me`, `GET /approve/waiting`, `POST /approve/decide` `{target, digest,
//!   decision, lasting}`, `GET /approve/events` (a stream: `waiting` when what waits
//!   changed, at this node or another; `removed` when the device is), `POST
//!   /approve/witness` `{held}` (the audit checkpoint the device holds, checked against
//!   the log; the answer says whether the log extends it and gives the newest to hold):
//!   signed (`Gatehouse-Approver`, `Gatehouse-Date`, `Gatehouse-Nonce`, `Gatehouse-Signature`)
//!
//! Failures are `{code, message}` with the status the code means.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::approvers::{self, ApproverDecision, SignedRequest};
use crate::doors::Gate;
use crate::{Code, CommandError, Result};

/// Codes naming no open invitation that one client (an address; a reverse proxy is one)
/// may try per minute on a node.
const WRONG_CODES_PER_CLIENT: u32 = 20;
/// Tries per minute naming one open invitation (its device retrying, a typo'd key).
const TRIES_PER_INVITE: u32 = 10;
/// Clients and invitations counted at once; past it, a new one is refused for the minute.
const MAX_COUNTED: usize = 4096;
const MAX_BODY: usize = 64 * 1024;

/// What was counted per key this minute (at most [`MAX_COUNTED`] keys at once).
struct PerMinute<K> {
    minute: i64,
    counts: HashMap<K, u32>,
}

impl<K: std::hash::Hash + Eq> Default for PerMinute<K> {
    fn default() -> Self {
        PerMinute { minute: 0, counts: HashMap::new() }
    }
}

impl<K: std::hash::Hash + Eq> PerMinute<K> {
    /// Counts one more for `key` this minute; false when it is over `limit` (or a new key
    /// finds the table full).
    fn count(&mut self, key: K, limit: u32) -> bool {
        let minute = chrono::Utc::now().timestamp() / 60;
        if self.minute != minute {
            *self = PerMinute { minute, counts: HashMap::new() };
        }
        if self.counts.len() >= MAX_COUNTED && !self.counts.contains_key(&key) {
            return false;
        }
        let n = self.counts.entry(key).or_insert(0);
        *n = n.saturating_add(1);
        *n <= limit
    }
}

/// Joins counted this minute. Junk and wrong codes are counted against the client that
/// sent them, tries of a right code against its invitation: no flood of wrong codes,
/// from anywhere, uses up a valid code's tries. (Guessing is not what this stops: a code
/// has 60 bits and lives 15 minutes; docs/threat-model-team.md 22.)
#[derive(Default)]
struct JoinCounts {
    wrong_by_client: PerMinute<IpAddr>,
    by_invite: PerMinute<String>,
}

#[derive(Clone)]
struct Approve {
    gate: Arc<Gate>,
    joins: Arc<Mutex<JoinCounts>>,
    /// How often each device had the log checked against its checkpoint this minute (a
    /// check reads the whole log: at most [`WITNESS_PER_MINUTE`] per device).
    witnessed: Arc<Mutex<PerMinute<String>>>,
}

/// How often a minute one device may have the log checked against its checkpoint (a page
/// hands it in when it opens and when its live view comes back).
const WITNESS_PER_MINUTE: u32 = 4;

/// What the listener serves to browsers (`gatehouse_net::host_check::Allowed::with_pages`).
pub const PAGES: &[&str] = &["/approve"];

pub fn router(gate: Arc<Gate>) -> Router {
    let state = Approve { gate, joins: Arc::new(Mutex::new(JoinCounts::default())), witnessed: Arc::new(Mutex::new(PerMinute::default())) };
    Router::new()
        .route("/approve", get(|| page("text/html; charset=utf-8", include_str!("../../../ui/approve/index.html"))))
        .route("/approve/app.js", get(|| page("text/javascript; charset=utf-8", include_str!("../../../ui/approve/app.js"))))
        .route("/approve/app.css", get(|| page("text/css; charset=utf-8", include_str!("../../../ui/approve/app.css"))))
        .route("/approve/gate", get(gate_key))
        .route("/approve/join", post(join))
        .route("/approve/me", get(me))
        .route("/approve/waiting", get(waiting))
        .route("/approve/decide", post(decide))
        .route("/approve/events", get(events))
        .route("/approve/witness", post(witness))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

/// The page's files: nothing but its own scripts and styles, never in a frame, never
/// kept by a cache, and no address passed on when a link is followed.
async fn page(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (axum::http::header::CONTENT_TYPE, kind),
            (
                axum::http::header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            ),
            (axum::http::header::X_FRAME_OPTIONS, "DENY"),
            (axum::http::header::REFERRER_POLICY, "no-referrer"),
            (axum::http::header::CACHE_CONTROL, "no-store"),
            (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// The gate's key, which the page signs over and checks against the invitation's.
async fn gate_key(State(s): State<Approve>) -> Json<serde_json::Value> {
    Json(serde_json::json!({"gate_key": s.gate.public_key()}))
}

struct Failed(CommandError);

impl From<CommandError> for Failed {
    fn from(e: CommandError) -> Self {
        Failed(e)
    }
}

impl IntoResponse for Failed {
    fn into_response(self) -> Response {
        let status = match self.0.code {
            Code::Unauthorized => StatusCode::UNAUTHORIZED,
            Code::Gone | Code::NotFound => StatusCode::NOT_FOUND,
            Code::Changed | Code::AlreadyTrusted | Code::AlreadySent => StatusCode::CONFLICT,
            Code::NotAllowed => StatusCode::FORBIDDEN,
            Code::Invalid | Code::BadRequest => StatusCode::BAD_REQUEST,
            Code::TooLarge => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, Json(self.0)).into_response()
    }
}

type Answer<T> = std::result::Result<Json<T>, Failed>;

fn bad(e: impl std::fmt::Display) -> Failed {
    Failed(CommandError::new(Code::BadRequest, e.to_string()))
}

#[derive(serde::Deserialize)]
struct Join {
    code: String,
    public_key: String,
    signature: String,
}

fn too_many(what: &str) -> Failed {
    Failed(CommandError::new(Code::TooLarge, format!("too many tries to join {what} this minute: try again in a minute")))
}

async fn join(State(s): State<Approve>, client: Option<axum::Extension<ConnectInfo<SocketAddr>>>, body: Bytes) -> Answer<gatehouse_store::Approver> {
    let client = client.map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0 .0.ip());
    // Junk is turned away by its shape alone, counted against its client.
    let parsed = serde_json::from_slice::<Join>(&body).map_err(bad).and_then(|j| Ok(approvers::JoinRequest::read(&j.code, &j.public_key, &j.signature)?));
    let req = match parsed {
        Ok(r) => r,
        Err(e) => {
            let mut joins = s.joins.lock().unwrap_or_else(|p| p.into_inner());
            return Err(if joins.wrong_by_client.count(client, WRONG_CODES_PER_CLIENT) { e } else { too_many("from here") });
        }
    };
    let (gate, hash) = (s.gate.clone(), req.code_sha256.clone());
    let open = crate::blocking(move || Ok(gate.store().approver_invite_open(&hash, crate::doors::gate::clock::now().timestamp_millis())?)).await?;
    {
        let mut joins = s.joins.lock().unwrap_or_else(|p| p.into_inner());
        let within =
            if open { joins.by_invite.count(req.code_sha256.clone(), TRIES_PER_INVITE) } else { joins.wrong_by_client.count(client, WRONG_CODES_PER_CLIENT) };
        if !within {
            return Err(too_many(if open { "with this code" } else { "from here" }));
        }
    }
    let gate = s.gate.clone();
    let a = crate::blocking(move || approvers::join(gate.store(), gate.public_key(), &req, crate::doors::gate::clock::now())).await?;
    Ok(Json(a))
}

/// The approver that signed this request (see [`approvers::authenticate`]).
async fn signed(s: &Approve, headers: &HeaderMap, method: &Method, uri: &Uri, body: &Bytes) -> Result<gatehouse_store::Approver> {
    Ok(signed_with_proof(s, headers, method, uri, body).await?.0)
}

/// [`signed`], with the request as signed (kept with a vote).
async fn signed_with_proof(
    s: &Approve,
    headers: &HeaderMap,
    method: &Method,
    uri: &Uri,
    body: &Bytes,
) -> Result<(gatehouse_store::Approver, approvers::VoteProof)> {
    let header = |name: &str| -> Result<String> {
        let v =
            headers.get(name).ok_or_else(|| CommandError::new(Code::Unauthorized, format!("a request to the approvers' API is signed: {name} is missing")))?;
        Ok(v.to_str().map_err(|_| CommandError::new(Code::Unauthorized, format!("{name} is not text")))?.to_string())
    };
    let (approver, date, nonce, signature) =
        (header("gatehouse-approver")?, header("gatehouse-date")?, header("gatehouse-nonce")?, header("gatehouse-signature")?);
    let (gate, method, path, body) = (s.gate.clone(), method.to_string(), uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(), body.clone());
    crate::blocking(move || {
        let req = SignedRequest { approver: &approver, date: &date, nonce: &nonce, signature: &signature, method: &method, path: &path, body: &body };
        Ok((approvers::authenticate(gate.store(), gate.public_key(), &req, crate::doors::gate::clock::now())?, approvers::VoteProof::of(&req)))
    })
    .await
}

async fn me(State(s): State<Approve>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Answer<gatehouse_store::Approver> {
    Ok(Json(signed(&s, &headers, &method, &uri, &body).await?))
}

async fn waiting(State(s): State<Approve>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Answer<Vec<approvers::ApproverItem>> {
    let me = signed(&s, &headers, &method, &uri, &body).await?;
    let gate = s.gate.clone();
    Ok(Json(crate::blocking(move || approvers::waiting(gate.store(), gate.public_key(), &me.id, crate::doors::gate::clock::now())).await?))
}

async fn decide(State(s): State<Approve>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Answer<crate::consent::DecisionOutcome> {
    let (approver, proof) = signed_with_proof(&s, &headers, &method, &uri, &body).await?;
    let d: ApproverDecision = serde_json::from_slice(&body).map_err(bad)?;
    Ok(Json(approvers::decide(s.gate.clone(), approver, d, proof).await?))
}

#[derive(serde::Deserialize)]
struct Held {
    held: Option<gatehouse_store::AuditCheckpoint>,
}

/// The device hands in the checkpoint it holds (see [`crate::device_witness::check`]); a log
/// that does not extend it is shown on `/ready` (`problems.audit`).
async fn witness(State(s): State<Approve>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Answer<crate::device_witness::Witnessed> {
    let device = signed(&s, &headers, &method, &uri, &body).await?;
    let held: Held = serde_json::from_slice(&body).map_err(bad)?;
    if !s.witnessed.lock().unwrap_or_else(|p| p.into_inner()).count(device.id.clone(), WITNESS_PER_MINUTE) {
        return Err(Failed(CommandError::new(Code::TooLarge, "this device's checkpoint was checked often this minute: hand it in again in a minute")));
    }
    let gate = s.gate.clone();
    let answer = crate::blocking(move || {
        let answer = crate::device_witness::check(gate.store(), gate.public_key(), &device.id, held.held.as_ref())?;
        if let (false, Some(problem)) = (answer.intact, &answer.problem) {
            tracing::warn!(device = %device.name, %problem, "the audit log does not extend the checkpoint an approver device holds");
            gate.set_problem("audit", Some(format!("{problem} (the checkpoint approver device {} holds)", device.name)));
        }
        Ok(answer)
    })
    .await?;
    Ok(Json(answer))
}

/// How often an open live view notes its device is looking.
const LOOKING_EVERY: std::time::Duration = std::time::Duration::from_secs(20);

/// The device's live view: `waiting` whenever what waits changed (it reads the list
/// again), `removed` (and the end) once the device is removed. Opening it says the device
/// is looking (the others' prompts show it); a comment every 20 s says it still is.
async fn events(State(s): State<Approve>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    use axum::response::sse::{Event, Sse};
    let approver = match signed(&s, &headers, &method, &uri, &body).await {
        Ok(a) => a,
        Err(e) => return Failed(e).into_response(),
    };
    let changes = crate::waiting::follow(s.gate.store());
    // This device is looking: the others' prompts say so (and are told to read again).
    let (store, id) = (s.gate.store().clone(), approver.id.clone());
    let _ = tokio::task::spawn_blocking(move || {
        let _ = store.approver_seen(&id, &crate::now());
        store.waiting_changed();
    })
    .await;
    #[derive(Clone, Copy, PartialEq)]
    enum Phase {
        First,
        Following,
        Done,
    }
    let stream = futures_util::stream::unfold((changes, s.gate.clone(), approver.id, Phase::First), |(mut changes, gate, id, phase)| async move {
        match phase {
            Phase::Done => return None,
            Phase::First => {}
            Phase::Following => {
                tokio::select! {
                    more = changes.next() => if !more {
                        return None;
                    },
                    // Still looking: noted well within LOOKING_SECONDS, and a comment keeps
                    // the stream open through proxies.
                    () = tokio::time::sleep(LOOKING_EVERY) => {
                        let (store, who) = (gate.store().clone(), id.clone());
                        let _ = tokio::task::spawn_blocking(move || store.approver_seen(&who, &crate::now())).await;
                        return Some((Ok(Event::default().comment("looking")), (changes, gate, id, Phase::Following)));
                    }
                }
            }
        }
        let (store, who) = (gate.store().clone(), id.clone());
        let removed = matches!(tokio::task::spawn_blocking(move || store.approver(&who)).await, Ok(Ok(None)));
        let (event, next) = if removed {
            (Event::default().event("removed").data("this device was removed from the gate"), Phase::Done)
        } else {
            (Event::default().event("waiting").data("what waits changed"), Phase::Following)
        };
        Some((Ok::<_, std::convert::Infallible>(event), (changes, gate, id, next)))
    });
    Sse::new(stream).into_response()
}
