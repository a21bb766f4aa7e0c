//! The MCP door: Gatehouse between an MCP client (the user's AI app) and an MCP server
//! (a tool it reaches). What the gate does not need to see passes as it came; a
//! `tools/call`, a changed tool and a request of the server's for the user wait for the
//! gate's answer ([`relay::Keeper`]).
//!
//! - [`frame`]: stdio's one-message-per-line framing, within a bound.
//! - [`relay`]: the relay itself, both directions.
//! - [`child`]: the server started as a child, dying with its whole group.
//! - [`upstream`]: a server reached by address (Streamable HTTP), made to look like a
//!   child's pipes to the relay.
//! - [`signed`]: what a wrap asks the gate about a call, signed with its server's key.
//! - [`line`]: a wrap's kept line to the gate: authenticated once, then framed calls.
//! - [`at_gate`]: the call at the gate: the server judged by [`gatehouse_gate::Gate::accept`],
//!   the call by the [`at_gate::Judge`] the composition gives.
//! - [`http`]: the door's endpoint on the inbox.
//! - [`served`]: remote servers the user added, served to their app on the inbox
//!   (Streamable HTTP), their calls judged at the gate in this process.

pub mod answered;
pub mod at_gate;
pub mod child;
pub mod frame;
pub mod http;
pub mod line;
pub mod line_client;
pub mod relay;
pub mod served;
pub mod signed;
pub mod upstream;

/// The door's name, recorded with what knocks at it and with the trust entries it makes.
pub const DOOR: &str = "mcp";
