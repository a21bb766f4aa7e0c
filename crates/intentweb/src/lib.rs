//! IntentWeb 1.0-draft from the user's side: Gatehouse finds what a company can do, carries
//! an intent through a conversation, signs what the user sends and checks what comes back.
//!
//! - [`manifest`]: `{origin}/intentmanifest.yaml` read and checked field by field (§2).
//! - [`bounded_yaml`]: YAML read within a node and text budget (alias bombs refused).
//! - [`envelope`]: request/response envelopes against the spec's JSON Schema, flow types (§3).
//! - [`conversation`]: the rules of one interaction (first message, terminal messages,
//!   echoed interaction_id, replayed nonces).
//! - [`attribution`]: the attribution chain (§5) signed and verified: JCS (RFC 8785) bytes,
//!   Ed25519, explicit `alg` and `kid`.
//! - [`render`]: markdown messages (§4) to sanitized HTML.
//! - [`client`]: fetching manifests and talking to intent endpoints over HTTPS.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]
// A peer's numbers and lengths never wrap an addition, and no index is trusted to be in
// range (a JSON value is read with get(), written through as_object_mut()).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod attribution;
pub mod bounded_yaml;
pub mod client;
pub mod conversation;
pub mod envelope;
pub mod manifest;
pub mod render;

pub use envelope::{Envelope, FlowType};
pub use manifest::Manifest;

/// A problem with something read, named by the JSON pointer of its field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), message: message.into() }
    }
}
