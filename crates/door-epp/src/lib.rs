//! The EPP door: envelopes arrive over HTTP or through the watched folder, go through the
//! pipeline of spec 5.1 into the gate, and answers can go back as signed replies.
//!
//! - [`pipeline`]: the verification steps in order (replay, trust, policy, durable accept)
//! - [`http`]: the HTTP transport (axum router)
//! - [`folder`]: the watched-folder transport
//! - [`reply`]: answers sent back to senders as signed EPP envelopes in their conversation
//! - [`work`]: an accepted envelope as its executor sees it (for the gate's runner)
//! - [`told`]: what an envelope it kept tells of itself (v1.1 fields, keys it names)

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

pub mod email;
pub mod folder;
pub mod http;
pub mod pipeline;
pub mod reply;
pub mod told;
pub mod work;

/// This door's name, where it records what knocked at it.
pub const DOOR: &str = "epp";

/// The verification steps of spec 5.1 in order (EPP v1.1's unsigned fields after replay
/// and revocation: docs/threat-model.md 17), and how far an envelope got: the steps
/// before the failing one passed, the failing one is named, the rest were not reached.
/// `parsed`: whether the envelope could be read (a size failure after parsing is the
/// sender's policy limit, not the inbox-wide one).
pub fn verification_steps(code: Option<gatehouse_epp::ErrorCode>, parsed: bool) -> Vec<(&'static str, &'static str)> {
    use gatehouse_epp::ErrorCode::*;
    const STEPS: [&str; 12] =
        ["size", "format", "version", "recipient", "expiry", "signature", "replay", "revocation", "integrity", "provenance", "trust", "policy"];
    let failed = code.map(|c| match c {
        InvalidFormat => "format",
        UnsupportedVersion => "version",
        WrongRecipient => "recipient",
        Expired => "expiry",
        InvalidSignature => "signature",
        IntegrityMismatch => "integrity",
        ProvenanceInvalid => "provenance",
        SenderRevoked => "revocation",
        ReplayDetected => "replay",
        UntrustedSender => "trust",
        PolicyDenied | RateLimited => "policy",
        SizeExceeded if parsed => "policy",
        SizeExceeded => "size",
        InternalError => "policy",
    });
    let mut reached = true;
    STEPS
        .iter()
        .map(|s| {
            let state = if !reached {
                "not-checked"
            } else if Some(*s) == failed {
                reached = false;
                "failed"
            } else {
                "passed"
            };
            (*s, state)
        })
        .collect()
}
