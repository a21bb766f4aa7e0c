//! One JSON-RPC message peeked at: its kind, id and method. The rest (a request's
//! `params`, a response's `result`) is skipped, not kept: a 10 MB result passes through
//! as the bytes it came as, read once. A key given twice is refused (a message that
//! says two things is not passed on).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::McpError;

/// A request's id (a string or an integer), kept as canonical JSON text: a string
/// decoded and written again (`"a\u002d1"` and `"a-1"` are one id), an integer's digits.
/// Responses are matched to requests by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(String);

impl Id {
    /// The id's JSON text, ready to put back in a message.
    pub fn json(&self) -> &str {
        &self.0
    }

    /// An id from its JSON text (a string or an integer), made canonical.
    pub(crate) fn from_text(text: &str) -> Result<Id, McpError> {
        match text.as_bytes().first() {
            Some(b'"') => {
                let s: String = serde_json::from_str(text).map_err(|e| McpError::Malformed(format!("an id: {e}")))?;
                Ok(Id(serde_json::to_string(&s).unwrap_or_default()))
            }
            Some(b'-' | b'0'..=b'9') if text.len() > usize::from(text.starts_with('-')) && text.bytes().skip(1).all(|b| b.is_ascii_digit()) => {
                Ok(Id(text.to_string()))
            }
            _ => Err(McpError::Malformed(format!("an id must be a string or an integer, not {}", text.chars().take(40).collect::<String>()))),
        }
    }

    /// An id Gatehouse makes for a request of its own (never one a side could send:
    /// sides' ids are numbers or strings without this prefix, and ids are per direction).
    pub fn ours(n: u64) -> Id {
        Id(format!("\"gatehouse-{n}\""))
    }
}

/// What a message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A request, answered by a response with the same id.
    Request { id: Id, method: String },
    /// A notification: no answer.
    Notification { method: String },
    /// A response to a request of the other side's.
    Response { id: Id, error: bool },
}

#[derive(Deserialize)]
struct Peeked<'a> {
    jsonrpc: Option<&'a str>,
    /// Present (even as `null`, which is refused) or absent.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    method: Option<String>,
    params: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The same, read from a reader (nothing borrowed).
#[derive(Deserialize)]
struct PeekedRead {
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present_read")]
    id: Option<Box<RawValue>>,
    method: Option<String>,
    params: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

fn present_read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

/// [`peek`] for a message read in pieces (a long one): one pass, nothing of it kept.
pub fn peek_read(r: impl std::io::Read) -> Result<Kind, McpError> {
    let p: PeekedRead = serde_json::from_reader(r).map_err(|e| McpError::Malformed(e.to_string()))?;
    let _ = p.params;
    classify(p.jsonrpc.as_deref(), p.id.as_deref(), p.method, p.result.is_some(), p.error.is_some())
}

/// Reads what a message is, in one pass over it.
pub fn peek(bytes: &[u8]) -> Result<Kind, McpError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return Err(McpError::Batch);
    }
    let p: Peeked<'_> = serde_json::from_slice(bytes).map_err(|e| McpError::Malformed(e.to_string()))?;
    let _ = p.params;
    classify(p.jsonrpc, p.id, p.method, p.result.is_some(), p.error.is_some())
}

fn classify(jsonrpc: Option<&str>, id: Option<&RawValue>, method: Option<String>, result: bool, error: bool) -> Result<Kind, McpError> {
    if jsonrpc != Some("2.0") {
        return Err(McpError::Malformed("\"jsonrpc\" must be \"2.0\"".into()));
    }
    let id = match id {
        None => None,
        Some(raw) => Some(id_of(raw)?),
    };
    match (id, method, result, error) {
        (Some(id), Some(method), false, false) => Ok(Kind::Request { id, method }),
        (None, Some(method), false, false) => Ok(Kind::Notification { method }),
        (Some(id), None, true, false) => Ok(Kind::Response { id, error: false }),
        (Some(id), None, false, true) => Ok(Kind::Response { id, error: true }),
        (_, Some(_), _, _) => Err(McpError::Malformed("a request carries a result or an error".into())),
        (_, None, true, true) => Err(McpError::Malformed("a response carries both a result and an error".into())),
        (None, None, _, _) => Err(McpError::Malformed("neither a method nor an id".into())),
        (Some(_), None, false, false) => Err(McpError::Malformed("a response with neither a result nor an error".into())),
    }
}

/// An id is a string or an integer (MCP: never null).
fn id_of(raw: &RawValue) -> Result<Id, McpError> {
    Id::from_text(raw.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_told_apart_and_what_follows_is_not_kept() {
        let req = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}"#;
        assert_eq!(peek(req).unwrap(), Kind::Request { id: Id("7".into()), method: "tools/call".into() });
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(peek(note).unwrap(), Kind::Notification { method: "notifications/initialized".into() });
        let ok = br#"{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(peek(ok).unwrap(), Kind::Response { id: Id("\"a-1\"".into()), error: false });
        let err = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#;
        assert_eq!(peek(err).unwrap(), Kind::Response { id: Id("3".into()), error: true });
        let escaped = br#"{"jsonrpc":"2.0","id":"a-1","result":{}}"#;
        assert_eq!(peek(escaped).unwrap(), Kind::Response { id: Id("\"a-1\"".into()), error: false }, "one id however it is written");
    }

    #[test]
    fn a_message_that_says_two_things_or_is_no_message_is_refused() {
        for (bad, why) in [
            (&br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}"#[..], "duplicate field"),
            (br#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#, "duplicate field"),
            (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, "batch"),
            (br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "jsonrpc"),
            (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, "string or an integer"),
            (br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#, "string or an integer"),
            (br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#, "both"),
            (br#"{"jsonrpc":"2.0","id":1}"#, "neither a result"),
            (br#"{"jsonrpc":"2.0"}"#, "neither a method"),
            (b"not json", "expected"),
        ] {
            let e = peek(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{}: {e}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_large_result_is_peeked_at_in_one_pass() {
        let text = "x".repeat(10 * 1024 * 1024);
        let big = format!(r#"{{"jsonrpc":"2.0","id":9,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#);
        assert_eq!(peek(big.as_bytes()).unwrap(), Kind::Response { id: Id("9".into()), error: false });
        assert_eq!(peek_read(big.as_bytes()).unwrap(), Kind::Response { id: Id("9".into()), error: false });
    }

    #[test]
    fn a_message_read_in_pieces_is_told_apart_as_one_read_whole() {
        for m in [
            &br#"{"jsonrpc":"2.0","id":"a\u002d1","result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"no"}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        ] {
            // The same verdict and reason (a reader counts columns one further on).
            let why = |e: McpError| e.to_string().split(" at line").next().unwrap_or_default().to_string();
            assert_eq!(peek(m).map_err(why), peek_read(m).map_err(why), "{}", String::from_utf8_lossy(m));
        }
    }
}
