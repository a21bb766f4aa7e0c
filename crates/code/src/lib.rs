//! The one error code: every failure a user can see carries one, from the crate that
//! failed (a store, a protocol client, a door) through the application layer to the
//! window (as `"NOT_FOUND"` in the generated TypeScript) and the CLI (`[NOT_FOUND]`, and
//! `code` in `--json`). A crate below the application layer names its failures with this
//! enum, never a string, so nothing is lost on the way.

use serde::{Deserialize, Serialize};

/// Every error code a command can return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Code {
    AlreadySent,
    AlreadyTrusted,
    BadEnvelope,
    BadManifest,
    BadRequest,
    BadUrl,
    /// What the user decided on changed since it was shown (a sender knocked again).
    Changed,
    DidFetch,
    ForbiddenPath,
    Gone,
    Http,
    Internal,
    Interrupted,
    Invalid,
    Io,
    Keychain,
    NotAllowed,
    NotConfirmed,
    NotFound,
    NotRunning,
    NotText,
    NotTrusted,
    NoToken,
    Open,
    PinMismatch,
    Protocol,
    Refused,
    Store,
    SwarmError,
    /// Reached, but the answer did not come in time.
    TimedOut,
    Tls,
    TooLarge,
    Unauthorized,
    Unreachable,
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Code {
    /// The code as it crosses the boundary (`NOT_FOUND`).
    pub fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }
}

/// What became of an arrival at the gate, whatever door it came by. Each door spells it
/// in its protocol's words on the wire (EPP's `UNTRUSTED_SENDER`, an A2A task rejected, a
/// UAMP 4.01); the gate and the app read this, never those words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// The window's bindings name it apart from MAIL's task outcome (JSON is unchanged).
#[serde(rename = "ArrivalOutcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Let in; its work is queued or done.
    Accepted,
    /// Let in, and waits for the user before anything runs.
    Held,
    /// Its sender is unknown: refused, and the user is asked.
    Knock,
    /// The user blocked its sender.
    Blocked,
    /// The user revoked its sender's key.
    Revoked,
    /// What it asks for (a scope, delegation, a capability) is not allowed its sender.
    NotAllowed,
    TooLarge,
    RateLimited,
    /// Seen before.
    Replay,
    /// Its door could not read it, or what it claims beside its proof is wrong.
    Malformed,
    /// Its proof failed: a signature, a key, a credential at the transport.
    Unproven,
    /// Too old, from the future, or past its end.
    Stale,
    /// For someone else.
    WrongRecipient,
    /// The gate could not keep it now (its database unreachable); try again.
    Unavailable,
    /// Something in the gate failed.
    Internal,
}

impl Outcome {
    /// Let in (held or not).
    pub fn accepted(self) -> bool {
        matches!(self, Outcome::Accepted | Outcome::Held)
    }

    /// As the store keeps it (`knock`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Held => "held",
            Outcome::Knock => "knock",
            Outcome::Blocked => "blocked",
            Outcome::Revoked => "revoked",
            Outcome::NotAllowed => "not_allowed",
            Outcome::TooLarge => "too_large",
            Outcome::RateLimited => "rate_limited",
            Outcome::Replay => "replay",
            Outcome::Malformed => "malformed",
            Outcome::Unproven => "unproven",
            Outcome::Stale => "stale",
            Outcome::WrongRecipient => "wrong_recipient",
            Outcome::Unavailable => "unavailable",
            Outcome::Internal => "internal",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_crosses_the_boundary_in_screaming_snake_case_and_back() {
        for (code, wire) in [(Code::NotFound, "NOT_FOUND"), (Code::Changed, "CHANGED"), (Code::PinMismatch, "PIN_MISMATCH"), (Code::Tls, "TLS")] {
            assert_eq!(code.name(), wire);
            assert_eq!(serde_json::to_value(code).unwrap(), wire);
            assert_eq!(serde_json::from_value::<Code>(wire.into()).unwrap(), code);
        }
    }

    #[test]
    fn an_outcome_is_kept_as_serde_writes_it() {
        for o in [Outcome::Knock, Outcome::NotAllowed, Outcome::WrongRecipient, Outcome::Held] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
    }
}
