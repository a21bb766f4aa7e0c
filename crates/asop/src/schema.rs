//! Each method's request checked against the spec's own JSON Schema
//! (`schemas/asop-1.0.0.schema.json`, a byte-for-byte copy of the ASOP 1.0.0 schema).
//!
//! Two of its definitions are broken as published: `A2AMessage` and `MCPMessage` put
//! `"required": ["message"]` inside `properties`, so a schema validator would read
//! "required" as a property name. For those two methods the intended rule (an object
//! `params.message`) is checked here by hand (docs/interop.md).

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonschema::{Draft, Registry, Validator};
use serde_json::{json, Value};

use crate::jsonrpc::{RpcError, INVALID_PARAMS};

pub const SCHEMA: &str = include_str!("../schemas/asop-1.0.0.schema.json");
const BASE: &str = "https://gatehouse.invalid/asop-1.0.0.schema.json";

fn definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "steps/agentTrigger" => "AgentTriggerStep",
        "steps/message" => "MessageStep",
        "steps/toolCallRequest" => "ToolCallRequestStep",
        "steps/toolCallResult" => "ToolCallResultStep",
        "steps/knowledgeRetrieval" => "KnowledgeRetrievalStep",
        "steps/memoryStore" => "MemoryStoreStep",
        "steps/memoryContextRetrieval" => "MemoryContextRetrievalStep",
        "ping" => "PingRequest",
        _ => return None,
    })
}

fn validators() -> &'static HashMap<&'static str, Validator> {
    static V: OnceLock<HashMap<&'static str, Validator>> = OnceLock::new();
    V.get_or_init(|| {
        let mut doc: Value = serde_json::from_str(SCHEMA).expect("the embedded schema is JSON");
        // Some references of the published schema point at `#/definitions/…`, a name the
        // document does not have (its definitions are under `$defs`): an alias resolves them.
        if let Some(o) = doc.as_object_mut() {
            let defs = o.get("$defs").cloned().unwrap_or_default();
            o.insert("definitions".into(), defs);
        }
        let registry = Registry::new().add(BASE, doc).and_then(|r| r.prepare()).expect("the schema registers");
        crate::METHODS
            .iter()
            .filter_map(|m| definition(m).map(|d| (*m, d)))
            .map(|(m, d)| {
                let v = jsonschema::options()
                    .with_draft(Draft::Draft202012)
                    .should_validate_formats(true)
                    .with_registry(&registry)
                    .build(&json!({"$ref": format!("{BASE}#/$defs/{d}")}))
                    .unwrap_or_else(|e| panic!("{d} compiles: {e}"));
                (m, v)
            })
            .collect()
    })
}

fn invalid(field: String, message: String) -> RpcError {
    RpcError::new(INVALID_PARAMS, format!("Invalid method parameters: {field}: {message}")).with_data(json!({"field": field, "reason": message}))
}

/// Checks a whole request object of a known method; the error (-32602) names the deepest
/// field at fault as a JSON pointer.
pub fn check(method: &str, request: &Value) -> Result<(), RpcError> {
    if matches!(method, "protocols/A2A" | "protocols/MCP") {
        return match request.pointer("/params/message") {
            Some(Value::Object(_)) => Ok(()),
            Some(_) => Err(invalid("/params/message".into(), format!("the {} message must be an object", method.trim_start_matches("protocols/")))),
            None => Err(invalid("/params/message".into(), "is required".into())),
        };
    }
    let Some(v) = validators().get(method) else { return Ok(()) };
    // ping: the published PingRequest requires `timestamp` beside `method` instead of in
    // `params` (where the spec's text puts it); the text's form is what is checked.
    let pinged;
    let request = if method == "ping" {
        let Some(ts) = request.pointer("/params/timestamp").cloned() else {
            return Err(invalid("/params/timestamp".into(), "is required".into()));
        };
        let mut r = request.clone();
        if let Some(o) = r.as_object_mut() {
            o.insert("timestamp".into(), ts);
        }
        pinged = r;
        &pinged
    } else {
        request
    };
    // steps/toolCallResult: the spec's text puts `executionId` and `result` in params, its
    // schema under `params.toolCallResult`. Both are read; the text form is checked as the
    // schema form and its errors named by where the sender put the field.
    let text_form =
        method == "steps/toolCallResult" && request.pointer("/params/toolCallResult").is_none() && request.get("params").is_some_and(Value::is_object);
    let normalized;
    let request = if text_form {
        let mut r = request.clone();
        let Some(p) = r.get_mut("params").and_then(Value::as_object_mut) else { return Err(invalid("/params".into(), "must be an object".into())) };
        let mut inner = serde_json::Map::new();
        for k in ["executionId", "result"] {
            if let Some(x) = p.remove(k) {
                inner.insert(k.into(), x);
            }
        }
        p.insert("toolCallResult".into(), Value::Object(inner));
        normalized = r;
        &normalized
    } else {
        request
    };
    let rename = |f: String| if text_form { f.replacen("/params/toolCallResult/", "/params/", 1) } else { f };
    match gatehouse_schema::violation(v, request, gatehouse_schema::Pick::Deepest, None) {
        None => Ok(()),
        Some((field, message)) => Err(invalid(rename(field), message)),
    }
}
