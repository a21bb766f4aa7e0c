//! The envelope (spec 3.1–3.3): parsing and field validation, steps 2–3 of spec 5.1.

use base64::Engine as _;
use chrono::{DateTime, Utc};

use crate::json::{self, Json};
use crate::receipt::{ErrorCode, Rejection};

/// Spec 3.3 recommended default; also the inbox-wide limit enforced before parsing.
pub const MAX_ENVELOPE_BYTES: usize = 10 * 1024 * 1024;
/// Spec 3.3 recommended default for the prompt.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;
pub const MIN_NONCE_BYTES: usize = 16;
const MAX_ID_CHARS: usize = 256;

/// Top-level fields the signature covers (plus `signature` itself).
const SIGNED_FIELDS: [&str; 13] = [
    "version",
    "envelope_id",
    "sender",
    "recipient",
    "timestamp",
    "expires_at",
    "nonce",
    "scope",
    "payload",
    "signature",
    "conversation_id",
    "in_reply_to",
    "delegation",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub version: String,
    pub envelope_id: String,
    /// As sent; compare with [`Envelope::sender_key`], which is lower-cased.
    pub sender: String,
    pub recipient: String,
    pub timestamp: String,
    pub expires_at: String,
    pub nonce: String,
    pub scope: String,
    pub payload: Payload,
    pub signature: String,
    pub conversation_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub delegation: Option<Delegation>,
    /// Top-level fields outside the twelve signed ones (e.g. EPP v1.1 `integrity`).
    /// The signature does not cover them; they are kept and shown as unsigned.
    pub unsigned_extensions: Vec<(String, Json)>,
    pub timestamp_utc: DateTime<Utc>,
    pub expires_at_utc: DateTime<Utc>,
    pub nonce_bytes: Vec<u8>,
    pub signature_bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub prompt: String,
    pub context: Option<Json>,
    pub metadata: Option<Json>,
    pub payload_type: Option<String>,
    /// The payload object exactly as received, for canonicalisation.
    pub raw: Json,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    pub on_behalf_of: String,
    pub authorization: Option<String>,
    pub raw: Json,
}

impl Envelope {
    pub fn sender_key(&self) -> String {
        self.sender.to_ascii_lowercase()
    }

    pub fn recipient_key(&self) -> String {
        self.recipient.to_ascii_lowercase()
    }

    /// Steps 2 and 3 of spec 5.1: JSON structure and every field's format, then the version.
    pub fn parse(bytes: &[u8]) -> Result<Envelope, Rejection> {
        let doc = json::parse(bytes).map_err(|e| Rejection::new(ErrorCode::InvalidFormat, format!("invalid JSON: {e}")))?;
        let id = readable_envelope_id(&doc);
        parse_fields(&doc).map_err(|r| r.with_envelope_id(id))
    }
}

/// The envelope_id to echo in a receipt, if the input has a sensible one.
pub fn readable_envelope_id(doc: &Json) -> Option<String> {
    doc.get("envelope_id").and_then(Json::as_str).filter(|s| valid_id(s)).map(str::to_string)
}

fn bad(message: impl Into<String>) -> Rejection {
    Rejection::new(ErrorCode::InvalidFormat, message)
}

fn valid_id(s: &str) -> bool {
    !s.is_empty() && s.chars().count() <= MAX_ID_CHARS && !s.chars().any(char::is_control)
}

fn is_hex_key(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Scope and payload_type: "alphanumeric and hyphens only" (ASCII, non-empty).
pub fn is_scope_like(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// ISO-8601 in UTC: RFC 3339 with `Z` or a zero offset.
pub fn parse_utc(field: &str, s: &str) -> Result<DateTime<Utc>, Rejection> {
    let t = DateTime::parse_from_rfc3339(s).map_err(|e| bad(format!("{field} is not an ISO-8601 date-time ({e}): {s:?}")))?;
    if t.offset().local_minus_utc() != 0 {
        return Err(bad(format!("{field} must be in UTC (Z or +00:00): {s:?}")));
    }
    Ok(t.with_timezone(&Utc))
}

pub(crate) fn decode_b64(s: &str) -> Option<Vec<u8>> {
    let engine = base64::engine::general_purpose::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(s).ok()
}

/// A required string field.
fn req_str<'a>(obj: &'a Json, name: &str) -> Result<&'a str, Rejection> {
    match obj.get(name) {
        None | Some(Json::Null) => Err(bad(format!("missing required field {name}"))),
        Some(Json::String(s)) => Ok(s),
        Some(other) => Err(bad(format!("{name} must be a string, not {}", other.kind()))),
    }
}

/// An optional string field; `null` counts as absent.
fn opt_str<'a>(obj: &'a Json, name: &str) -> Result<Option<&'a str>, Rejection> {
    match obj.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(bad(format!("{name} must be a string, not {}", other.kind()))),
    }
}

fn opt_object(obj: &Json, name: &str) -> Result<Option<Json>, Rejection> {
    match obj.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(v @ Json::Object(_)) => Ok(Some(v.clone())),
        Some(other) => Err(bad(format!("{name} must be an object, not {}", other.kind()))),
    }
}

fn parse_fields(doc: &Json) -> Result<Envelope, Rejection> {
    let Json::Object(members) = doc else {
        return Err(bad(format!("an envelope must be a JSON object, not {}", doc.kind())));
    };

    // Structure first (spec 5.1 step 2), version second (step 3).
    let version = req_str(doc, "version")?;
    let envelope_id = req_str(doc, "envelope_id")?;
    if !valid_id(envelope_id) {
        return Err(bad("envelope_id must be 1-256 characters without control characters"));
    }
    let sender = req_str(doc, "sender")?;
    if !is_hex_key(sender) {
        return Err(bad("sender must be a public key of 64 hexadecimal characters"));
    }
    let recipient = req_str(doc, "recipient")?;
    if !is_hex_key(recipient) {
        return Err(bad("recipient must be a public key of 64 hexadecimal characters"));
    }
    let timestamp = req_str(doc, "timestamp")?;
    let timestamp_utc = parse_utc("timestamp", timestamp)?;
    let expires_at = req_str(doc, "expires_at")?;
    let expires_at_utc = parse_utc("expires_at", expires_at)?;
    if expires_at_utc <= timestamp_utc {
        return Err(bad("expires_at must be later than timestamp"));
    }
    let nonce = req_str(doc, "nonce")?;
    let nonce_bytes = decode_b64(nonce).ok_or_else(|| bad("nonce is not valid base64"))?;
    if nonce_bytes.len() < MIN_NONCE_BYTES {
        return Err(bad(format!("nonce must be at least {MIN_NONCE_BYTES} random bytes, got {}", nonce_bytes.len())));
    }
    let scope = req_str(doc, "scope")?;
    if !is_scope_like(scope) {
        return Err(bad(format!("scope must be alphanumeric characters and hyphens only: {scope:?}")));
    }
    let payload_json = match doc.get("payload") {
        None | Some(Json::Null) => return Err(bad("missing required field payload")),
        Some(p @ Json::Object(_)) => p,
        Some(other) => return Err(bad(format!("payload must be an object, not {}", other.kind()))),
    };
    let payload = parse_payload(payload_json)?;
    let signature = req_str(doc, "signature")?;
    let signature_bytes = decode_b64(signature).ok_or_else(|| bad("signature is not valid base64"))?;

    let conversation_id = opt_str(doc, "conversation_id")?;
    if let Some(c) = conversation_id {
        if uuid::Uuid::parse_str(c).is_err() {
            return Err(bad(format!("conversation_id must be a UUID: {c:?}")));
        }
    }
    let in_reply_to = opt_str(doc, "in_reply_to")?;
    if let Some(r) = in_reply_to {
        if !valid_id(r) {
            return Err(bad("in_reply_to must be an envelope_id (1-256 characters, no control characters)"));
        }
    }
    let delegation = match doc.get("delegation") {
        None | Some(Json::Null) => None,
        Some(d @ Json::Object(_)) => {
            let on_behalf_of = req_str(d, "on_behalf_of").map_err(|r| Rejection { message: format!("delegation: {}", r.message), ..r })?;
            if !is_hex_key(on_behalf_of) {
                return Err(bad("delegation.on_behalf_of must be a public key of 64 hexadecimal characters"));
            }
            let authorization = opt_str(d, "authorization").map_err(|r| Rejection { message: format!("delegation: {}", r.message), ..r })?;
            Some(Delegation { on_behalf_of: on_behalf_of.to_string(), authorization: authorization.map(str::to_string), raw: d.clone() })
        }
        Some(other) => return Err(bad(format!("delegation must be an object, not {}", other.kind()))),
    };

    if version != "1" {
        return Err(Rejection::new(ErrorCode::UnsupportedVersion, format!("version {version:?} is not supported; this inbox speaks EPP version \"1\"")));
    }

    let unsigned_extensions = members.iter().filter(|(k, _)| !SIGNED_FIELDS.contains(&k.as_str())).cloned().collect();

    Ok(Envelope {
        version: version.to_string(),
        envelope_id: envelope_id.to_string(),
        sender: sender.to_string(),
        recipient: recipient.to_string(),
        timestamp: timestamp.to_string(),
        expires_at: expires_at.to_string(),
        nonce: nonce.to_string(),
        scope: scope.to_string(),
        payload,
        signature: signature.to_string(),
        conversation_id: conversation_id.map(str::to_string),
        in_reply_to: in_reply_to.map(str::to_string),
        delegation,
        unsigned_extensions,
        timestamp_utc,
        expires_at_utc,
        nonce_bytes,
        signature_bytes,
    })
}

fn parse_payload(p: &Json) -> Result<Payload, Rejection> {
    let prompt = match p.get("prompt") {
        None | Some(Json::Null) => return Err(bad("missing required field payload.prompt")),
        Some(Json::String(s)) => s,
        Some(other) => return Err(bad(format!("payload.prompt must be a string, not {}", other.kind()))),
    };
    if prompt.trim().is_empty() {
        return Err(bad("payload.prompt is empty"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(Rejection::new(ErrorCode::SizeExceeded, format!("payload.prompt is {} bytes; the limit is {MAX_PROMPT_BYTES}", prompt.len())));
    }
    let context = opt_object(p, "context").map_err(prefix_payload)?;
    let metadata = opt_object(p, "metadata").map_err(prefix_payload)?;
    let payload_type = opt_str(p, "payload_type").map_err(prefix_payload)?;
    if let Some(t) = payload_type {
        if !is_scope_like(t) {
            return Err(bad(format!("payload.payload_type must be alphanumeric characters and hyphens only: {t:?}")));
        }
    }
    Ok(Payload { prompt: prompt.clone(), context, metadata, payload_type: payload_type.map(str::to_string), raw: p.clone() })
}

fn prefix_payload(r: Rejection) -> Rejection {
    Rejection { message: format!("payload.{}", r.message), ..r }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> serde_json::Value {
        serde_json::json!({
            "version": "1",
            "envelope_id": "00000000-0000-4000-8000-000000000001",
            "sender": "d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737",
            "recipient": "a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f0",
            "timestamp": "2026-01-10T12:00:00Z",
            "expires_at": "2099-01-01T00:00:00Z",
            "nonce": "AQIDBAUGBwgJCgsMDQ4PEA==",
            "scope": "support",
            "payload": {"prompt": "hi"},
            "signature": "AAAA"
        })
    }

    fn code_of(v: &serde_json::Value) -> Result<(), (ErrorCode, String)> {
        Envelope::parse(v.to_string().as_bytes()).map(|_| ()).map_err(|r| (r.code, r.message))
    }

    #[test]
    fn accepts_a_well_formed_envelope() {
        let e = Envelope::parse(base().to_string().as_bytes()).unwrap();
        assert_eq!(e.nonce_bytes.len(), 16);
        assert!(e.unsigned_extensions.is_empty());
    }

    #[test]
    fn each_required_field_is_required() {
        for f in ["version", "envelope_id", "sender", "recipient", "timestamp", "expires_at", "nonce", "scope", "payload", "signature"] {
            let mut v = base();
            v.as_object_mut().unwrap().remove(f);
            let (code, msg) = code_of(&v).unwrap_err();
            assert_eq!(code, ErrorCode::InvalidFormat, "{f}");
            assert!(msg.contains(f), "{f}: {msg}");
        }
    }

    #[test]
    fn field_formats_are_checked() {
        let cases: Vec<(&str, serde_json::Value, &str)> = vec![
            ("sender", "abc".into(), "sender"),
            ("recipient", "zz".repeat(32).into(), "recipient"),
            ("timestamp", "yesterday".into(), "timestamp"),
            ("timestamp", "2026-01-10T12:00:00+02:00".into(), "UTC"),
            ("expires_at", "2026-01-10T11:00:00Z".into(), "later than"),
            ("nonce", "AQIDBAUGBwg=".into(), "at least 16"),
            ("nonce", "!!!".into(), "base64"),
            ("scope", "has space".into(), "scope"),
            ("scope", "".into(), "scope"),
            ("conversation_id", "not-a-uuid".into(), "conversation_id"),
            ("envelope_id", "a\nb".into(), "envelope_id"),
            ("payload", serde_json::json!({"prompt": "x", "payload_type": "a b"}), "payload_type"),
            ("payload", serde_json::json!({"prompt": "x", "context": []}), "context"),
            ("payload", serde_json::json!({"prompt": "  "}), "empty"),
            ("payload", serde_json::json!({"prompt": 5}), "prompt"),
            ("delegation", serde_json::json!({"on_behalf_of": "12"}), "on_behalf_of"),
            ("delegation", serde_json::json!({}), "on_behalf_of"),
            ("version", 1.into(), "version"),
        ];
        for (field, value, needle) in cases {
            let mut v = base();
            v[field] = value.clone();
            let (code, msg) = code_of(&v).unwrap_err();
            assert_eq!(code, ErrorCode::InvalidFormat, "{field}={value}");
            assert!(msg.contains(needle), "{field}={value}: {msg}");
        }
    }

    #[test]
    fn version_is_checked_after_structure() {
        let mut v = base();
        v["version"] = "2".into();
        assert_eq!(code_of(&v).unwrap_err().0, ErrorCode::UnsupportedVersion);
        v["nonce"] = "short".into();
        assert_eq!(code_of(&v).unwrap_err().0, ErrorCode::InvalidFormat);
    }

    #[test]
    fn oversized_prompt_is_size_exceeded() {
        let mut v = base();
        v["payload"]["prompt"] = "a".repeat(MAX_PROMPT_BYTES + 1).into();
        assert_eq!(code_of(&v).unwrap_err().0, ErrorCode::SizeExceeded);
    }

    #[test]
    fn nulls_count_as_absent_and_extensions_are_kept_unsigned() {
        let mut v = base();
        v["conversation_id"] = serde_json::Value::Null;
        v["delegation"] = serde_json::Value::Null;
        v["payload"]["metadata"] = serde_json::Value::Null;
        v["integrity"] = serde_json::json!({"alg": "sha256"});
        let e = Envelope::parse(v.to_string().as_bytes()).unwrap();
        assert_eq!(e.conversation_id, None);
        assert_eq!(e.payload.metadata, None);
        assert_eq!(e.unsigned_extensions.len(), 1);
    }

    #[test]
    fn duplicate_keys_are_rejected_and_id_echoed() {
        let text = base().to_string().replacen("\"scope\":\"support\"", "\"scope\":\"support\",\"scope\":\"admin\"", 1);
        let r = Envelope::parse(text.as_bytes()).unwrap_err();
        assert_eq!(r.code, ErrorCode::InvalidFormat);
        assert!(r.message.contains("duplicate"), "{}", r.message);
        // The duplicate is found before the document is complete, so no id can be trusted.
        let mut v = base();
        v["sender"] = "bad".into();
        let r = Envelope::parse(v.to_string().as_bytes()).unwrap_err();
        assert_eq!(r.envelope_id.as_deref(), Some("00000000-0000-4000-8000-000000000001"));
    }
}
