//! The gate: what every door asks it, answered in one place.
//!
//! A door (one crate per protocol, composed by the application layer) reads its
//! protocol's bytes, checks what the sender proved, and hands the gate an [`Arrival`]: who
//! it is, what it asks for, how large it is, what is kept. [`Gate::accept`] decides on the
//! user's registry (read as an [`Admission`], [`admit`]), keeps it, knocks, announces and
//! queues its work; the door puts the verdict back into its protocol's words ([`Door`]). A rule about who may reach the user's AI (blocks, revocation,
//! grants that end, key changes, scopes, sizes) is written here once, so every door has
//! it; this crate depends on no protocol or door crate, and Cargo keeps it that way.
//!
//! [`Admission`]: gatehouse_store::Admission

//! Around the decision, what every door shares and that names no protocol either:
//!
//! - [`accept`]: one acceptance for every door ([`Door`], [`Gate::accept`]): the decision,
//!   the record, the commit, the knock, the event, the job; an [`Arrival`] as a door hands it
//!   over (`arrival.rs`), and what it leaves in the store (`record.rs`: the gate's record,
//!   its receipts)
//! - [`admit`]: the decision itself
//! - [`clock`]: what "now" is for grants, deferrals and freshness (a test may move it)
//! - [`state`]: the gate's state every door shares ([`Gate`]: store, events, executor queue, registered doors)
//! - [`declared`]: what an arrival tells of itself beyond its message, as its door read it
//! - [`consent`]: what a decision on a waiting item can be, which scope a grant may name,
//!   and the risk flags a prompt shows
//! - [`flood`]: how many refusals and knocks are kept per minute; the rest is counted
//! - [`executor`]: what runs for accepted work (spec 9), one implementation with output sinks;
//!   executors that hand work to another agent are delegates a door registers
//! - [`model`]: the user's own model behind an OpenAI-compatible API (the model executor)
//! - [`process`]: programs executors start, killed with their whole process group
//! - [`release`]: a knock the user allowed, read again by its door ([`Reread`]) and accepted
//! - [`runner`]: runs accepted work's executors off the request path and after restarts

// Code here reads others' bytes (a kept message's text, an executor's output): slicing
// a str at a byte offset panics inside a character (docs/threat-model.md 1).
#![cfg_attr(not(test), deny(clippy::string_slice))]

pub mod accept;
pub mod admit;
mod arrival;
pub mod clock;
pub mod consent;
pub mod declared;
pub mod executor;
pub mod flood;
pub mod model;
pub mod process;
mod record;
pub mod release;
pub mod runner;
pub mod state;

pub use accept::{Answered, Arrival, Door, Keep, Kept, Stored, Why, Words};
pub use admit::{admit, admitted_under, standing, Asked, Checks, NoChecks, Refusal, Verdict};
pub use executor::{ExecutorConfig, ExecutorSpec};
pub use release::{Delivered, Reread};
pub use state::Gate;
