//! What a wrap asks the gate about one call, and how the gate knows which server asks: one
//! JSON body at [`PATH`] on the inbox, signed with the wrapped server's own key (kept by
//! the wrap in a 0600 file; an app starts its servers without the keychain). The gate
//! knows a server by that key and the name it runs under ([`sender`]), never by the name
//! alone: another program calling itself "files" is another server, and knocks.
//!
//! A signature covers the time it was made, the path and the whole body; the gate takes it for
//! [`FRESH_FOR`] either side of its clock. A copy sent again within that time asks the
//! same question again and is answered again: nothing runs on the gate's side, the wrap
//! that asked is the only one that sends the call on.

use std::time::Duration;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where the gate's MCP door listens on the inbox: a call, and what a server listed.
pub const PATH: &str = "/mcp/v1/calls";
pub const TOOLS_PATH: &str = "/mcp/v1/tools";
/// A request of the server's for the user or their AI app (sampling, elicitation).
pub const ASKS_PATH: &str = "/mcp/v1/asks";
/// What answered a call that went on, as the wrap read it.
pub const ANSWERS_PATH: &str = "/mcp/v1/answers";
/// The headers a request is signed in.
pub const KEY_HEADER: &str = "gatehouse-mcp-key";
pub const TIME_HEADER: &str = "gatehouse-mcp-time";
pub const SIGNATURE_HEADER: &str = "gatehouse-mcp-signature";
/// How far a request's time may be from the gate's.
pub const FRESH_FOR: Duration = Duration::from_secs(120);
/// A request larger than this is refused (a call's arguments are shown to the user).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// What a signature is made over, before the time and the body's digest.
const CONTEXT: &str = "gatehouse-mcp-call/1";

/// One call, as the wrap asks the gate about it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asked {
    /// What the app's configuration calls the server (letters, digits, - and _).
    pub server: String,
    /// The app's session with it, as the wrap numbers them.
    pub session: String,
    /// The tool called.
    pub tool: String,
    /// Its arguments as the client sent them (an object).
    pub arguments: Value,
    /// The tool as the server last listed it, when it did: its description is shown with
    /// the call and read for risks.
    #[serde(default)]
    pub description: Option<String>,
}

/// Why a call that is not [`Asked::well_formed`] is refused.
pub const MALFORMED_CALL: &str = "a call names its server (letters, digits, - and _), its tool, and its arguments (an object)";

impl Asked {
    /// Whether it is a call as a wrap makes them.
    pub fn well_formed(&self) -> bool {
        name_ok(&self.server) && self.arguments.is_object() && !self.tool.is_empty()
    }
}

/// The tools a server listed, as the wrap asks the gate which may reach the client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listed {
    pub server: String,
    pub session: String,
    pub tools: Vec<gatehouse_mcp::tools::Pin>,
}

/// A request of the server's for the client (`sampling/createMessage`: run the app's model;
/// `elicitation/create`: ask the user something), as the wrap asks the gate whether it may
/// reach the app. The answer is an [`Answer`]: allow passes it on as it came.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerAsks {
    pub server: String,
    pub session: String,
    pub method: String,
    /// Its params as the server sent them.
    pub params: Value,
}

/// The methods a server may ask the client through the gate.
pub const SERVER_ASKS: [&str; 2] = ["sampling/createMessage", "elicitation/create"];

/// The gate's answer to a list: the tools held from the client, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Withheld {
    pub withhold: Vec<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// Set in the gate's answer to a call whose record is not yet on disk: a second line
/// follows, `{"kept": true}` once it is, or `{"kept": false, "error": …}` (the call may go
/// on meanwhile; its answer must not reach the app before).
pub const KEEPING: &str = "keeping";

/// The gate's answer to a call, and the step it keeps the call as (what answered it is
/// told about under that id, [`Answered`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decided {
    #[serde(flatten)]
    pub answer: Answer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

/// What answered calls of one server that went on, as its wrap read them, told a batch
/// at a time (at most [`MAX_ANSWERS`]): the server's results passed to the app as they
/// came; this is what the user sees of them in the calls' timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    pub server: String,
    pub answers: Vec<Answered>,
}

/// At most this many answers are told at once.
pub const MAX_ANSWERS: usize = 256;

/// What answered one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answered {
    /// The step the gate kept the call as ([`Decided::step`]).
    pub step: String,
    /// The answer's size in bytes, as the server sent it.
    pub bytes: u64,
    /// The server answered with an error, or its result says the tool failed.
    pub failed: bool,
    /// Its first words (at most [`crate::answered::EXCERPT`] characters).
    pub excerpt: String,
    /// What in its words looks like an attempt to steer the model (at most
    /// [`gatehouse_risk::MAX_FLAGS`]).
    pub flags: Vec<gatehouse_risk::Flag>,
}

impl Answered {
    /// The summary the relay made of the answer to the call kept as `step`.
    pub fn new(step: String, s: crate::answered::Summary) -> Answered {
        Answered { step, bytes: s.bytes, failed: s.failed, excerpt: s.excerpt, flags: s.flags }
    }

    /// Whether it is an answer as a wrap makes them.
    pub fn well_formed(&self) -> bool {
        !self.step.is_empty()
            && self.step.len() <= 64
            && self.excerpt.chars().count() <= crate::answered::EXCERPT
            && self.flags.len() <= gatehouse_risk::MAX_FLAGS
    }
}

/// The gate's answer to a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Answer {
    Allow,
    /// Send the call with these arguments instead.
    Modify {
        arguments: Value,
    },
    /// Refuse it, in words the client shows.
    Deny {
        message: String,
    },
}

impl Decided {
    /// An answer about a call that was not kept as a step (refused before it was judged).
    pub fn unkept(answer: Answer) -> Decided {
        Decided { answer, step: None }
    }

    /// What the relay does with the call, whose record is on disk once `on_disk` resolves
    /// (already, when `None`).
    pub fn called(self, on_disk: Option<crate::relay::OnDisk>) -> crate::relay::Called {
        crate::relay::Called { verdict: self.answer.for_call(), step: self.step, on_disk }
    }
}

impl Answer {
    /// What the relay does with a call the gate answered so.
    pub fn for_call(self) -> crate::relay::Verdict {
        use crate::relay::Verdict;
        match self {
            Answer::Allow => Verdict::Pass,
            Answer::Modify { arguments } => Verdict::Arguments(gatehouse_json::Json::from_serde(&arguments)),
            Answer::Deny { message } => Verdict::Refuse(format!("Gatehouse: {message}")),
        }
    }

    /// What the relay does with a server's request the gate answered so: passed on as it
    /// came, or not at all.
    pub fn for_request(self) -> crate::relay::Verdict {
        use crate::relay::Verdict;
        match self {
            Answer::Allow => Verdict::Pass,
            Answer::Modify { .. } => Verdict::Refuse("Gatehouse: a server's request is passed on as it came or not at all".into()),
            Answer::Deny { message } => Verdict::Refuse(format!("Gatehouse: {message}")),
        }
    }
}

/// Whether `name` can be a server's name.
pub fn name_ok(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The registry key of the server `name` running with the key `public_hex`.
pub fn sender(name: &str, public_hex: &str) -> String {
    format!("mcp:{}:{public_hex}", name.to_ascii_lowercase())
}

/// The name a registry key of this door's was made with.
pub fn name_of(sender: &str) -> Option<&str> {
    let rest = sender.strip_prefix("mcp:")?;
    let (name, key) = rest.rsplit_once(':')?;
    (name_ok(name) && key.len() == 64).then_some(name)
}

fn message(time: i64, path: &str, body: &[u8]) -> Vec<u8> {
    format!("{CONTEXT}\n{time}\n{path}\n{}", hex::encode(Sha256::digest(body))).into_bytes()
}

/// The three headers that sign `body`, sent to `path`, at `time` (seconds since the
/// epoch).
pub fn sign(key: &SigningKey, time: i64, path: &str, body: &[u8]) -> [(&'static str, String); 3] {
    let sig = key.sign(&message(time, path, body));
    [(KEY_HEADER, hex::encode(key.verifying_key().as_bytes())), (TIME_HEADER, time.to_string()), (SIGNATURE_HEADER, hex::encode(sig.to_bytes()))]
}

/// Why a request was not taken as its server's.
#[derive(Debug, PartialEq, Eq)]
pub enum Unsigned {
    /// A header is missing or not what it must be.
    Malformed(&'static str),
    /// Made too far from now.
    Stale { seconds: i64 },
    /// The signature does not verify.
    Forged,
}

impl std::fmt::Display for Unsigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsigned::Malformed(what) => write!(f, "the request's {what} is missing or malformed"),
            Unsigned::Stale { seconds } => {
                write!(f, "the request was signed {seconds} s away from this gate's clock (at most {} s are taken)", FRESH_FOR.as_secs())
            }
            Unsigned::Forged => f.write_str("the request's signature does not verify with the key it names"),
        }
    }
}

/// The key that signed `body` for `path` (64 lower-case hex digits), judged at `now`, from
/// the values of the three headers.
pub fn verify(key: Option<&str>, time: Option<&str>, signature: Option<&str>, path: &str, body: &[u8], now: i64) -> Result<String, Unsigned> {
    let public: [u8; 32] =
        key.and_then(|k| hex::decode(k).ok()).and_then(|b| b.try_into().ok()).ok_or(Unsigned::Malformed("key (gatehouse-mcp-key: 64 hex digits)"))?;
    let time: i64 = time.and_then(|t| t.parse().ok()).ok_or(Unsigned::Malformed("time (gatehouse-mcp-time: seconds since 1970)"))?;
    let sig: [u8; 64] = signature
        .and_then(|s| hex::decode(s).ok())
        .and_then(|b| b.try_into().ok())
        .ok_or(Unsigned::Malformed("signature (gatehouse-mcp-signature: 128 hex digits)"))?;
    let away = now.saturating_sub(time).saturating_abs();
    if away > FRESH_FOR.as_secs() as i64 {
        return Err(Unsigned::Stale { seconds: away });
    }
    let public = VerifyingKey::from_bytes(&public).map_err(|_| Unsigned::Forged)?;
    public.verify_strict(&message(time, path, body), &Signature::from_bytes(&sig)).map_err(|_| Unsigned::Forged)?;
    Ok(hex::encode(public.as_bytes()))
}
