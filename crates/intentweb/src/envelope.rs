//! The request/response envelope (§3.2, §3.3), checked against the spec's own JSON Schema
//! (`schemas/intent-envelope.schema.json`, a byte-for-byte copy).

use std::sync::OnceLock;

use jsonschema::{Draft, Validator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::FieldError;

pub const SCHEMA: &str = include_str!("../schemas/intent-envelope.schema.json");
pub const PROTOCOL_VERSION: &str = "1.0";
/// Envelopes larger than this are refused.
pub const MAX_ENVELOPE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum FlowType {
    IntentRequest,
    InformationRequest,
    InformationResponse,
    ClarificationRequest,
    ExecutionResult,
    Error,
}

impl FlowType {
    pub fn as_str(self) -> &'static str {
        match self {
            FlowType::IntentRequest => "intent_request",
            FlowType::InformationRequest => "information_request",
            FlowType::InformationResponse => "information_response",
            FlowType::ClarificationRequest => "clarification_request",
            FlowType::ExecutionResult => "execution_result",
            FlowType::Error => "error",
        }
    }

    /// `execution_result` and `error` end an intent (§3.4).
    pub fn is_terminal(self) -> bool {
        matches!(self, FlowType::ExecutionResult | FlowType::Error)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainEntry {
    pub actor_type: String,
    pub actor_id: String,
    pub timestamp: String,
    pub signature: String,
    /// The signature's algorithm (Gatehouse: `EdDSA`); absent in unsigned examples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// The signing key, as a did:key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub query_hash: String,
    pub nonce: String,
    pub timestamp: String,
    pub chain: Vec<ChainEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explicability {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpretation: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_logic: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites_considered: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub protocol_version: String,
    pub flow_type: FlowType,
    pub message: String,
    pub interaction_id: String,
    pub attribution: Attribution,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_information: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected_information: Option<serde_json::Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explicability: Vec<Explicability>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

fn validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("the embedded schema is JSON");
        jsonschema::options().with_draft(Draft::Draft202012).should_validate_formats(true).build(&schema).expect("the embedded schema compiles")
    })
}

/// Checks `v` against the envelope schema; the error names the deepest field at fault.
pub fn check(v: &Value) -> Result<(), FieldError> {
    match gatehouse_schema::violation(validator(), v, gatehouse_schema::Pick::Deepest, None) {
        None => Ok(()),
        Some((field, message)) => Err(FieldError::new(field, message)),
    }
}

impl Envelope {
    /// Reads an envelope from bytes: JSON, the schema, then the types.
    pub fn parse(bytes: &[u8]) -> Result<Envelope, FieldError> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(FieldError::new("/", format!("the envelope is larger than {MAX_ENVELOPE_BYTES} bytes")));
        }
        let v: Value = serde_json::from_slice(bytes).map_err(|e| FieldError::new("/", format!("not JSON: {e}")))?;
        Self::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<Envelope, FieldError> {
        check(v)?;
        serde_json::from_value(v.clone()).map_err(|e| FieldError::new("/", e.to_string()))
    }
}
