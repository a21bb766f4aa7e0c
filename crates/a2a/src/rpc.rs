//! A JSON-RPC 2.0 request, read once into a [`Call`] within this agent's bounds, and the
//! spec's errors. Requests are bounded in bytes by the listener before they get here;
//! serde_json reads them in one linear pass (nesting is bounded by its recursion limit).

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::types::{Content, Message, Role};

/// Parts one message may have.
pub const MAX_PARTS: usize = 32;
/// Characters in an id (message, task, context) a peer chooses.
pub const MAX_ID_CHARS: usize = 200;

/// The spec's error codes (JSON-RPC binding), as `a2a-sdk` maps them.
pub mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const TASK_NOT_FOUND: i64 = -32001;
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    pub const PUSH_NOT_SUPPORTED: i64 = -32003;
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into() }
    }

    fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }
}

/// What `SendMessage` / `SendStreamingMessage` carry (`SendMessageRequest`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Send {
    pub message: Message,
    #[serde(default)]
    pub configuration: Option<Configuration>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    #[serde(default)]
    pub accepted_output_modes: Vec<String>,
    #[serde(default)]
    pub history_length: Option<i64>,
    /// Answer at once with the task as it is, instead of when it ends or waits.
    #[serde(default)]
    pub return_immediately: bool,
    #[serde(default)]
    pub task_push_notification_config: Option<Value>,
}

/// One request, typed.
#[derive(Debug, Clone)]
pub enum Call {
    Send { send: Box<Send>, streaming: bool },
    GetTask { id: String },
    Cancel { id: String },
    Subscribe { id: String },
}

#[derive(Debug, Clone)]
pub struct Request {
    /// Echoed in the answer, as it came (a string, a number or null).
    pub id: Value,
    pub call: Call,
}

#[derive(Deserialize)]
struct Envelope {
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Value,
    method: Option<String>,
    #[serde(default)]
    params: Value,
}

#[derive(Deserialize)]
struct TaskId {
    #[serde(default)]
    id: String,
}

/// Methods of A2A 0.3, which its SDKs' compatibility layers still send.
const V03: [&str; 5] = ["message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"];
/// Methods of 1.0 this agent does not offer.
const UNSUPPORTED: [&str; 5] =
    ["ListTasks", "GetExtendedAgentCard", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"];

/// Reads one request. On failure, the id to answer under (null when unreadable) and why.
pub fn parse(bytes: &[u8]) -> Result<Request, (Value, RpcError)> {
    let env: Envelope = serde_json::from_slice(bytes).map_err(|e| {
        let code = if e.is_data() { code::INVALID_REQUEST } else { code::PARSE };
        (Value::Null, RpcError::new(code, format!("not a JSON-RPC request: {e}")))
    })?;
    let id = env.id;
    let fail = |e: RpcError| (id.clone(), e);
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Err(fail(RpcError::new(code::INVALID_REQUEST, "jsonrpc must be \"2.0\"")));
    }
    if !(id.is_string() || id.is_number() || id.is_null()) {
        return Err((Value::Null, RpcError::new(code::INVALID_REQUEST, "id must be a string, a number or null")));
    }
    let method = env.method.ok_or_else(|| fail(RpcError::new(code::INVALID_REQUEST, "no method")))?;
    let task_id = |params: Value| -> Result<String, RpcError> {
        let t: TaskId = serde_json::from_value(params).map_err(|e| RpcError::params(format!("params: {e}")))?;
        check_id("id", &t.id, true)?;
        Ok(t.id)
    };
    let call = match method.as_str() {
        "SendMessage" | "SendStreamingMessage" => {
            let send: Send = serde_json::from_value(env.params).map_err(|e| fail(RpcError::params(format!("params: {e}"))))?;
            check_send(&send).map_err(fail)?;
            Call::Send { send: Box::new(send), streaming: method == "SendStreamingMessage" }
        }
        "GetTask" => Call::GetTask { id: task_id(env.params).map_err(fail)? },
        "CancelTask" => Call::Cancel { id: task_id(env.params).map_err(fail)? },
        "SubscribeToTask" => Call::Subscribe { id: task_id(env.params).map_err(fail)? },
        "CreateTaskPushNotificationConfig" => {
            return Err(fail(RpcError::new(code::PUSH_NOT_SUPPORTED, "this agent sends no push notifications; follow a task with SubscribeToTask or GetTask")))
        }
        m if V03.contains(&m) => {
            return Err(fail(RpcError::new(
                code::VERSION_NOT_SUPPORTED,
                format!("{m} is A2A 0.3; this agent speaks A2A 1.0 (SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask)"),
            )))
        }
        m if UNSUPPORTED.contains(&m) => return Err(fail(RpcError::new(code::UNSUPPORTED_OPERATION, format!("this agent does not offer {m}")))),
        m => {
            let shown: String = m.chars().take(64).collect();
            return Err(fail(RpcError::new(code::METHOD_NOT_FOUND, format!("no method {shown:?}"))));
        }
    };
    Ok(Request { id, call })
}

fn check_id(what: &str, id: &str, required: bool) -> Result<(), RpcError> {
    if required && id.is_empty() {
        return Err(RpcError::params(format!("{what} is required")));
    }
    if id.chars().count() > MAX_ID_CHARS || id.chars().any(char::is_control) {
        return Err(RpcError::params(format!("{what} must be at most {MAX_ID_CHARS} characters, none of them control characters")));
    }
    Ok(())
}

/// What a message to this agent must be: from the user's side, with an id, within the
/// part count, each part with one content; push notifications are never configured.
fn check_send(s: &Send) -> Result<(), RpcError> {
    let m = &s.message;
    check_id("message.messageId", &m.message_id, true)?;
    check_id("message.contextId", m.context_id.as_deref().unwrap_or(""), false)?;
    check_id("message.taskId", m.task_id.as_deref().unwrap_or(""), false)?;
    if m.role != Role::User {
        return Err(RpcError::params("a message sent to this agent has the role ROLE_USER"));
    }
    if m.parts.is_empty() {
        return Err(RpcError::params("a message needs at least one part"));
    }
    if m.parts.len() > MAX_PARTS {
        return Err(RpcError::params(format!("a message may have at most {MAX_PARTS} parts; this one has {}", m.parts.len())));
    }
    for (i, p) in m.parts.iter().enumerate() {
        match p.content() {
            Err(e) => return Err(RpcError::params(format!("part {i}: {e}"))),
            Ok(Content::Raw(b64)) => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.decode(b64).map_err(|_| RpcError::params(format!("part {i}: raw is not base64")))?;
            }
            Ok(_) => {}
        }
    }
    if s.configuration.as_ref().is_some_and(|c| c.task_push_notification_config.is_some()) {
        return Err(RpcError::new(code::PUSH_NOT_SUPPORTED, "this agent sends no push notifications; follow a task with SubscribeToTask or GetTask"));
    }
    Ok(())
}

/// A success answer.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error answer.
pub fn error(id: &Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(params: Value) -> Result<Request, (Value, RpcError)> {
        parse(json!({"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": params}).to_string().as_bytes())
    }

    #[test]
    fn each_bad_request_gets_its_code() {
        assert_eq!(parse(b"{").unwrap_err().1.code, code::PARSE);
        assert_eq!(parse(b"[]").unwrap_err().1.code, code::INVALID_REQUEST);
        assert_eq!(parse(br#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#).unwrap_err().1.code, code::INVALID_REQUEST);
        let (id, e) = parse(br#"{"jsonrpc":"2.0","id":7,"method":"message/send"}"#).unwrap_err();
        assert_eq!((id, e.code), (json!(7), code::VERSION_NOT_SUPPORTED));
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":7,"method":"Nope"}"#).unwrap_err().1.code, code::METHOD_NOT_FOUND);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{}}"#).unwrap_err().1.code, code::INVALID_PARAMS);
        let user = |parts: Value| json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": parts}});
        assert!(send(user(json!([{"text": "hi"}]))).is_ok());
        assert_eq!(send(user(json!([]))).unwrap_err().1.code, code::INVALID_PARAMS);
        assert_eq!(send(user(json!([{}]))).unwrap_err().1.code, code::INVALID_PARAMS);
        assert_eq!(send(user(json!([{"raw": "%%%"}]))).unwrap_err().1.code, code::INVALID_PARAMS);
        let many: Vec<Value> = (0..=MAX_PARTS).map(|_| json!({"text": "x"})).collect();
        assert_eq!(send(user(Value::Array(many))).unwrap_err().1.code, code::INVALID_PARAMS);
        let agent = json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}});
        assert_eq!(send(agent).unwrap_err().1.code, code::INVALID_PARAMS);
        let mut push = user(json!([{"text": "hi"}]));
        push["configuration"] = json!({"taskPushNotificationConfig": {"url": "https://evil.example/hook"}});
        assert_eq!(send(push).unwrap_err().1.code, code::PUSH_NOT_SUPPORTED);
        let long = json!({"message": {"messageId": "m".repeat(MAX_ID_CHARS + 1), "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        assert_eq!(send(long).unwrap_err().1.code, code::INVALID_PARAMS);
    }
}
