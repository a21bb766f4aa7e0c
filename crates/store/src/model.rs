//! The rows the store keeps, in the shapes the rest of Gatehouse uses.

use serde::{Deserialize, Serialize};

/// How a sender is keyed in the trust registry, pending list and block list: EPP's hex
/// public keys compare case-insensitively (lower-cased); UAMP senders are DIDs, whose
/// base58 key material is case-sensitive (kept as given).
pub fn sender_key(s: &str) -> String {
    if s.starts_with("did:") {
        s.to_string()
    } else {
        s.to_ascii_lowercase()
    }
}

/// Spec 6.1 trust entry: who it is, the door it came by, what it may do there (the
/// neutral policy every door's arrivals are judged by) and what only its door knows about
/// it, kept in that door's own table (`entry_facts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TrustEntry {
    pub public_key: String,
    pub name: String,
    pub added_at: String,
    /// The door the entry came by, by the name the composition registers it under
    /// (`epp`, `uamp`, `a2a`, `guardian`, `intentweb`, …): recorded when the entry is
    /// made, never read from the key's spelling.
    pub door: String,
    pub policy: Policy,
    /// What only the entry's door knows about it.
    #[serde(default)]
    pub facts: crate::entry_facts::Facts,
}

/// Spec 6.1 policy, with Gatehouse extensions in `x-` fields (spec 11.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Policy {
    #[serde(default)]
    pub allowed_scopes: Vec<String>,
    #[serde(default = "default_max_envelope_size")]
    pub max_envelope_size: u64,
    #[serde(default)]
    pub rate_limit: RateLimit,
    /// Accepted envelopes wait for the user's consent before their executor runs.
    #[serde(rename = "x-hold-for-consent", default)]
    pub hold_for_consent: bool,
    /// Whether envelopes carrying `delegation` are accepted (the reference accepts them).
    #[serde(rename = "x-allow-delegation", default = "yes")]
    pub allow_delegation: bool,
    /// Scopes the user chose "always allow" for, exempt from `x-hold-for-consent`.
    #[serde(rename = "x-consent-granted-scopes", default, skip_serializing_if = "Vec::is_empty")]
    pub consent_granted_scopes: Vec<String>,
    /// Scopes whose answers are sent back without the user reviewing them first.
    #[serde(rename = "x-auto-reply-scopes", default, skip_serializing_if = "Vec::is_empty")]
    pub auto_reply_scopes: Vec<String>,
    /// Scopes granted for a while (an hour, until tonight, until a date), with when each
    /// grant ends (UTC, as the store writes times). Once it has ended, envelopes in the
    /// scope are kept and held for the user again: the grant asks again, never fails
    /// silently. A scope granted for good is not listed.
    #[serde(rename = "x-grant-until", default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub grant_until: std::collections::BTreeMap<String, String>,
    /// This key joined a verified contact as its new key and has not been verified
    /// itself: everything it sends is held, and cannot be let through, until it is.
    #[serde(rename = "x-key-change-unverified", default, skip_serializing_if = "std::ops::Not::not")]
    pub key_change_unverified: bool,
}

fn yes() -> bool {
    true
}

/// The reference implementation's default: the inbox-wide 10 MB.
pub fn default_max_envelope_size() -> u64 {
    10 * 1024 * 1024
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed_scopes: Vec::new(),
            max_envelope_size: default_max_envelope_size(),
            rate_limit: RateLimit::default(),
            hold_for_consent: false,
            allow_delegation: true,
            consent_granted_scopes: Vec::new(),
            auto_reply_scopes: Vec::new(),
            grant_until: Default::default(),
            key_change_unverified: false,
        }
    }
}

impl Policy {
    pub fn allows_scope(&self, scope: &str) -> bool {
        self.allowed_scopes.iter().any(|s| s == "*" || s == scope)
    }

    /// Whether an accepted envelope in `scope` waits for the user before its executor, at
    /// `now`: a grant for a while decides while it lasts, and holds once it has ended.
    pub fn holds(&self, scope: &str, now: chrono::DateTime<chrono::Utc>) -> bool {
        if self.key_change_unverified {
            return true;
        }
        match self.grant_until.get(scope) {
            Some(until) => !grant_lasts(until, now),
            None => self.hold_for_consent && !self.consent_granted_scopes.iter().any(|s| s == scope),
        }
    }
}

/// Whether a grant ending at `until` still lasts at `now`; an unreadable end has ended.
pub fn grant_lasts(until: &str, now: chrono::DateTime<chrono::Utc>) -> bool {
    chrono::DateTime::parse_from_rfc3339(until).is_ok_and(|u| u > now)
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RateLimit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_hour: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_day: Option<u32>,
}

impl RateLimit {
    /// Whether any limit is set (a sender without one is never counted against it).
    pub fn is_set(&self) -> bool {
        self.max_per_hour.is_some() || self.max_per_day.is_some()
    }
}

/// How many of each kind of waiting item the store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitingCounts {
    /// Envelopes let in that wait for the user before anything runs.
    pub held: usize,
    /// Unknown senders that knocked.
    pub knocks: usize,
    /// Streams opened and held for the user.
    pub held_asks: usize,
    /// Agents' steps waiting for a decision.
    pub steps: usize,
    /// Senders whose keys changed.
    pub key_changes: usize,
    /// MCP servers let in whose tools changed.
    pub tool_changes: usize,
}

/// An unknown sender that knocked with a valid signature; the user may approve it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingSender {
    pub public_key: String,
    pub first_seen: String,
    pub last_seen: String,
    pub count: i64,
    pub scopes_tried: Vec<String>,
    pub last_envelope_id: Option<String>,
    /// The door it knocked at last.
    pub door: String,
}

/// Where the executor of an accepted envelope stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ExecStatus {
    Queued,
    Held,
    Running,
    Succeeded,
    Failed,
    /// The user denied a held envelope; its executor never runs.
    Denied,
}

impl ExecStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecStatus::Queued => "queued",
            ExecStatus::Held => "held",
            ExecStatus::Running => "running",
            ExecStatus::Succeeded => "succeeded",
            ExecStatus::Failed => "failed",
            ExecStatus::Denied => "denied",
        }
    }

    pub fn parse(s: &str) -> Option<ExecStatus> {
        [ExecStatus::Queued, ExecStatus::Held, ExecStatus::Running, ExecStatus::Succeeded, ExecStatus::Failed, ExecStatus::Denied]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

/// A receipt as stored: the wire JSON plus columns to filter on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ReceiptRow {
    pub receipt_id: String,
    pub envelope_id: Option<String>,
    pub status: String,
    pub code: Option<String>,
    pub message: Option<String>,
    pub received_at: String,
    pub received_ms: i64,
    /// "http" or "folder:<file name>".
    pub transport: String,
    pub sender: Option<String>,
    pub scope: Option<String>,
    /// For rejections, what arrived (capped), so the user can see what was refused.
    pub body: Option<String>,
    pub body_truncated: bool,
    pub receipt: serde_json::Value,
    /// The prompt, when the envelope could be read (searchable).
    #[serde(default)]
    pub prompt: Option<String>,
    /// The stored envelope, for accepted receipts.
    #[serde(default)]
    pub envelope_row: Option<i64>,
    /// What became of the arrival in no door's words (`code` is its door's); none on
    /// receipts kept before it was recorded that no code tells.
    #[serde(default)]
    pub outcome: Option<gatehouse_code::Outcome>,
}

/// What the inbox hands the store for an acceptance.
#[derive(Debug, Clone)]
pub struct NewEnvelope {
    pub envelope_id: String,
    pub sender: String,
    pub recipient: String,
    pub scope: String,
    pub payload_type: Option<String>,
    pub conversation_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub on_behalf_of: Option<String>,
    pub prompt: String,
    pub timestamp: String,
    pub expires_at: String,
    pub expires_at_ms: i64,
    pub nonce: Vec<u8>,
    pub received_at: String,
    pub received_ms: i64,
    pub transport: String,
    pub signed_form: String,
    pub raw: String,
    pub raw_sha256: String,
    pub executor: String,
    /// The executor chosen, whole (JSON): what the runner runs.
    pub executor_spec: Option<String>,
    pub exec_status: ExecStatus,
    /// Set when the outcome is known at acceptance (the no-op executor).
    pub exec_result: Option<serde_json::Value>,
    pub receipt: ReceiptRow,
    /// The door it came by, as the composition names it.
    pub door: String,
    /// The admission version ([`crate::Admission::version`]) the decision to accept was
    /// made on. If trust, blocks or settings changed since, the commit refuses the envelope
    /// with [`crate::AcceptRefusal::Stale`] and the caller decides again.
    pub admission_version: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EnvelopeRow {
    pub id: i64,
    pub envelope_id: String,
    pub sender: String,
    pub recipient: String,
    pub scope: String,
    pub payload_type: Option<String>,
    pub conversation_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub on_behalf_of: Option<String>,
    pub prompt: String,
    pub timestamp: String,
    pub expires_at: String,
    pub received_at: String,
    pub transport: String,
    pub signed_form: String,
    pub raw: String,
    pub receipt_id: String,
    pub executor: String,
    pub exec_status: ExecStatus,
    pub exec_result: Option<serde_json::Value>,
    pub exec_updated_at: Option<String>,
    /// The executor admission chose, whole (JSON); none on envelopes kept before it was.
    #[serde(skip)]
    pub executor_spec: Option<String>,
    /// The door it came by (what reads its bytes again is that door's).
    #[serde(skip)]
    pub door: String,
}

/// What the inbox list asks for. Every filter is optional; paging is by `before_seq`
/// (keyset), so a page costs the same at row 10 and at row 100,000.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InboxFilter {
    pub sender: Option<String>,
    /// Everything from any key of this contact (one history across its keys); replaces
    /// `sender`.
    #[serde(default)]
    pub contact: Option<i64>,
    pub scope: Option<String>,
    /// "accepted", "rejected", or an executor state such as "held".
    pub status: Option<String>,
    /// "http", "folder" or "consent".
    pub transport: Option<String>,
    /// Full-text search over prompts.
    pub search: Option<String>,
    pub before_seq: Option<i64>,
    /// Only what arrived after this row (the newest a view shows): what a view patches in
    /// when something arrives, instead of reading its page again.
    #[serde(default)]
    pub after_seq: Option<i64>,
    pub limit: Option<u32>,
}

/// One row of the inbox list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InboxItem {
    pub seq: i64,
    pub receipt_id: String,
    pub envelope_id: Option<String>,
    pub status: String,
    pub code: Option<String>,
    pub message: Option<String>,
    pub received_at: String,
    pub transport: String,
    pub sender: Option<String>,
    pub sender_name: Option<String>,
    pub scope: Option<String>,
    pub prompt_preview: Option<String>,
    pub envelope_row: Option<i64>,
    pub exec_status: Option<ExecStatus>,
    pub payload_type: Option<String>,
    pub conversation_id: Option<String>,
    pub on_behalf_of: Option<String>,
    pub on_behalf_of_name: Option<String>,
    /// What became of it beyond its receipt (a knock decided, the knock it came as).
    pub story: crate::Story,
    /// How many risk flags its message raises that the user has not set aside: counted by
    /// the application layer, which reads them (0 as the store lists it).
    #[serde(default)]
    pub flags: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BlockedSender {
    pub public_key: String,
    pub blocked_at: String,
    pub reason: String,
}

/// A key the user revoked (EPP v1.1): refused with SENDER_REVOKED, its entry kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RevokedKey {
    pub public_key: String,
    pub revoked_at: String,
    pub reason: String,
}

/// One decision or change the user made, readable later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditEntry {
    pub id: i64,
    pub at: String,
    pub action: String,
    pub subject: Option<String>,
    pub detail: serde_json::Value,
    /// The hash of the entry before it ([`crate::AUDIT_GENESIS`] for the first).
    #[serde(default)]
    pub prev_hash: String,
    /// This entry's hash ([`crate::audit_entry_hash`]).
    #[serde(default)]
    pub hash: String,
}

/// The gate's signature on the audit chain up to one entry: whoever rewrites the log
/// cannot make one for the rewritten chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditCheckpoint {
    pub at: String,
    /// The last entry it covers, and that entry's hash.
    pub through_id: i64,
    pub hash: String,
    /// The gate's identity key that signed it, and the signature (both hex, as keys are
    /// written everywhere else).
    pub public_key: String,
    pub signature: String,
}
