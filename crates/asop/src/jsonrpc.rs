//! JSON-RPC 2.0 as ASOP uses it (spec 2.2, 3.12, 6): one request or a batch; a request
//! without `id` is a notification and gets no response.

use serde_json::{json, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Guardian errors (-32000..-32099).
pub const AGENT_NOT_REGISTERED: i64 = -32001;
pub const USER_DID_NOT_ANSWER: i64 = -32002;
pub const AGENT_BLOCKED: i64 = -32003;
/// Gatehouse's own (docs/interop.md): what the user's registration of the agent does not
/// allow (the guardian's scope taken away), a step larger than it allows, and more steps
/// than its rate limit (`data.retryAfter`, seconds).
pub const POLICY_DENIED: i64 = -32004;
pub const TOO_LARGE: i64 = -32005;
pub const RATE_LIMITED: i64 = -32006;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn to_json(&self) -> Value {
        let mut e = serde_json::Map::new();
        e.insert("code".into(), json!(self.code));
        e.insert("message".into(), json!(self.message));
        if let Some(d) = &self.data {
            e.insert("data".into(), d.clone());
        }
        Value::Object(e)
    }
}

/// A request that passed the JSON-RPC checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// None for a notification.
    pub id: Option<Value>,
    pub method: String,
    pub params: Value,
    pub raw: Value,
}

/// Reads one element of a call: Err carries the id to answer with (null when unreadable).
pub fn read(v: &Value) -> Result<Request, (Value, RpcError)> {
    let Some(o) = v.as_object() else {
        return Err((Value::Null, RpcError::new(INVALID_REQUEST, "Invalid JSON-RPC Request: not an object")));
    };
    let id = match o.get("id") {
        None => None,
        Some(i @ (Value::String(_) | Value::Null)) => Some(i.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n.clone())),
        Some(_) => return Err((Value::Null, RpcError::new(INVALID_REQUEST, "Invalid JSON-RPC Request: id must be a string or an integer"))),
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((answer_id, RpcError::new(INVALID_REQUEST, "Invalid JSON-RPC Request: jsonrpc must be \"2.0\"")));
    }
    let Some(method) = o.get("method").and_then(Value::as_str) else {
        return Err((answer_id, RpcError::new(INVALID_REQUEST, "Invalid JSON-RPC Request: method must be a string")));
    };
    let params = o.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
        return Err((answer_id, RpcError::new(INVALID_REQUEST, "Invalid JSON-RPC Request: params must be an object or an array")));
    }
    Ok(Request { id, method: method.to_string(), params, raw: v.clone() })
}

pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn failure(id: &Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()})
}
