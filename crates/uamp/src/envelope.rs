//! Reading a UAMP envelope (spec 4, schema A.1).

use chrono::{DateTime, Utc};
use gatehouse_json::{self as json, Json};
use serde::Serialize;
use uuid::Uuid;

use crate::error::{Code, UampError};
use crate::jws::Compact;

/// Envelopes larger than this are refused with 4.13 before they are parsed; the
/// manifest advertises it as `limits.max_body_kb`.
pub const MAX_ENVELOPE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    Ask,
    Inform,
    Propose,
    Confirm,
    Deny,
    Progress,
    Cancel,
    Subscribe,
    Notify,
    Error,
}

impl Intent {
    pub const ALL: [Intent; 10] = [
        Intent::Ask,
        Intent::Inform,
        Intent::Propose,
        Intent::Confirm,
        Intent::Deny,
        Intent::Progress,
        Intent::Cancel,
        Intent::Subscribe,
        Intent::Notify,
        Intent::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Ask => "ask",
            Intent::Inform => "inform",
            Intent::Propose => "propose",
            Intent::Confirm => "confirm",
            Intent::Deny => "deny",
            Intent::Progress => "progress",
            Intent::Cancel => "cancel",
            Intent::Subscribe => "subscribe",
            Intent::Notify => "notify",
            Intent::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Intent> {
        Intent::ALL.into_iter().find(|i| i.as_str() == s)
    }

    /// Intents that open a stream (spec 10: NEW → IN_PROGRESS on ask / subscribe).
    pub fn opens_stream(self) -> bool {
        matches!(self, Intent::Ask | Intent::Subscribe)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Body {
    #[serde(rename = "type")]
    pub media_type: String,
    pub content: String,
    pub encoding: String,
    pub compression: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextRef {
    pub id: String,
    pub hash: String,
}

/// A structurally valid envelope (its signature is checked separately, against a key
/// the trust registry names).
#[derive(Debug, Clone)]
pub struct Envelope {
    /// As sent (bare or `urn:uuid:`), so replies quote it exactly.
    pub id: String,
    pub uuid: Uuid,
    pub ts: DateTime<Utc>,
    pub from: String,
    pub to: Vec<String>,
    pub intent: Intent,
    pub reply_to: Option<String>,
    pub context: Vec<ContextRef>,
    pub stream_id: Option<String>,
    pub delta_window: u32,
    pub body: Body,
    pub cap_token: Option<String>,
    pub sig: Compact,
    pub ext: Option<serde_json::Value>,
    /// The envelope as read (exact number text, member order), for the canonical form.
    pub raw: Json,
    /// The same as serde JSON, for storage and display.
    pub value: serde_json::Value,
}

// A UUID as the schema reads one (`schema::parse_uuid`).
pub use crate::schema::parse_uuid;

/// Whether a peer's stream id may be used as one: 1 to 128 of `A-Z a-z 0-9 . _ : -`,
/// not starting with a dot. It names a stream in a URL path, so nothing that could
/// change the path (`/`, `..`, `%`, `?`) gets through; it never names a file.
pub fn is_stream_id(s: &str) -> bool {
    (1..=128).contains(&s.len()) && !s.starts_with('.') && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

impl Envelope {
    pub fn parse(bytes: &[u8]) -> Result<Envelope, UampError> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(UampError::new(
                Code::PayloadTooLarge,
                "too_large",
                format!("the envelope is {} bytes; this inbox takes at most {MAX_ENVELOPE_BYTES}", bytes.len()),
            ));
        }
        let raw = json::parse(bytes).map_err(|e| UampError::invalid("/", format!("not valid JSON: {e}")))?;
        let value = raw.to_serde();
        crate::schema::check("envelope", &value)?;
        Envelope::from_checked(raw, value)
    }

    /// Reads the members of a schema-valid envelope.
    fn from_checked(raw: Json, value: serde_json::Value) -> Result<Envelope, UampError> {
        let s = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let id = s("id").unwrap_or_default();
        let uuid = parse_uuid(&id).ok_or_else(|| UampError::invalid("/id", "is not a UUID"))?;
        let ts_text = s("ts").unwrap_or_default();
        let ts =
            DateTime::parse_from_rfc3339(&ts_text).map_err(|e| UampError::invalid("/ts", format!("is not an RFC 3339 date-time: {e}")))?.with_timezone(&Utc);
        let intent = Intent::parse(value.get("intent").and_then(|v| v.as_str()).unwrap_or_default())
            .ok_or_else(|| UampError::invalid("/intent", "is not a UAMP intent"))?;
        let to = value.get("to").and_then(|v| v.as_array()).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let context = value
            .get("context")
            .and_then(|c| c.as_array())
            .map(|a| {
                a.iter()
                    .map(|c| ContextRef { id: c["id"].as_str().unwrap_or_default().to_string(), hash: c["hash"].as_str().unwrap_or_default().to_string() })
                    .collect()
            })
            .unwrap_or_default();
        let delta_window = match value.get("delta_window").and_then(|v| v.as_u64()) {
            None => crate::DEFAULT_DELTA_WINDOW,
            Some(n) => u32::try_from(n).map_err(|_| UampError::invalid("/delta_window", "is larger than 4294967295"))?,
        };
        let b = value.get("body").unwrap_or(&serde_json::Value::Null);
        let bs = |k: &str, d: &str| b.get(k).and_then(|v| v.as_str()).unwrap_or(d).to_string();
        let body = Body { media_type: bs("type", ""), content: bs("content", ""), encoding: bs("encoding", "utf-8"), compression: bs("compression", "none") };
        let sig = Compact::parse(&s("sig").unwrap_or_default()).map_err(|e| UampError::invalid("/sig", e))?;
        if !sig.payload_b64.is_empty() {
            return Err(UampError::invalid("/sig", "must be a detached JWS (an empty payload part, RFC 7515 Appendix F)"));
        }
        Ok(Envelope {
            id,
            uuid,
            ts,
            from: s("from").unwrap_or_default(),
            to,
            intent,
            reply_to: s("reply_to"),
            context,
            stream_id: s("stream_id"),
            delta_window,
            body,
            cap_token: s("cap_token"),
            sig,
            ext: value.get("ext").cloned(),
            raw,
            value,
        })
    }

    /// Whether `id` is among the recipients.
    pub fn is_for(&self, id: &str) -> bool {
        self.to.iter().any(|t| t == id)
    }
}
