//! Gatehouse's own answers in MCP's words.

use serde_json::{json, Value};

use crate::message::Id;

/// JSON-RPC's code for a request that is not valid.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for a message that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for an error of the receiver's own.
pub const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC's code for a method the receiver does not have.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The code of a call Gatehouse did not let through (in the range JSON-RPC leaves to
/// servers): the client shows its message.
pub const REFUSED: i64 = -32001;

/// An error answer to the request `id`, one line (no newline inside: stdio frames are lines).
pub fn error(id: &Id, code: i64, message: &str) -> Vec<u8> {
    let id: Value = serde_json::from_str(id.json()).unwrap_or(Value::Null);
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})).unwrap_or_default()
}

/// An error answer to a message whose id could not be read (JSON-RPC: id null).
pub fn unreadable(code: i64, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})).unwrap_or_default()
}

/// A progress notification under the client's token (`progress` counts up; `message` says
/// what the call waits for).
pub fn progress(token: &str, progress: u64, message: &str) -> Vec<u8> {
    let token: Value = serde_json::from_str(token).unwrap_or(Value::Null);
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": progress, "message": message}}))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{peek, Kind};

    #[test]
    fn our_answers_are_messages_the_other_side_reads_as_such() {
        let Kind::Request { id, .. } = peek(br#"{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{}}"#).unwrap() else { panic!() };
        let e = error(&id, REFUSED, "Gatehouse: you denied this call");
        assert!(!e.contains(&b'\n'));
        assert_eq!(peek(&e).unwrap(), Kind::Response { id, error: true });
        let p = progress("\"p-1\"", 2, "waiting for you to allow it");
        assert_eq!(peek(&p).unwrap(), Kind::Notification { method: "notifications/progress".into() });
    }
}
