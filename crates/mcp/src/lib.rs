//! The Model Context Protocol as Gatehouse reads it, standing between an MCP client (the
//! user's AI app) and an MCP server (a tool the app reaches): the handshake revisions up to
//! [`PROTOCOL_VERSION`], the newest the official SDKs' clients offer in `initialize`. (The
//! SDKs also speak 2026-07-28, stateless, which a client in "auto" mode probes with
//! `server/discover` first and leaves for the handshake when that is refused.)
//!
//! - [`message`]: each JSON-RPC message peeked at (its kind, id and method) without
//!   copying or re-encoding what passes through unchanged.
//! - [`call`]: a `tools/call` read strictly (duplicate keys refused: what the user is
//!   shown is what the server gets) and said in plain words.
//! - [`tools`]: a server's tool list pinned (names, descriptions, input schemas) and
//!   compared with what it says later.
//! - [`frame`]: stdio's one message a line, cut within a bound, kept in pieces.
//! - [`reply`]: Gatehouse's own answers in MCP's words (an error, a refused call).

// It reads strangers' bytes: no slicing inside a character, no offset or count that
// wraps, no index trusted to be in range (docs/threat-model.md 1).
#![cfg_attr(not(test), deny(clippy::string_slice, clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod call;
pub mod frame;
pub mod message;
pub mod reply;
pub mod texts;
pub mod tools;

/// The newest handshake revision, which Gatehouse speaks to both sides (the official
/// SDKs' `LATEST_HANDSHAKE_VERSION`).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The earlier revisions a side may ask for and still be answered in (stdio and
/// Streamable HTTP read the same way in each).
pub const ALSO_SPOKEN: &[&str] = &["2025-06-18", "2025-03-26"];

/// What one message may weigh, either way (a line on stdio, a body over HTTP): a tool's
/// 10 MB result, JSON-escaped, with room to spare; beyond it the message is refused
/// (and answered, when it was a request), never cut.
pub const MAX_MESSAGE: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// Not a JSON-RPC 2.0 message as MCP sends them (the reason says what).
    #[error("not an MCP message: {0}")]
    Malformed(String),
    /// A batch (a JSON array): removed from MCP in 2025-06-18.
    #[error("a JSON-RPC batch: MCP messages are sent one at a time since 2025-06-18")]
    Batch,
}
