//! The gate core: what every door shares and nothing protocol-specific. It imports no
//! door (`tests/layers.rs` checks it); doors depend on it, and `service` composes them.
//!
//! - [`clock`]: what "now" is for grants, deferrals and freshness (a test may move it)
//! - [`hub`]: the inbox state every door shares (store, events, executor queue, registered doors)
//! - [`consent`]: the consent queue: what waits for the user, from every door
//! - [`flood`]: how many refusals and knocks are kept per minute; the rest is counted
//! - [`executor`]: what runs for accepted work (spec 9), one implementation with output sinks
//! - [`model`]: the user's own model behind an OpenAI-compatible API (the model executor)
//! - [`process`]: programs executors start, killed with their whole process group
//! - [`runner`]: runs accepted envelopes' executors off the request path and after restarts

pub mod clock;
pub mod consent;
pub mod executor;
pub mod flood;
pub mod hub;
pub mod model;
pub mod process;
pub mod runner;
