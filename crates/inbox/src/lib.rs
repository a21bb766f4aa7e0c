//! The Gatehouse inbox: everything between bytes arriving and a receipt going back.
//! One gate, five doors: the gate core knows no protocol door; each door admits its
//! protocol's traffic into it; `service` composes them.
//!
//! - [`gate`]: the core every door shares: the inbox state, the consent queue, trust
//!   changes, the executors and their runner, the flood gate. It imports no door.
//! - [`epp`]: the EPP door: the pipeline of spec 5.1, its HTTP and watched-folder
//!   transports, and replies sent back to senders
//! - [`uamp`]: the UAMP 1.0 door, over TLS 1.3, streaming executor output as frames
//! - [`email`]: EPP by email: mail accounts followed over IMAP, envelopes into the pipeline
//! - [`mail`]: the MAIL door (1.3 and 2.0): tasks followed live on swarms or imported from logs
//! - [`intent`]: the IntentWeb door: conversations with IntentSites, signed both ways
//! - [`guardian`]: the ASOP door: the guardian the user's own agents ask before they act
//! - [`service`]: the composition: which doors run, which executors exist, and where a
//!   user's consent decision reaches the door that holds what it decides

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

pub mod email;
pub mod epp;
pub mod gate;
pub mod guardian;
pub mod intent;
pub mod mail;
pub mod service;
pub mod uamp;

pub use epp::pipeline::{OpenError, Outcome};
pub use gate::executor::{ExecutorConfig, ExecutorSpec};
pub use gate::hub::Inbox;
pub use service::{build, build_with_events, open, run, run_with, Opened, ServeOptions, UampOptions};

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
