//! The REST transport (spec: REST Transport, openapi.yaml) as a client: server metadata,
//! health, identity and role, status, the swarm registry, and tasks sent with `stream=true`
//! whose events arrive as they happen. Errors say what the user can do about them.

use std::time::Duration;

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use gatehouse_http::HttpError;
use gatehouse_http::{base_url, read_limited, Plain, Rules};

use crate::events::{BadEvent, TaskEvent};
use crate::model::Message;

/// A task event (one MAIL message and its metadata) larger than this ends the stream.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// A stream with neither an event nor a ping for this long is treated as dropped (the
/// reference pings every 15 s).
pub const IDLE: Duration = Duration::from_secs(60);
/// How long one send may take in all, however lively the stream: a swarm that keeps
/// pinging or talking without ever finishing does not hold the user (or a CLI) forever.
pub const DEADLINE: Duration = Duration::from_secs(30 * 60);
/// Bodies larger than this are refused.
const MAX_BODY: usize = 8 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Transport(#[from] HttpError),
    #[error("the swarm refused the token ({status}) for {path}: it is missing, wrong or revoked, or its role may not call this. {detail}")]
    Unauthorized { path: String, status: u16, detail: String },
    #[error("the swarm rejected the request to {path} as malformed (400): {detail}")]
    BadRequest { path: String, detail: String },
    #[error("the swarm failed while handling {path} ({status}): {detail}. The task may be retried later")]
    Server { path: String, status: u16, detail: String },
    #[error("the swarm answered {path} with HTTP {status}: {detail}")]
    Http { path: String, status: u16, detail: String },
    #[error("the swarm broke the protocol: {0}")]
    Protocol(String),
    #[error("the task stream ended before the task finished: {0}")]
    Interrupted(String),
}

impl ClientError {
    /// The stable code this error crosses a boundary with (the app's `{code, message}`).
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ClientError::Transport(e) => e.code(),
            ClientError::Unauthorized { .. } => gatehouse_code::Code::Unauthorized,
            ClientError::BadRequest { .. } => gatehouse_code::Code::BadRequest,
            ClientError::Server { .. } => gatehouse_code::Code::SwarmError,
            ClientError::Http { .. } => gatehouse_code::Code::Http,
            ClientError::Protocol(_) => gatehouse_code::Code::Protocol,
            ClientError::Interrupted(_) => gatehouse_code::Code::Interrupted,
        }
    }
}

/// `https://host[:port][/path]` (or `http://` on loopback only: a bearer token must not
/// cross a network in the clear) from what the user typed.
pub fn normalize_url(input: &str) -> Result<String, ClientError> {
    Ok(base_url(input, &Rules { what: "a swarm", plain: Plain::OnLoopback, document: None, path: true })?)
}

/// `GET /whoami`. openapi.yaml names the identity `id`; the spec's text (and a swarm
/// written from it) `username`: either is read (docs/interop.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Whoami {
    #[serde(alias = "username")]
    pub id: String,
    pub role: String,
}

/// What `GET /` says, read from either shape: openapi.yaml's (`version`, `swarm` a
/// name) or the reference server's (`protocol_version`, `swarm` an object with name,
/// version, description, entrypoint).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerInfo {
    pub name: String,
    /// The MAIL version the server speaks (`1.3`).
    pub protocol_version: Option<String>,
    pub swarm: Option<String>,
    pub swarm_version: Option<String>,
    pub description: Option<String>,
    pub entrypoint: Option<String>,
    pub status: Option<String>,
}

impl ServerInfo {
    pub fn read(root: &Value) -> ServerInfo {
        let s = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let swarm = &root["swarm"];
        ServerInfo {
            name: s(&root["name"]).or_else(|| s(&root["protocol_name"])).unwrap_or_default(),
            protocol_version: s(&root["protocol_version"]).or_else(|| s(&root["version"])),
            swarm: s(swarm).or_else(|| s(&swarm["name"])),
            swarm_version: s(&swarm["version"]),
            description: s(&swarm["description"]),
            entrypoint: s(&swarm["entrypoint"]),
            status: s(&root["status"]),
        }
    }

    /// One line for people: `mail 1.3, swarm "example" (1.3.6), running`.
    pub fn summary(&self) -> String {
        let mut out = format!("{} {}", self.name, self.protocol_version.as_deref().unwrap_or("(version not given)"));
        if let Some(sw) = &self.swarm {
            out.push_str(&format!(", swarm \"{sw}\""));
            if let Some(v) = &self.swarm_version {
                out.push_str(&format!(" ({v})"));
            }
        }
        if let Some(e) = &self.entrypoint {
            out.push_str(&format!(", entrypoint {e}"));
        }
        if let Some(st) = &self.status {
            out.push_str(&format!(", {st}"));
        }
        out
    }
}

/// One entry of `GET /swarms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwarmEntry {
    pub swarm_name: String,
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub is_active: Option<bool>,
    #[serde(default)]
    pub last_seen: Option<String>,
    #[serde(default)]
    pub swarm_description: Option<String>,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub latency: Option<f64>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// What the user sends to a swarm (`POST /message`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SendMessage {
    pub body: String,
    pub subject: Option<String>,
    /// Continue this task (multi-turn) instead of starting one.
    pub task_id: Option<String>,
    pub entrypoint: Option<String>,
}

/// `POST /interswarm/message`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterswarmSend {
    /// The user runtime token the swarm's `/message` issued (the caller's own token in
    /// the reference).
    pub user_token: String,
    pub body: String,
    /// `agent@swarm` addresses.
    pub targets: Vec<String>,
    pub subject: Option<String>,
    /// `request` (one target) or `broadcast`.
    pub msg_type: Option<String>,
    pub task_id: Option<String>,
}

/// How a streamed task ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Outcome {
    pub task_id: String,
    pub completed: bool,
    /// The finishing message's body, or the swarm's error.
    pub response: String,
}

pub struct SwarmClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
    idle: Duration,
    deadline: Duration,
}

impl SwarmClient {
    pub fn new(base_url: &str, token: Option<String>) -> Result<SwarmClient, ClientError> {
        let base = normalize_url(base_url)?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(SwarmClient { base, token, http, idle: IDLE, deadline: DEADLINE })
    }

    /// How long a task stream may stay silent (no event, no ping) before it counts as dropped.
    pub fn with_idle(mut self, idle: Duration) -> SwarmClient {
        self.idle = idle;
        self
    }

    /// How long one send may take in all before it is given up as interrupted.
    pub fn with_deadline(mut self, deadline: Duration) -> SwarmClient {
        self.deadline = deadline;
        self
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        r
    }

    async fn json(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, ClientError> {
        self.json_as(self.request(method, path), path, body).await
    }

    /// A public endpoint (`GET /`, `/health`: no role in the spec): asked without the
    /// token, which is a secret the server has not yet shown it should get (a MAIL 2.0
    /// server's is a password).
    async fn json_public(&self, path: &str) -> Result<Value, ClientError> {
        self.json_as(self.http.get(format!("{}{path}", self.base)), path, None).await
    }

    async fn json_as(&self, r: reqwest::RequestBuilder, path: &str, body: Option<&Value>) -> Result<Value, ClientError> {
        let mut r = r.timeout(Duration::from_secs(30));
        if let Some(b) = body {
            r = r.json(b);
        }
        let resp = r.send().await.map_err(|e| HttpError::failed(&self.base, &e))?;
        read_json(&self.base, path, resp).await
    }

    /// `GET /`: `{name: "mail", version, swarm, status, uptime}`.
    pub async fn root(&self) -> Result<Value, ClientError> {
        let v = self.json_public("/").await?;
        // MAIL 2.0 servers say `protocol_name`.
        if v.get("name").or_else(|| v.get("protocol_name")).and_then(Value::as_str) != Some("mail") {
            return Err(ClientError::Protocol(format!("{} is not a MAIL server (GET / has no name \"mail\")", self.base)));
        }
        Ok(v)
    }

    /// `GET /health`: `{status, swarm_name, timestamp}`.
    pub async fn health(&self) -> Result<Value, ClientError> {
        self.json_public("/health").await
    }

    /// `GET /whoami`: the identity and role the token carries.
    pub async fn whoami(&self) -> Result<Whoami, ClientError> {
        let v = self.json(reqwest::Method::GET, "/whoami", None).await?;
        serde_json::from_value(v).map_err(|e| ClientError::Protocol(format!("/whoami: {e}")))
    }

    /// `GET /status`.
    pub async fn status(&self) -> Result<Value, ClientError> {
        self.json(reqwest::Method::GET, "/status", None).await
    }

    /// `GET /swarms`: the registry of remote swarms.
    pub async fn swarms(&self) -> Result<Vec<SwarmEntry>, ClientError> {
        let v = self.json(reqwest::Method::GET, "/swarms", None).await?;
        let list = v.get("swarms").cloned().unwrap_or(Value::Array(vec![]));
        serde_json::from_value(list).map_err(|e| ClientError::Protocol(format!("/swarms: {e}")))
    }

    /// Sends `m` with `stream=true` and hands every event to `on_event` as it arrives,
    /// until the task completes or fails, or the deadline passes. Events that cannot be
    /// read are handed over as errors and the stream goes on. A `task_id` continues that
    /// task (`resume_from: "user_response"`, as the reference expects).
    pub async fn send(&self, m: &SendMessage, on_event: impl FnMut(Result<TaskEvent, BadEvent>) + Send) -> Result<Outcome, ClientError> {
        let deadline = self.deadline;
        tokio::time::timeout(deadline, self.stream(m, on_event)).await.unwrap_or_else(|_| {
            Err(ClientError::Interrupted(format!("the task did not finish within {} minutes; what arrived is kept", deadline.as_secs().div_ceil(60))))
        })
    }

    async fn stream(&self, m: &SendMessage, mut on_event: impl FnMut(Result<TaskEvent, BadEvent>) + Send) -> Result<Outcome, ClientError> {
        let mut body = serde_json::Map::new();
        body.insert("body".into(), m.body.clone().into());
        body.insert("stream".into(), true.into());
        for (k, v) in [("subject", &m.subject), ("task_id", &m.task_id), ("entrypoint", &m.entrypoint)] {
            if let Some(v) = v {
                body.insert(k.into(), v.clone().into());
            }
        }
        if m.task_id.is_some() {
            // The reference resumes a task only when told how; without this it treats the
            // message as a new task under the old id and the stream never ends.
            body.insert("resume_from".into(), "user_response".into());
        }
        let body = Value::Object(body);
        let resp = self
            .request(reqwest::Method::POST, "/message")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&body)
            .send()
            .await
            .map_err(|e| HttpError::failed(&self.base, &e))?;
        let resp = check("/message", resp).await?;
        let is_sse = resp.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("text/event-stream"));
        if !is_sse {
            // A server that ignores `stream` answers the final response at once.
            let v: Value =
                serde_json::from_slice(&read_limited(&self.base, resp, MAX_BODY).await?).map_err(|e| ClientError::Protocol(format!("/message: {e}")))?;
            let response = v.get("response").and_then(Value::as_str).unwrap_or_default().to_string();
            return Ok(Outcome { task_id: m.task_id.clone().unwrap_or_default(), completed: true, response });
        }
        let mut events = std::pin::pin!(gatehouse_sse::events(resp.bytes_stream(), MAX_EVENT_BYTES));
        let mut task_id = m.task_id.clone();
        loop {
            let next = tokio::time::timeout(self.idle, events.next())
                .await
                .map_err(|_| ClientError::Interrupted(format!("no event or ping for {} s", self.idle.as_secs_f32())))?;
            let Some(ev) = next else {
                return Err(ClientError::Interrupted("the swarm closed the stream".into()));
            };
            let ev = ev.map_err(|e| ClientError::Interrupted(e.to_string()))?;
            let parsed = TaskEvent::parse(&ev.event, &ev.data);
            if let Ok(e) = &parsed {
                if task_id.is_none() {
                    task_id = e.task_id().map(str::to_string);
                }
            }
            let outcome = match &parsed {
                Ok(TaskEvent::Complete { task_id, response, .. }) => Some(Outcome { task_id: task_id.clone(), completed: true, response: response.clone() }),
                Ok(TaskEvent::Failed { task_id, response, .. }) => Some(Outcome { task_id: task_id.clone(), completed: false, response: response.clone() }),
                _ => None,
            };
            on_event(parsed);
            if let Some(o) = outcome {
                return Ok(o);
            }
        }
    }

    /// `POST /interswarm/message`: a message to agents of another swarm, routed by this one.
    /// Returns the routed MAILMessage (validated) and any events the swarm included.
    pub async fn interswarm(&self, m: &InterswarmSend) -> Result<(Message, Vec<Value>), ClientError> {
        let mut body = serde_json::Map::new();
        body.insert("user_token".into(), m.user_token.clone().into());
        body.insert("body".into(), m.body.clone().into());
        body.insert("targets".into(), json!(m.targets));
        for (k, v) in [("subject", &m.subject), ("msg_type", &m.msg_type), ("task_id", &m.task_id)] {
            if let Some(v) = v {
                body.insert(k.into(), v.clone().into());
            }
        }
        let body = Value::Object(body);
        let v = self.json(reqwest::Method::POST, "/interswarm/message", Some(&body)).await?;
        let response = v.get("response").ok_or_else(|| ClientError::Protocol("/interswarm/message answered without `response`".into()))?;
        let msg = Message::from_value(response).map_err(|e| ClientError::Protocol(format!("/interswarm/message response {e}")))?;
        let events = v.get("events").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok((msg, events))
    }
}

/// A response as JSON: an error status explained ([`check`]), the body bounded.
pub(crate) async fn read_json(base: &str, path: &str, resp: reqwest::Response) -> Result<Value, ClientError> {
    let resp = check(path, resp).await?;
    let bytes = read_limited(base, resp, MAX_BODY).await?;
    serde_json::from_slice(&bytes).map_err(|e| ClientError::Protocol(format!("{path} did not answer JSON: {e}")))
}

async fn check(path: &str, resp: reqwest::Response) -> Result<reqwest::Response, ClientError> {
    let status = resp.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(resp);
    }
    let bytes = read_limited(path, resp, MAX_BODY).await.unwrap_or_default();
    let detail = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| match v.get("detail") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
            None => v.get("message").and_then(Value::as_str).map(str::to_string),
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(300).collect());
    let path = path.to_string();
    Err(match status {
        400 => ClientError::BadRequest { path, detail },
        401 | 403 => ClientError::Unauthorized { path, status, detail },
        500..=599 => ClientError::Server { path, status, detail },
        _ => ClientError::Http { path, status, detail },
    })
}

#[cfg(test)]
mod tests {
    use super::Whoami;

    #[test]
    fn whoami_is_read_as_openapi_and_as_the_spec_text_word_it() {
        let by_id: Whoami = serde_json::from_value(serde_json::json!({"id": "alice", "role": "user"})).unwrap();
        let by_name: Whoami = serde_json::from_value(serde_json::json!({"username": "alice", "role": "user"})).unwrap();
        assert_eq!(by_id, by_name);
        assert_eq!(by_name.id, "alice");
    }
}
