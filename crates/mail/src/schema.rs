//! The MAIL 1.3 JSON Schemas, embedded as the spec ships them (`schemas/` holds byte-for-byte
//! copies; a test compares them with the spec's files), so validation is the spec's own.

use std::sync::OnceLock;

use jsonschema::{Draft, Registry, Validator};
use serde_json::{json, Value};

pub const CORE: &str = include_str!("../schemas/MAIL-core.schema.json");
pub const INTERSWARM: &str = include_str!("../schemas/MAIL-interswarm.schema.json");
const CORE_ID: &str = "https://github.com/charonlabs/mail/spec/MAIL-core.schema.json";

/// A message that does not follow the schemas (or cannot be read at all), with the JSON
/// pointer of the offending field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct MailError {
    /// JSON pointer into the message (`/message/recipient/address`), `/` for the whole.
    pub field: String,
    pub message: String,
}

impl MailError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        MailError { field: field.into(), message: message.into() }
    }
}

/// What to validate against: a MAILMessage, an interswarm wrapper, or one payload type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Message,
    Interswarm,
}

fn core() -> Value {
    serde_json::from_str(CORE).expect("the embedded core schema is JSON")
}

fn build(schema: &Value) -> Validator {
    let registry = Registry::new().add(CORE_ID, core()).and_then(|r| r.prepare()).expect("the core schema registers");
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .with_registry(&registry)
        .build(schema)
        .expect("the embedded schemas compile")
}

fn validator(kind: Kind) -> &'static Validator {
    static MESSAGE: OnceLock<Validator> = OnceLock::new();
    static INTER: OnceLock<Validator> = OnceLock::new();
    match kind {
        Kind::Message => MESSAGE.get_or_init(|| build(&json!({"$ref": format!("{CORE_ID}#/$defs/MAILMessage")}))),
        Kind::Interswarm => INTER.get_or_init(|| build(&serde_json::from_str(INTERSWARM).expect("the embedded interswarm schema is JSON"))),
    }
}

/// Checks `v` against the schema of `kind`. The error names the deepest field at fault: a
/// missing or unexpected member by its own name, a wrong payload member (the conditional
/// `msg_type` binding) by its path inside `message`/`payload`.
pub fn check(kind: Kind, v: &Value) -> Result<(), MailError> {
    let what = match kind {
        Kind::Message => "MAIL message",
        Kind::Interswarm => "MAIL interswarm message",
    };
    match gatehouse_schema::violation(validator(kind), v, gatehouse_schema::Pick::Deepest, Some(what)) {
        None => Ok(()),
        Some((field, message)) => Err(MailError::new(field, message)),
    }
}
