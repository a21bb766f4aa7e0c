//! A2A 1.0 (Agent2Agent), the parts Gatehouse speaks, as the real peers (`a2a-sdk`,
//! `@a2a-js/sdk`) put them on the wire: JSON-RPC 2.0 with the v1.0 method names, the
//! protobuf JSON form of the types (camelCase, `TASK_STATE_*` enums).
//!
//! - [`rpc`]: a request read once, within bounds, into a typed [`rpc::Call`]; the
//!   spec's error codes
//! - [`types`]: messages, parts, tasks, artifacts and stream events
//! - [`card`]: the Agent Card Gatehouse serves
//!
//! Pure: no IO, no clock. Code here reads others' bytes and never panics on them.

#![cfg_attr(not(test), deny(clippy::string_slice, clippy::indexing_slicing, clippy::arithmetic_side_effects))]

pub mod card;
pub mod rpc;
pub mod types;

/// The protocol version this crate speaks (the `A2A-Version` header, a card's interface).
pub const VERSION: &str = "1.0";
/// The header a client names its protocol version in.
pub const VERSION_HEADER: &str = "A2A-Version";
/// Where the Agent Card is served.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
