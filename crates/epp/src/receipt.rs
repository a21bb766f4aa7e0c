//! Receipts (spec 7) and the error codes every rejection carries.

use serde::{Deserialize, Serialize};

/// Spec 7.3 codes, plus `INTERNAL_ERROR` for the spec's HTTP 500 "inbox processing error".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidFormat,
    UnsupportedVersion,
    WrongRecipient,
    Expired,
    InvalidSignature,
    ReplayDetected,
    UntrustedSender,
    PolicyDenied,
    SizeExceeded,
    RateLimited,
    InternalError,
    /// EPP v1.1: the payload does not hash to the envelope's `integrity`.
    IntegrityMismatch,
    /// EPP v1.1: a `provenance` attestation does not verify, or attests to other content.
    ProvenanceInvalid,
    /// EPP v1.1: the user revoked this sender's key.
    SenderRevoked,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::InvalidFormat,
        ErrorCode::UnsupportedVersion,
        ErrorCode::WrongRecipient,
        ErrorCode::Expired,
        ErrorCode::InvalidSignature,
        ErrorCode::ReplayDetected,
        ErrorCode::UntrustedSender,
        ErrorCode::PolicyDenied,
        ErrorCode::SizeExceeded,
        ErrorCode::RateLimited,
        ErrorCode::InternalError,
        ErrorCode::IntegrityMismatch,
        ErrorCode::ProvenanceInvalid,
        ErrorCode::SenderRevoked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidFormat => "INVALID_FORMAT",
            ErrorCode::UnsupportedVersion => "UNSUPPORTED_VERSION",
            ErrorCode::WrongRecipient => "WRONG_RECIPIENT",
            ErrorCode::Expired => "EXPIRED",
            ErrorCode::InvalidSignature => "INVALID_SIGNATURE",
            ErrorCode::ReplayDetected => "REPLAY_DETECTED",
            ErrorCode::UntrustedSender => "UNTRUSTED_SENDER",
            ErrorCode::PolicyDenied => "POLICY_DENIED",
            ErrorCode::SizeExceeded => "SIZE_EXCEEDED",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::IntegrityMismatch => "INTEGRITY_MISMATCH",
            ErrorCode::ProvenanceInvalid => "PROVENANCE_INVALID",
            ErrorCode::SenderRevoked => "SENDER_REVOKED",
        }
    }

    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The HTTP status of spec 8.1, refined per code (see docs/interop.md).
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidFormat | ErrorCode::UnsupportedVersion | ErrorCode::WrongRecipient | ErrorCode::Expired => 400,
            ErrorCode::InvalidSignature | ErrorCode::UntrustedSender => 401,
            ErrorCode::IntegrityMismatch | ErrorCode::ProvenanceInvalid => 400,
            ErrorCode::PolicyDenied | ErrorCode::SenderRevoked => 403,
            ErrorCode::ReplayDetected => 409,
            ErrorCode::SizeExceeded => 413,
            ErrorCode::RateLimited => 429,
            ErrorCode::InternalError => 500,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an envelope was turned away: the code, a message a person can act on, and the
/// envelope_id when one could be read (so the receipt can echo it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Rejection {
    pub code: ErrorCode,
    pub message: String,
    pub envelope_id: Option<String>,
}

impl Rejection {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Rejection { code, message: message.into(), envelope_id: None }
    }

    pub fn with_envelope_id(mut self, id: Option<String>) -> Self {
        self.envelope_id = id;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
}

/// A receipt as sent on the wire (7.1 / 7.2). Gatehouse extensions are `x-` prefixed (11.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Receipt {
    pub status: ReceiptStatus,
    /// `null` when no envelope_id could be read from the input.
    pub envelope_id: Option<String>,
    pub received_at: String,
    pub receipt_id: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub executor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<ErrorDetail>,
    /// Set when the sender's policy holds accepted envelopes for the user's consent.
    #[serde(rename = "x-held-for-consent", skip_serializing_if = "std::ops::Not::not", default)]
    pub held_for_consent: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ReceiptStatus {
    Accepted,
    Rejected,
}

impl Receipt {
    pub fn accepted(envelope_id: String, received_at: String, receipt_id: String, executor: String, held: bool) -> Self {
        Receipt {
            status: ReceiptStatus::Accepted,
            envelope_id: Some(envelope_id),
            received_at,
            receipt_id,
            executor: Some(executor),
            error: None,
            held_for_consent: held,
        }
    }

    pub fn rejected(rejection: &Rejection, received_at: String, receipt_id: String) -> Self {
        Receipt {
            status: ReceiptStatus::Rejected,
            envelope_id: rejection.envelope_id.clone(),
            received_at,
            receipt_id,
            executor: None,
            error: Some(ErrorDetail { code: rejection.code, message: rejection.message.clone() }),
            held_for_consent: false,
        }
    }

    pub fn code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }

    pub fn http_status(&self) -> u16 {
        self.code().map_or(200, ErrorCode::http_status)
    }
}
