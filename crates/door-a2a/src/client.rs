//! Gatehouse as an A2A client: an agent at an address the user gave, its card read from
//! there, a message sent and its answer followed as it streams.
//!
//! Where requests go is the user's entry alone: the card's endpoint is used only on the
//! same origin as the address the user gave (a card cannot send Gatehouse elsewhere), no
//! redirect is followed, plain HTTP only to this machine. Everything read is bounded.

use std::time::Duration;

use futures_util::StreamExt as _;
use gatehouse_a2a::types::{Event, Part, TaskState, TaskStatus};
use serde_json::{json, Value};

/// A card is a page of JSON; more is not a card.
pub const MAX_CARD_BYTES: usize = 256 * 1024;
/// One event of a streamed answer.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// An answer kept: what an executor's output may be.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Connecting to an agent.
const CONNECT: Duration = Duration::from_secs(10);

/// An agent as discovered at the user's address.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Agent {
    /// What the user calls it.
    pub name: String,
    /// The address the user gave (an origin).
    pub url: String,
    /// Its JSON-RPC endpoint, from its card, on that origin.
    pub endpoint: String,
    /// What its card calls it (a claim, shown as such).
    pub card_name: String,
    pub streaming: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Address(String),
    #[error("could not reach {0}: {1}")]
    Unreachable(String, String),
    #[error("{0} answered HTTP {1}")]
    Status(String, u16),
    #[error("{0}")]
    Protocol(String),
    #[error("the agent answered error {0}: {1}")]
    Rpc(i64, String),
    #[error("the task ended {0}: {1}")]
    Ended(String, String),
}

impl ClientError {
    pub fn code(&self) -> gatehouse_code::Code {
        use gatehouse_code::Code;
        match self {
            ClientError::Address(_) => Code::BadUrl,
            ClientError::Unreachable(..) => Code::Unreachable,
            ClientError::Status(..) | ClientError::Protocol(_) | ClientError::Rpc(..) => Code::Protocol,
            ClientError::Ended(..) => Code::Refused,
        }
    }
}

/// The address as the user gave it, checked: https, or http to this machine only.
pub fn origin(url: &str) -> Result<reqwest::Url, ClientError> {
    let u = reqwest::Url::parse(url.trim()).map_err(|e| ClientError::Address(format!("{url:?} is not an address: {e}")))?;
    let local = matches!(u.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    match u.scheme() {
        "https" => {}
        "http" if local => {}
        "http" => return Err(ClientError::Address(format!("{url} is plain HTTP to another machine; use https"))),
        s => return Err(ClientError::Address(format!("{url}: {s} is not an agent's address (https)"))),
    }
    if u.host_str().is_none() || !u.username().is_empty() || u.password().is_some() {
        return Err(ClientError::Address(format!("{url} must name a host, and no credentials")));
    }
    Ok(u)
}

fn http() -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT)
        .build()
        .map_err(|e| ClientError::Protocol(format!("no HTTP client: {e}")))
}

/// Reads at most `max` bytes of a response body.
async fn bounded(resp: reqwest::Response, max: usize) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| ClientError::Protocol(format!("reading the answer failed: {e}")))?;
        if out.len().saturating_add(chunk.len()) > max {
            return Err(ClientError::Protocol(format!("the answer is larger than {max} bytes")));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Reads the agent's card at `url` and finds its JSON-RPC endpoint on the same origin.
pub async fn discover(name: &str, url: &str) -> Result<Agent, ClientError> {
    let base = origin(url)?;
    let card_url = base.join(gatehouse_a2a::CARD_PATH).map_err(|e| ClientError::Address(e.to_string()))?;
    let resp = http()?.get(card_url.clone()).send().await.map_err(|e| ClientError::Unreachable(card_url.to_string(), e.to_string()))?;
    if !resp.status().is_success() {
        return Err(ClientError::Status(card_url.to_string(), resp.status().as_u16()));
    }
    let card: Value = serde_json::from_slice(&bounded(resp, MAX_CARD_BYTES).await?).map_err(|e| ClientError::Protocol(format!("its card is not JSON: {e}")))?;
    let interfaces = card["supportedInterfaces"].as_array().cloned().unwrap_or_default();
    let same_origin = |u: &reqwest::Url| u.origin() == base.origin();
    let endpoint = interfaces
        .iter()
        .filter(|i| i["protocolBinding"] == "JSONRPC")
        .filter(|i| i["protocolVersion"].as_str().is_none_or(|v| v == "1" || v.starts_with("1.")))
        .filter_map(|i| i["url"].as_str().and_then(|u| reqwest::Url::parse(u).ok()))
        .find(same_origin)
        .ok_or_else(|| {
            ClientError::Protocol(format!(
                "its card names no A2A 1.0 JSON-RPC endpoint at {} (an endpoint elsewhere is not used)",
                base.origin().ascii_serialization()
            ))
        })?;
    Ok(Agent {
        name: name.to_string(),
        url: base.origin().ascii_serialization(),
        endpoint: endpoint.to_string(),
        card_name: card["name"].as_str().unwrap_or("").chars().take(200).collect(),
        streaming: card["capabilities"]["streaming"] == true,
    })
}

/// What the agent answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub task_id: Option<String>,
    pub text: String,
}

/// The text parts of an artifact or a message, joined.
fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| p.text.as_deref()).collect()
}

/// What the agent said with a task's status.
fn words_of(status: &TaskStatus) -> String {
    status.message.as_ref().map(|m| text_of(&m.parts)).unwrap_or_default()
}

/// Sends `text` and follows the answer: `on_text` sees the answer so far as it grows.
pub async fn send(agent: &Agent, token: Option<&str>, text: &str, mut on_text: impl FnMut(&str)) -> Result<Answer, ClientError> {
    // Only where the user's entry says, whatever was kept with it.
    let endpoint = origin(&agent.endpoint)?;
    if endpoint.origin() != origin(&agent.url)?.origin() {
        return Err(ClientError::Address(format!("{} is not on {}", agent.endpoint, agent.url)));
    }
    let method = if agent.streaming { "SendStreamingMessage" } else { "SendMessage" };
    let body = json!({"jsonrpc": "2.0", "id": uuid::Uuid::new_v4().to_string(), "method": method, "params": {
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}}});
    let mut req = http()?.post(endpoint.clone()).header(gatehouse_a2a::VERSION_HEADER, gatehouse_a2a::VERSION).json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.map_err(|e| ClientError::Unreachable(agent.endpoint.clone(), e.to_string()))?;
    if !resp.status().is_success() {
        return Err(ClientError::Status(agent.endpoint.clone(), resp.status().as_u16()));
    }
    let mut answer = Answer { task_id: None, text: String::new() };
    if !agent.streaming {
        let v: Value = serde_json::from_slice(&bounded(resp, MAX_ANSWER_BYTES).await?).map_err(|e| ClientError::Protocol(format!("not JSON: {e}")))?;
        return finish(&mut answer, &v, &mut on_text).map(|_| answer);
    }
    let mut events = std::pin::pin!(gatehouse_sse::events(resp.bytes_stream(), MAX_EVENT_BYTES));
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| ClientError::Protocol(e.to_string()))?;
        let v: Value = serde_json::from_str(&ev.data).map_err(|e| ClientError::Protocol(format!("an event is not JSON: {e}")))?;
        if finish(&mut answer, &v, &mut on_text)? {
            return Ok(answer);
        }
    }
    Err(ClientError::Protocol("the stream ended before the task did".into()))
}

/// Takes one JSON-RPC answer into `answer`; true once the task is over.
fn finish(answer: &mut Answer, v: &Value, on_text: &mut impl FnMut(&str)) -> Result<bool, ClientError> {
    if let Some(e) = v.get("error") {
        return Err(ClientError::Rpc(e["code"].as_i64().unwrap_or(0), e["message"].as_str().unwrap_or("").chars().take(500).collect()));
    }
    let event: Event = serde_json::from_value(v["result"].clone()).map_err(|e| ClientError::Protocol(format!("not an A2A answer: {e}")))?;
    let status = match &event {
        Event::Message(m) => {
            answer.text = m.prompt();
            on_text(&answer.text);
            return Ok(true);
        }
        Event::Task(t) => {
            answer.task_id = Some(t.id.clone());
            let whole: String = t.artifacts.iter().map(|a| text_of(&a.parts)).collect();
            if !whole.is_empty() {
                answer.text = whole;
                on_text(&answer.text);
            }
            &t.status
        }
        Event::ArtifactUpdate(u) => {
            let piece = text_of(&u.artifact.parts);
            if !u.append {
                answer.text.clear();
            }
            if answer.text.len().saturating_add(piece.len()) > MAX_ANSWER_BYTES {
                return Err(ClientError::Protocol(format!("the answer is larger than {MAX_ANSWER_BYTES} bytes")));
            }
            answer.text.push_str(&piece);
            on_text(&answer.text);
            return Ok(false);
        }
        Event::StatusUpdate(u) => &u.status,
    };
    match status.state {
        TaskState::Completed => Ok(true),
        TaskState::Submitted | TaskState::Working => Ok(false),
        TaskState::InputRequired | TaskState::AuthRequired => {
            Err(ClientError::Ended("waiting for input".into(), format!("the agent asks for more ({}); Gatehouse does not answer for you", words_of(status))))
        }
        other => Err(ClientError::Ended(format!("{other:?}").to_lowercase(), words_of(status))),
    }
}
