//! Spec section 9's error codes, and the reason behind each refusal.
//!
//! The spec names five codes; the reasons below are Gatehouse's finer grain (sent as
//! `reason` beside `code`, see docs/interop.md) so a peer and the user can tell a bad
//! signature from an unknown sender without parsing prose.

use serde::Serialize;

/// A UAMP error code (spec 9) plus `4.00` for a malformed envelope, which the spec's table
/// does not list but every binding needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Code {
    #[serde(rename = "4.00")]
    BadRequest,
    #[serde(rename = "4.01")]
    Unauthenticated,
    #[serde(rename = "4.03")]
    Unauthorized,
    #[serde(rename = "4.09")]
    MissingDeltaSeq,
    #[serde(rename = "4.13")]
    PayloadTooLarge,
    #[serde(rename = "5.04")]
    BackendBusy,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::BadRequest => "4.00",
            Code::Unauthenticated => "4.01",
            Code::Unauthorized => "4.03",
            Code::MissingDeltaSeq => "4.09",
            Code::PayloadTooLarge => "4.13",
            Code::BackendBusy => "5.04",
        }
    }

    /// The HTTP status a code travels with: the code's digits read as one (4.13 → 413).
    pub fn http_status(self) -> u16 {
        match self {
            Code::BadRequest => 400,
            Code::Unauthenticated => 401,
            Code::Unauthorized => 403,
            Code::MissingDeltaSeq => 409,
            Code::PayloadTooLarge => 413,
            Code::BackendBusy => 504,
        }
    }

    /// Whether the spec's table says the sender may retry.
    pub fn retryable(self) -> bool {
        matches!(self, Code::MissingDeltaSeq | Code::BackendBusy)
    }
}

/// A refusal: the code, a machine-readable reason, the field at fault (JSON pointer
/// style, e.g. `/body/content`) when there is one, and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{} {reason}: {message}", code.as_str())]
pub struct UampError {
    pub code: Code,
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

impl UampError {
    pub fn new(code: Code, reason: &'static str, message: impl Into<String>) -> Self {
        UampError { code, reason, field: None, message: message.into() }
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        let message = message.into();
        UampError { code: Code::BadRequest, reason: "invalid_envelope", message: format!("{field}: {message}"), field: Some(field) }
    }

    pub fn with_reason(mut self, reason: &'static str) -> Self {
        self.reason = reason;
        self
    }

    /// The JSON body sent with the HTTP status.
    pub fn body(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "code": self.code.as_str(),
            "reason": self.reason,
            "message": self.message,
            "retry": self.code.retryable(),
        });
        if let (Some(f), Some(o)) = (&self.field, v.as_object_mut()) {
            o.insert("field".into(), f.clone().into());
        }
        v
    }
}
