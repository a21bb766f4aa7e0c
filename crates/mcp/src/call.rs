//! A `tools/call` read strictly: the whole message with the strict reader (a key given
//! twice anywhere refuses it, so the arguments the user is shown are the ones the server
//! reads), then the tool's name, its arguments and the progress token the client asked to
//! be told progress under.

use gatehouse_json::{Json, NumberStyle, Style};
use sha2::{Digest, Sha256};

use crate::message::Id;
use crate::McpError;

/// A call of one tool, as the client asked it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: Id,
    pub name: String,
    /// An object (absent in the request: an empty one).
    pub arguments: Json,
    /// `params._meta.progressToken`, as written: what the client is told progress under
    /// while the call waits for the user.
    pub progress_token: Option<String>,
}

/// The style arguments are written back in: as compact as they came, numbers as written.
const COMPACT: Style = Style { sort_keys: false, ascii: false, numbers: NumberStyle::AsSent };

impl ToolCall {
    /// Reads a `tools/call` request.
    pub fn read(bytes: &[u8]) -> Result<ToolCall, McpError> {
        let msg = gatehouse_json::parse(bytes).map_err(|e| McpError::Malformed(e.to_string()))?;
        if msg.get("method").and_then(Json::as_str) != Some("tools/call") {
            return Err(McpError::Malformed("not a tools/call request".into()));
        }
        let id = match msg.get("id") {
            Some(j @ (Json::String(_) | Json::Number(_))) => Id::from_text(&gatehouse_json::to_compact(j, COMPACT))?,
            _ => return Err(McpError::Malformed("a tools/call needs an id (a string or an integer)".into())),
        };
        let params = msg.get("params").ok_or_else(|| McpError::Malformed("a tools/call needs params".into()))?;
        let name = match params.get("name") {
            Some(Json::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(McpError::Malformed("a tools/call names its tool (params.name, a string)".into())),
        };
        let arguments = match params.get("arguments") {
            None | Some(Json::Null) => Json::Object(Vec::new()),
            Some(a @ Json::Object(_)) => a.clone(),
            Some(other) => return Err(McpError::Malformed(format!("the arguments of a tools/call are an object, not {}", other.kind()))),
        };
        let progress_token = match params.get("_meta").and_then(|m| m.get("progressToken")) {
            Some(t @ (Json::String(_) | Json::Number(_))) => Some(gatehouse_json::to_compact(t, COMPACT)),
            _ => None,
        };
        Ok(ToolCall { id, name, arguments, progress_token })
    }

    /// The arguments as the server will read them (compact, in the order sent).
    pub fn arguments_json(&self) -> String {
        gatehouse_json::to_compact(&self.arguments, COMPACT)
    }

    /// What a decision on this call is bound to: the tool and exactly these arguments.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.name.as_bytes());
        h.update([0]);
        h.update(self.arguments_json().as_bytes());
        hex::encode(h.finalize())
    }

    /// The request again with `arguments` in place of the client's (a rule that changes
    /// what a call may do), written as compactly as the strict reader writes.
    pub fn with_arguments(bytes: &[u8], arguments: &Json) -> Result<Vec<u8>, McpError> {
        let mut msg = gatehouse_json::parse(bytes).map_err(|e| McpError::Malformed(e.to_string()))?;
        let Json::Object(members) = &mut msg else { return Err(McpError::Malformed("not an object".into())) };
        let Some((_, Json::Object(params))) = members.iter_mut().find(|(k, _)| k == "params") else {
            return Err(McpError::Malformed("a tools/call needs params".into()));
        };
        match params.iter_mut().find(|(k, _)| k == "arguments") {
            Some((_, a)) => *a = arguments.clone(),
            None => params.push(("arguments".to_string(), arguments.clone())),
        }
        Ok(gatehouse_json::to_compact(&msg, COMPACT).into_bytes())
    }

    /// The arguments in plain words, one line each (`name: value`): strings as they are,
    /// anything else as compact JSON. Nothing is cut: the user decides on all of it.
    pub fn in_words(&self) -> Vec<(String, String)> {
        let Json::Object(members) = &self.arguments else { return Vec::new() };
        members
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    Json::String(s) => s.clone(),
                    other => gatehouse_json::to_compact(other, COMPACT),
                };
                (k.clone(), value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_read_with_its_tool_arguments_and_progress_token() {
        let c = ToolCall::read(
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/u/notes.txt","lines":20},"_meta":{"progressToken":"p-1"}}}"#,
        )
        .unwrap();
        assert_eq!((c.id.json(), c.name.as_str(), c.progress_token.as_deref()), ("4", "read_file", Some("\"p-1\"")));
        assert_eq!(c.in_words(), [("path".to_string(), "/home/u/notes.txt".to_string()), ("lines".to_string(), "20".to_string())]);
        assert_eq!(c.arguments_json(), r#"{"path":"/home/u/notes.txt","lines":20}"#);
        let other =
            ToolCall::read(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/shadow","lines":20}}}"#)
                .unwrap();
        assert_ne!(c.digest(), other.digest(), "a decision is bound to the exact arguments");
    }

    #[test]
    fn a_call_given_other_arguments_keeps_everything_else() {
        let sent = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send_mail","arguments":{"to":"a@x.example","cc":"me@evil.example"},"_meta":{"progressToken":1}}}"#;
        let narrowed = gatehouse_json::parse(br#"{"to":"a@x.example"}"#).unwrap();
        let out = ToolCall::with_arguments(sent, &narrowed).unwrap();
        let again = ToolCall::read(&out).unwrap();
        assert_eq!((again.id.json(), again.arguments_json(), again.progress_token.as_deref()), ("4", r#"{"to":"a@x.example"}"#.to_string(), Some("1")));
    }

    #[test]
    fn arguments_that_could_be_read_two_ways_are_refused() {
        // A reader that kept the first "path" would show one file and the server read another.
        let twice =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/tmp/a","path":"/home/u/.ssh/id_rsa"}}}"#;
        assert!(ToolCall::read(twice).unwrap_err().to_string().contains("duplicate"), "refused");
        for (bad, why) in [
            (&br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#[..], "names its tool"),
            (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#, "are an object"),
            (br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#, "needs an id"),
            (br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, "not a tools/call"),
        ] {
            let e = ToolCall::read(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }
}
