//! The gate, its four doors and its two outbound clients, composed. Each is its own crate
//! (they never import each other: Cargo holds it) and the gate names none of them; this module is where they
//! meet, once, under the application layer both faces call.
//!
//! - [`gate`]: the gate (`gatehouse-gate`): the decision, the state every door shares,
//!   consent, the executors and their runner
//! - [`epp`]: the EPP door (`gatehouse-door-epp`): the pipeline of spec 5.1, its HTTP,
//!   watched-folder and email transports, and replies sent back to senders
//! - [`uamp`]: the UAMP 1.0 door (`gatehouse-door-uamp`), over TLS 1.3
//! - [`mail`]: MAIL swarms as their client (`gatehouse-client-mail`): tasks sent, followed
//!   live or imported, the swarm executor
//! - [`intent`]: IntentSites as their client (`gatehouse-client-intentweb`): conversations,
//!   their keys pinned through the gate
//! - [`guardian`]: the ASOP door (`gatehouse-door-guardian`)
//! - [`a2a`]: the A2A 1.0 door (`gatehouse-door-a2a`), on the TLS listener beside UAMP
//! - [`service`]: the composition: which doors run on which listener, which delegates
//!   exist, the scopes doors keep for themselves (a consent decision reaches what it
//!   decides through its holder, `crate::waiting`)
//! - [`open`]: opening a data dir: the identity and the store (a file, or a team's database)
//! - [`lease`]: work one node of a team's gate does for all (a mail account), while it
//!   holds that work's lease

pub mod lease;
pub mod open;
pub mod service;

pub use gatehouse_client_intentweb as intent;
pub use gatehouse_client_mail as mail;
pub use gatehouse_door_a2a as a2a;
pub use gatehouse_door_epp as epp;
pub use gatehouse_door_epp::email;
pub use gatehouse_door_guardian as guardian;
pub use gatehouse_door_mcp as mcp;
pub use gatehouse_door_uamp as uamp;
pub use gatehouse_gate as gate;

pub use epp::pipeline::{Outcome, Submit};
pub use epp::verification_steps;
pub use gate::executor::{ExecutorConfig, ExecutorSpec};
pub use gate::state::Gate;
pub use open::{make_private, open, open_at, OpenError, Opened};
pub use service::{build, build_with_events, gate as compose_gate, run, run_with, ServeOptions, UampOptions, RESERVED_SCOPES};

/// What an arrival kept at `door` tells of itself, as that door reads it again (one
/// `match` over the doors composed here): a door that reads nothing more of what it keeps
/// tells nothing.
pub fn told(door: &str, raw: &str) -> gate::declared::Told {
    match door {
        epp::DOOR => epp::told::told(raw.as_bytes()),
        _ => gate::declared::Told::default(),
    }
}

/// The hosts the user's trust entry lets its sender link to without a flag, as the door
/// the entry came by reads what it keeps about it.
pub fn allowed_hosts(entry: Option<&gatehouse_store::TrustEntry>) -> Vec<String> {
    match entry {
        Some(t) if t.door == epp::DOOR => epp::told::allowed_hosts(&t.facts),
        _ => Vec::new(),
    }
}

/// Hands a knock's kept bytes back through the door it knocked at, to be read and
/// verified again and accepted by the gate (one `match` over the doors composed here):
/// `None` for a door that keeps nothing to deliver. `consent`: the user's "allow once".
pub fn release(
    gate: &Gate,
    door: &str,
    raw: &[u8],
    consent: Option<&gatehouse_store::TrustEntry>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<gate::Delivered> {
    use gate::Reread as _;
    match door {
        epp::DOOR => Some(epp::pipeline::Reader.deliver(gate, raw, consent, now)),
        _ => None,
    }
}
