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
}
