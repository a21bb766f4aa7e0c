//! ASOP 1.0.0 from the guardian's side: Gatehouse is the Guardian Agent that the user's own
//! agents ask before they act (methods as in AOS 1.0.0, same data objects).
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 requests, batches, notifications and the error codes.
//! - [`schema`]: each method's params checked against the spec's JSON Schema.
//! - [`step`]: what a step is about (agent, tool, arguments, text) in facts and plain words.
//! - [`rules`]: the user's rules — per agent and tool/method, with argument conditions —
//!   and which one decides a step.
//! - [`redact`]: the `modify` decision: a pattern redacted from text and arguments.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice, clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod jsonrpc;
pub mod redact;
pub mod rules;
pub mod schema;
pub mod step;

pub use jsonrpc::{Request, RpcError};
pub use rules::{Action, Condition, Rule};
pub use step::Step;

/// Every method the guardian answers.
pub const METHODS: [&str; 10] = [
    "steps/agentTrigger",
    "steps/message",
    "steps/toolCallRequest",
    "steps/toolCallResult",
    "steps/knowledgeRetrieval",
    "steps/memoryStore",
    "steps/memoryContextRetrieval",
    "protocols/A2A",
    "protocols/MCP",
    "ping",
];

pub const VERSION: &str = "1.0.0";
