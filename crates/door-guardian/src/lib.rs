//! The ASOP guardian at `POST /asop/v1` on the loopback inbox: the user's own agents ask it
//! before they act, and it answers allow / deny / modify from the user's rules — or asks
//! the user and holds the HTTP request until they answer or the agent's timeout passes.
//!
//! Agents are registered through the trust registry: an unknown agent's first step knocks
//! (key `asop:<agent id>`, scope `asop`) and is refused with -32001 until the user lets
//! it in from "Waiting for you".

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

mod at_gate;
mod ruled;

pub use ruled::ByRule;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use gatehouse_asop::jsonrpc::{self, RpcError};
use gatehouse_asop::rules::{Action, Rule};
use gatehouse_asop::{redact, schema, Step, METHODS};
use gatehouse_store::asop::{AsopRuleRow, AsopStepRow};
use gatehouse_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::{broadcast, oneshot};

pub const PATH: &str = "/asop/v1";
/// The trust-registry scope of a registered agent.
pub const SCOPE: &str = "asop";
/// This door's name, where it records what knocked at it.
pub const DOOR: &str = "guardian";
/// How long an undecided step waits for the user when its agent set no timeout (ping).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Requests larger than this are refused (-32600).
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Requests in one batch: a larger batch is refused whole (-32600).
pub const MAX_BATCH: usize = 64;
/// Steps waiting for the user at once, in all and per agent; past that a step is refused
/// (-32603) instead of queued, so no agent can bury the user's queue.
pub const MAX_WAITING: usize = 64;
pub const MAX_WAITING_PER_AGENT: usize = 8;
/// The longest an agent may ask the guardian to hold a step for the user.
pub const MAX_ASK_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How the agent ids of the MCP servers the gate guards begin (`mcp:files`): they are let
/// in at the MCP door, by their keys; an ASOP agent cannot take one of their names.
pub const OTHER_DOORS_AGENTS: &str = "mcp:";

/// The trust-registry key of an agent.
pub fn agent_key(agent_id: &str) -> String {
    gatehouse_store::sender_key(&format!("asop:{agent_id}"))
}

/// The gate's clock, as every door reads it: a grant's end and a rule's are decided by one
/// "now".
fn now() -> String {
    gatehouse_gate::clock::now_string()
}

/// What the user answered to a step the guardian asked about.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UserAnswer {
    /// allow, deny or modify
    pub decision: Action,
    /// Make the answer a rule for this agent and tool (or method).
    #[serde(default)]
    pub always: bool,
    /// For modify: the pattern to redact.
    #[serde(default)]
    pub redact: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    /// With `always`: how long the rule lasts (for good when none).
    #[serde(default)]
    pub lasting: Option<gatehouse_gate::consent::Lasting>,
}

#[derive(Debug, thiserror::Error)]
pub enum GuardianError {
    #[error("this step is no longer waiting (answered, or its agent stopped waiting)")]
    Gone,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl GuardianError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            GuardianError::Gone => gatehouse_code::Code::Gone,
            GuardianError::Invalid(_) => gatehouse_code::Code::Invalid,
            GuardianError::Store(_) => gatehouse_code::Code::Store,
        }
    }
}

/// What the window is told.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GuardianEvent {
    /// A step waits for the user.
    Ask { row: i64, summary: String, agent: Option<String>, timeout_ms: u64 },
    /// A step was decided (by a rule, the user, or a timeout).
    Decided { row: i64, decision: String },
}

pub struct Guardian {
    store: Arc<Store>,
    /// Where "the user is asked" is announced (the window refreshes, a notification shows).
    inbox: std::sync::Weak<gatehouse_gate::state::Gate>,
    /// Steps waiting for the user: their agent and where the answer goes.
    waiting: Mutex<HashMap<i64, (String, oneshot::Sender<UserAnswer>)>>,
    default_timeout: Duration,
    pub events: broadcast::Sender<GuardianEvent>,
}

/// A guardian that stops (the inbox paused or stopped) closes the steps it held: their
/// agents' requests end with it, and nothing is left waiting that no one can answer.
impl Drop for Guardian {
    fn drop(&mut self) {
        let held: Vec<i64> = self.waiting.get_mut().unwrap_or_else(|p| p.into_inner()).keys().copied().collect();
        for row in held {
            if let Err(e) = self.store.asop_step_decide(row, "error", Some("The guardian stopped before the user answered"), None, "abandoned", &now()) {
                tracing::error!(error = %e, row, "could not close a step left waiting");
            }
        }
    }
}

impl Guardian {
    /// A guardian for `inbox`'s store; steps a previous guardian left waiting are closed.
    pub fn new(inbox: &Arc<gatehouse_gate::state::Gate>, default_timeout: Duration) -> Arc<Guardian> {
        let store = inbox.store().clone();
        if let Err(e) = store.asop_abandon_pending(&now()) {
            tracing::error!(error = %e, "could not close steps left waiting");
        }
        Arc::new(Guardian { store, inbox: Arc::downgrade(inbox), waiting: Mutex::new(HashMap::new()), default_timeout, events: broadcast::channel(64).0 })
    }

    /// The store its steps and rules are kept in.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Keeps what answered steps of `agent_id` that went on (told by the door that
    /// relayed them, by step id), and tells the window: how many were such steps.
    pub async fn answered(self: &Arc<Self>, agent_id: &str, answers: Vec<(String, Value)>) -> usize {
        let (me, agent) = (self.clone(), agent_id.to_string());
        match tokio::task::spawn_blocking(move || me.store.asop_steps_answered(&agent, &answers)).await {
            Ok(Ok(rows)) => {
                if let Some(row) = rows.last() {
                    self.announce(*row, Some(agent_id.to_string()), false);
                }
                rows.len()
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "could not keep what answered an agent's steps");
                0
            }
            Err(_) => 0,
        }
    }

    fn announce(&self, row: i64, agent: Option<String>, needs_user: bool) {
        if let Some(i) = self.inbox.upgrade() {
            i.emit_event(gatehouse_gate::state::ArrivalEvent {
                receipt_id: format!("asop-step:{row}"),
                status: gatehouse_gate::state::Status::Accepted,
                code: None,
                sender: agent,
                scope: Some(SCOPE.into()),
                transport: "asop".into(),
                needs_consent: needs_user,
                key_change: false,
            });
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<i64, (String, oneshot::Sender<UserAnswer>)>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why one more step of `agent` may not wait for the user, if it may not.
    fn queue_full(&self, agent: &str) -> Option<String> {
        let w = self.waiting();
        let mine = w.values().filter(|(a, _)| a == agent).count();
        if mine >= MAX_WAITING_PER_AGENT {
            Some(format!("Agent {agent} already has {mine} steps waiting for the user; wait for their answers"))
        } else if w.len() >= MAX_WAITING {
            Some(format!("{} steps are already waiting for the user; try again later", w.len()))
        } else {
            None
        }
    }

    /// Steps waiting for the user right now.
    pub fn pending(&self) -> Result<Vec<AsopStepRow>, StoreError> {
        let live: Vec<i64> = self.waiting().keys().copied().collect();
        Ok(self.store.asop_pending()?.into_iter().filter(|s| live.contains(&s.row)).collect())
    }

    /// The user's answer to a waiting step; with `always`, it becomes a rule.
    pub fn answer(&self, row: i64, answer: UserAnswer) -> Result<(), GuardianError> {
        if answer.decision == Action::Ask {
            return Err(GuardianError::Invalid("answer allow, deny or modify".into()));
        }
        if answer.decision == Action::Modify {
            let p = answer.redact.as_deref().filter(|p| !p.is_empty()).ok_or_else(|| GuardianError::Invalid("say what to redact (a pattern)".into()))?;
            regex::Regex::new(p).map_err(|e| GuardianError::Invalid(format!("not a pattern: {e}")))?;
        }
        if let Some(l) = &answer.lasting {
            l.end(gatehouse_gate::clock::now()).map_err(|e| GuardianError::Invalid(e.to_string()))?;
        }
        let (_, tx) = self.waiting().remove(&row).ok_or(GuardianError::Gone)?;
        tx.send(answer).map_err(|_| GuardianError::Gone)
    }

    /// The rules in force: one made "for an hour" no longer decides once the hour is over.
    fn rules(&self) -> Result<Vec<Rule>, StoreError> {
        let now = gatehouse_gate::clock::now();
        Ok(self
            .store
            .asop_rules()?
            .into_iter()
            .filter(|r| r.until.as_deref().is_none_or(|u| gatehouse_store::grant_lasts(u, now)))
            .filter_map(rule_of)
            .collect())
    }

    /// Answers one HTTP body: a request, a batch, or garbage. None: nothing to send (only
    /// notifications).
    pub async fn call(self: &Arc<Self>, body: &[u8]) -> Option<Value> {
        let v: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return Some(jsonrpc::failure(&Value::Null, &RpcError::new(jsonrpc::PARSE_ERROR, format!("Invalid JSON payload: {e}")))),
        };
        match v {
            Value::Array(items) if items.is_empty() => {
                Some(jsonrpc::failure(&Value::Null, &RpcError::new(jsonrpc::INVALID_REQUEST, "Invalid JSON-RPC Request: an empty batch")))
            }
            Value::Array(items) if items.len() > MAX_BATCH => Some(jsonrpc::failure(
                &Value::Null,
                &RpcError::new(jsonrpc::INVALID_REQUEST, format!("Invalid JSON-RPC Request: a batch of {} requests; at most {MAX_BATCH}", items.len())),
            )),
            Value::Array(items) => {
                // Each element on its own task: one waiting for the user does not hold up
                // the others' answers.
                let handles: Vec<_> = items
                    .into_iter()
                    .map(|i| {
                        tokio::spawn({
                            let g = self.clone();
                            async move { g.one(i).await }
                        })
                    })
                    .collect();
                let mut out = Vec::new();
                for h in handles {
                    match h.await {
                        Ok(Some(r)) => out.push(r),
                        Ok(None) => {}
                        Err(e) => out.push(jsonrpc::failure(&Value::Null, &internal(e))),
                    }
                }
                (!out.is_empty()).then_some(Value::Array(out))
            }
            other => self.one(other).await,
        }
    }

    async fn one(self: &Arc<Self>, v: Value) -> Option<Value> {
        let req = match jsonrpc::read(&v) {
            Ok(r) => r,
            Err((id, e)) => return Some(jsonrpc::failure(&id, &e)),
        };
        let id = req.id.clone();
        let answer = self.handle(req).await;
        let id = id?; // a notification: no response
        Some(match answer {
            Ok(result) => jsonrpc::success(&id, result),
            Err(e) => jsonrpc::failure(&id, &e),
        })
    }

    async fn handle(self: &Arc<Self>, req: jsonrpc::Request) -> Result<Value, RpcError> {
        if !METHODS.contains(&req.method.as_str()) {
            return Err(RpcError::new(jsonrpc::METHOD_NOT_FOUND, format!("Method not found: {}", req.method)));
        }
        // A notification (no id) is allowed by JSON-RPC though the schema wants an id: it is
        // checked as if it had one, decided and recorded, and answered with nothing.
        if req.id.is_none() {
            let mut with_id = req.raw.clone();
            with_id["id"] = "notification".into();
            schema::check(&req.method, &with_id)?;
        } else {
            schema::check(&req.method, &req.raw)?;
        }
        if req.method == "ping" {
            // ASOP's ping names no agent; an agent may say which it is in metadata. Only a
            // registered agent's ping is remembered, and its timeout is its own (bounded):
            // an anonymous ping changes nothing.
            let timeout = req.params.get("timeout").and_then(Value::as_u64).map(|t| t.min(MAX_ASK_TIMEOUT.as_millis() as u64));
            if let Some(agent) = req.params.pointer("/metadata/agentId").and_then(Value::as_str).map(str::to_string) {
                let s = self.store.clone();
                blocking(move || {
                    if gatehouse_gate::standing(&s.admission(&agent_key(&agent), "")?, SCOPE, gatehouse_gate::clock::now()).accepted() {
                        s.asop_agent_ping(&agent, timeout, &now())?;
                    }
                    Ok(())
                })
                .await?;
            }
            return Ok(json!({"status": "connected", "version": gatehouse_asop::VERSION, "timestamp": now()}));
        }
        let step = Step::of(&req.method, &req.params);
        // Registration: only agents the user let in, and every step names its agent; one
        // that does not is refused before anything is kept or queued.
        let Some(agent) = step.agent_id.clone() else {
            return Err(RpcError::new(jsonrpc::AGENT_NOT_REGISTERED, "The step names no agent (context.agent); only registered agents are guarded"));
        };
        if agent.starts_with(OTHER_DOORS_AGENTS) {
            return Err(RpcError::new(jsonrpc::POLICY_DENIED, format!("Agent ids beginning {OTHER_DOORS_AGENTS:?} are the MCP servers Gatehouse guards")));
        }
        // Who may be guarded is the gate's decision, as for every door (`at_gate.rs`).
        let (key, who) = (agent_key(&agent), agent.clone());
        let size = req.raw.to_string().len() as u64;
        let at = gatehouse_gate::clock::now();
        let gate = self.inbox.upgrade();
        let verdict = blocking(move || {
            let Some(gate) = gate else { return Ok(Err(Some(RpcError::new(jsonrpc::INTERNAL_ERROR, "Internal server error: the gate stopped")))) };
            Ok(at_gate::judge(&gate, &key, &who, size, at))
        })
        .await?;
        let admitted = match verdict {
            Ok(held) => Ok(held),
            Err(Some(e)) => Err(e),
            Err(None) => {
                let name = step.agent_name.clone().unwrap_or_else(|| agent.clone());
                let (s, key, sid) = (self.store.clone(), agent_key(&agent), step.step_id.clone().unwrap_or_default());
                blocking(move || s.pending_record(DOOR, &key, SCOPE, &sid, &now())).await?;
                Err(RpcError::new(
                    jsonrpc::AGENT_NOT_REGISTERED,
                    format!("Agent {name} is not registered with this guardian; the user has been asked to let it in"),
                )
                .with_data(json!({"agentId": agent})))
            }
        };
        self.decide(req, step, admitted).await
    }

    /// Decides a step of an agent another door let in (`admitted`: held or not), or
    /// refused (recorded with why): an MCP server's call, judged by the user's rules for
    /// it or asked of the user like any agent's step. `raw` is the step as ASOP words it.
    pub async fn judge_admitted(self: &Arc<Self>, raw: Value, admitted: Result<bool, RpcError>) -> Result<Value, RpcError> {
        let (req, step) = ruled::read(&raw)?;
        self.decide(req, step, admitted).await
    }

    /// A step of an agent the gate judged: recorded with why if it was refused, else
    /// decided by the user's rules or asked of the user.
    async fn decide(self: &Arc<Self>, req: jsonrpc::Request, step: Step, admitted: Result<bool, RpcError>) -> Result<Value, RpcError> {
        let agent = step.agent_id.clone().unwrap_or_default();
        let agent = &agent;
        let held = match admitted {
            Ok(held) => held,
            Err(e) => {
                let by = match e.code {
                    jsonrpc::AGENT_BLOCKED => "blocked",
                    jsonrpc::AGENT_NOT_REGISTERED => "unregistered",
                    _ => "policy",
                };
                let (s, r) = (self.store.clone(), ruled::record(&req, &step, "error", Some(e.message.clone()), None, by));
                let row = blocking(move || s.asop_step_add(&r)).await?;
                if by == "unregistered" {
                    self.announce(row, Some(step.agent_name.clone().unwrap_or_else(|| agent.clone())), true);
                }
                return Err(e);
            }
        };
        // The rules read, and a step they decide recorded, in one trip off the async
        // workers (each trip costs thread switches on every step); the step goes there
        // and back rather than being copied.
        let (req, step, ruled) = {
            let g = self.clone();
            blocking(move || {
                // (Recorded durably, so never refused a count: the gate counted it.)
                let ruled = g.by_rule(&req, &step, held, ruled::Recording::Durable)?.and_then(Result::ok).map(|(ruled, _on_disk)| ruled);
                Ok((req, step, ruled))
            })
            .await?
        };
        if let Some(ruled) = ruled {
            let (result, row, action) = ruled?;
            let _ = self.events.send(GuardianEvent::Decided { row, decision: action.as_str().into() });
            return Ok(result);
        }
        let record = |decision: &str, message: Option<String>, rule_id: Option<i64>, by: &str| ruled::record(&req, &step, decision, message, rule_id, by);
        // A notification waits for nobody: with no rule to decide, it is only noted.
        if req.id.is_none() {
            let (s, r) = (self.store.clone(), record("noted", Some("A notification no rule decided; nobody was asked".into()), None, "notification"));
            blocking(move || s.asop_step_add(&r)).await?;
            return Ok(Value::Null);
        }
        // Ask the user, and hold the agent's request until they answer.
        let timeout = {
            let (s, agent) = (self.store.clone(), agent.clone());
            let t = blocking(move || s.asop_agent_timeout(&agent)).await?;
            t.map(Duration::from_millis).unwrap_or(self.default_timeout).min(MAX_ASK_TIMEOUT)
        };
        if let Some(why) = self.queue_full(agent) {
            let (s, r) = (self.store.clone(), record("error", Some(why.clone()), None, "queue-full"));
            blocking(move || s.asop_step_add(&r)).await?;
            return Err(RpcError::new(jsonrpc::INTERNAL_ERROR, why));
        }
        let (s, r) = (self.store.clone(), record("pending", None, None, "user"));
        let row = blocking(move || s.asop_step_add(&r)).await?;
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(row, (agent.clone(), tx));
        let _ = self.events.send(GuardianEvent::Ask {
            row,
            summary: step.describe(),
            agent: step.agent_name.clone().or(step.agent_id.clone()),
            timeout_ms: timeout.as_millis() as u64,
        });
        self.announce(row, step.agent_name.clone().or(step.agent_id.clone()), true);
        let answered = tokio::time::timeout(timeout, rx).await;
        self.waiting().remove(&row);
        let answer = match answered {
            Ok(Ok(a)) => a,
            _ => {
                let msg = format!("The user did not answer within {} s", timeout.as_secs_f32());
                let s = self.store.clone();
                let m = msg.clone();
                blocking(move || {
                    s.asop_step_decide(row, "error", Some(&m), None, "timeout", &now())?;
                    // It no longer waits: whoever shows what waits (a phone, the desktop's
                    // notifications) is told, as for every decision.
                    s.waiting_changed();
                    Ok(())
                })
                .await?;
                let _ = self.events.send(GuardianEvent::Decided { row, decision: "timeout".into() });
                self.announce(row, None, false);
                return Err(RpcError::new(jsonrpc::USER_DID_NOT_ANSWER, msg).with_data(json!({"timeoutMs": timeout.as_millis() as u64})));
            }
        };
        let result = outcome(&req.raw, answer.decision, answer.note.clone().or(Some("Decided by the user".into())), answer.redact.as_deref(), "user")?;
        let s = self.store.clone();
        let (agent, method, tool) = (agent.clone(), req.method.clone(), step.tool_id.clone());
        let msg = result["message"].as_str().map(str::to_string);
        let a = answer.clone();
        blocking(move || {
            // "Always" is for this agent only: every step here names a registered agent.
            let until = match a.lasting.as_ref().map(|l| l.end(gatehouse_gate::clock::now())).transpose() {
                Ok(end) => end.flatten().map(gatehouse_gate::clock::utc_string),
                // Checked when the answer was given; a date that passed since lasts no time.
                Err(_) => Some(now()),
            };
            let rule_id = if a.always {
                Some(s.asop_rule_add(&AsopRuleRow {
                    until,
                    id: 0,
                    agent,
                    method,
                    tool: tool.unwrap_or_else(|| "*".into()),
                    condition: None,
                    action: a.decision.as_str().into(),
                    redact: a.redact.clone(),
                    note: a.note.clone(),
                    source: "always".into(),
                    created_at: now(),
                })?)
            } else {
                None
            };
            s.asop_step_decide(row, a.decision.as_str(), msg.as_deref(), rule_id, "user", &now())?;
            s.waiting_changed();
            Ok(())
        })
        .await?;
        let _ = self.events.send(GuardianEvent::Decided { row, decision: answer.decision.as_str().into() });
        self.announce(row, None, false);
        Ok(result)
    }
}

/// The ASOPSuccessResult for a decision.
fn outcome(request: &Value, action: Action, note: Option<String>, pattern: Option<&str>, by: &str) -> Result<Value, RpcError> {
    let mut r = json!({
        "decision": action.as_str(),
        "message": note.unwrap_or_else(|| match action {
            Action::Allow => "Allowed by the user's rules".to_string(),
            Action::Deny => "Denied by the user's rules".to_string(),
            Action::Modify => "Allowed with redactions".to_string(),
            Action::Ask => String::new(),
        }),
        "reasonCode": [format!("{by}_{}", action.as_str())],
    });
    if action == Action::Modify {
        let p = pattern.ok_or_else(|| RpcError::new(jsonrpc::INTERNAL_ERROR, "Internal server error: a modify decision without a pattern"))?;
        let (modified, n) = redact::redact(request, p).map_err(internal)?;
        r["modifiedRequest"] = modified;
        r["data"] = json!({"redactions": n});
    }
    Ok(r)
}

fn rule_of(r: AsopRuleRow) -> Option<Rule> {
    let action = serde_json::from_value(json!(r.action)).ok()?;
    Some(Rule {
        id: r.id,
        agent: r.agent,
        method: r.method,
        tool: r.tool,
        condition: r.condition.and_then(|c| serde_json::from_value(c).ok()),
        action,
        redact: r.redact,
        note: r.note,
    })
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, StoreError> + Send + 'static) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(f).await.map_err(internal)?.map_err(internal)
}

/// A failure of Gatehouse's own (not the agent's), in JSON-RPC's words.
fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(jsonrpc::INTERNAL_ERROR, format!("Internal server error: {e}"))
}

/// `POST /asop/v1`.
pub fn router(g: Arc<Guardian>) -> Router {
    Router::new().route(PATH, post(rpc)).with_state(g)
}

async fn rpc(State(g): State<Arc<Guardian>>, req: axum::extract::Request) -> Response {
    let headers = req.headers().clone();
    // The body must arrive in time (a slow sender holds no connection forever); the answer
    // may then take as long as the user does.
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let read = match gatehouse_net::body::read(req.into_body(), declared, MAX_BODY).await {
        Ok(r) => r,
        Err(gatehouse_net::body::BodyError::TooLarge(_)) => {
            return json_response(jsonrpc::failure(
                &Value::Null,
                &RpcError::new(jsonrpc::INVALID_REQUEST, format!("Invalid JSON-RPC Request: larger than {MAX_BODY} bytes")),
            ))
        }
        Err(_) => {
            return json_response(jsonrpc::failure(
                &Value::Null,
                &RpcError::new(jsonrpc::INVALID_REQUEST, "Invalid JSON-RPC Request: the body did not arrive in time"),
            ))
        }
    };

    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json") {
        let e = RpcError::new(jsonrpc::INVALID_REQUEST, format!("Invalid JSON-RPC Request: Content-Type is {ct:?}, not application/json"));
        return json_response(jsonrpc::failure(&Value::Null, &e));
    }
    match g.call(&read.bytes).await {
        Some(v) => json_response(v),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

fn json_response(v: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}
