//! EPP envelopes carried by email (EPP 8.2): the mail system only carries them; the
//! envelope's signature is checked by the same pipeline as over HTTP.
//!
//! - [`extract`]: where the envelope is in a mail, and what the mail says about itself.
//! - [`imap`]: an IMAP account followed: connect, folders, fetch after a UID, file, IDLE.
//! - [`smtp`]: mail going out: receipts mailed back, envelopes sent by mail.
//! - [`tls`] and `error`: what both directions share (TLS roots and a server's own
//!   certificate; the errors).

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]
// A server's numbers (UIDs, sizes, lengths) never wrap an addition, and no index is
// trusted to be in range.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

#[cfg(feature = "net")]
mod error;
pub mod extract;
#[cfg(feature = "net")]
pub mod imap;
#[cfg(feature = "net")]
pub mod smtp;
#[cfg(feature = "net")]
pub mod tls;

#[cfg(feature = "net")]
pub use error::EmailError;
pub use extract::{find, Carrier, Found};
#[cfg(feature = "net")]
pub use imap::{Account, Security};
