//! UAMP 1.0 (Universal Agent Messaging Protocol), the parts that need no IO and no clock:
//!
//! - [`error`]: the spec's error codes (section 9) and the precise reasons behind them
//! - [`envelope`]: reading an envelope (A.1), each failure naming its field
//! - [`canonical`]: the canonical JSON whose SHA-256 is signed (4.2)
//! - [`jws`]: compact JWS, detached (6.3) and attached (manifests, capability tokens)
//! - [`did`]: which public key a `kid` names: did:key locally, did:web documents
//! - [`delta`]: stream frames (A.2)
//! - [`manifest`]: the agent manifest (A.3) and its signed form (8)
//! - [`captoken`]: capability tokens (6.2)
//! - [`sign`]: building and signing envelopes Gatehouse sends
//!
//! Where the spec is ambiguous the reading is recorded in docs/interop.md.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]
// A peer's numbers and lengths never wrap an addition, and no index is trusted to be in
// range (a JSON value is read with get(), written through as_object_mut()).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod canonical;
pub mod captoken;
pub mod delta;
pub mod did;
pub mod envelope;
pub mod error;
pub mod jws;
pub mod manifest;
mod schema;
pub mod sign;
pub mod verify;

pub use delta::{Delta, DeltaType};
pub use did::PublicKey;
pub use envelope::{Envelope, Intent, MAX_ENVELOPE_BYTES};
pub use error::{Code, UampError};
pub use manifest::Manifest;

/// The media type of envelopes on the HTTP binding (7, 11).
pub const MEDIA_TYPE: &str = "application/uamp+json";
/// The media type of a signed manifest (8, 11).
pub const MANIFEST_MEDIA_TYPE: &str = "application/manifest+jws";
/// The spec's default `delta_window` (4, A.1).
pub const DEFAULT_DELTA_WINDOW: u32 = 64;
