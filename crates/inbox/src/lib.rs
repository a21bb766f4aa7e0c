//! The Gatehouse inbox: everything between bytes arriving and a receipt going back.
//!
//! - [`hub`](pipeline::Inbox): the inbox every door shares (store, events, executor queue, flood gate)
//! - [`pipeline`]: the one pipeline of spec 5.1 (replay, trust, policy, durable accept)
//! - [`flood`]: how many refusals and knocks are kept per minute; the rest is counted
//! - [`consent`]: the user's decisions (consent prompts, trust changes), audited
//! - [`executor`]: what runs for an accepted prompt, per scope (spec 9)
//! - [`process`]: programs executors start, killed with their whole process group
//! - [`runner`]: runs executors off the request path and after restarts
//! - [`model`]: the user's own model behind an OpenAI-compatible API (the model executor)
//! - [`reply`]: answers sent back to senders as signed EPP envelopes in their conversation
//! - [`http`]: the HTTP transport (axum router)
//! - [`body`]: request bodies read within a shared budget, charged as bytes arrive
//! - [`host_check`]: which requests a listener serves at all (Host, no web page's Origin)
//! - [`folder`]: the watched-folder transport
//! - [`regular_file`]: reading files others put where Gatehouse looks (regular, bounded)
//! - [`uamp`]: UAMP 1.0 on the same trust registry and executors, over TLS 1.3
//! - [`mail`]: MAIL 1.3 tasks followed live on swarms or imported from logs, kept by task_id
//! - [`intent`]: IntentWeb conversations with IntentSites, signed and checked both ways
//! - [`guardian`]: the ASOP guardian the user's own agents ask before they act
//! - [`service`]: opening a data dir and running all of the above until shutdown

pub mod body;
pub mod conn;
pub mod consent;
pub mod executor;
pub mod flood;
pub mod folder;
pub mod guardian;
pub mod host_check;
pub mod http;
mod hub;
pub mod intent;
pub mod mail;
pub mod model;
pub mod pipeline;
pub mod process;
pub mod regular_file;
pub mod reply;
pub mod runner;
pub mod service;
pub mod uamp;

pub use executor::{ExecutorConfig, ExecutorSpec};
pub use pipeline::{Inbox, OpenError, Outcome};
pub use service::{build, build_with_events, open, run, run_with, Opened, ServeOptions, UampOptions};

/// The verification steps of spec 5.1 in order, and how far an envelope got: the steps
/// before the failing one passed, the failing one is named, the rest were not reached.
/// `parsed`: whether the envelope could be read (a size failure after parsing is the
/// sender's policy limit, not the inbox-wide one).
pub fn verification_steps(code: Option<gatehouse_epp::ErrorCode>, parsed: bool) -> Vec<(&'static str, &'static str)> {
    use gatehouse_epp::ErrorCode::*;
    const STEPS: [&str; 9] = ["size", "format", "version", "recipient", "expiry", "signature", "replay", "trust", "policy"];
    let failed = code.map(|c| match c {
        InvalidFormat => "format",
        UnsupportedVersion => "version",
        WrongRecipient => "recipient",
        Expired => "expiry",
        InvalidSignature => "signature",
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
