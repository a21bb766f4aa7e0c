//! What every listener and file reader shares, whichever door it serves (a crate below
//! every door: doors never import each other, so what they share sits here).
//!
//! - [`conn`]: which connections are admitted (slots, per-address share, idle close)
//! - [`host_check`]: which requests a listener serves at all (Host, no web page's Origin)
//! - [`body`]: request bodies read within a shared budget, charged as bytes arrive
//! - [`dropped`]: files in the watched folder another door reads (MAIL task logs)
//! - [`regular_file`]: reading files others put where Gatehouse looks (regular, bounded)
//! - [`plain`]: the plain HTTP listener (header deadline, the checks above)
//! - [`peer`]: who a TLS client is (its certificate's key), for any door to read
//! - [`tls`]: the TLS listener every door on it shares (TLS 1.3, HTTP/1.1 and 2, mTLS)

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1).
#![cfg_attr(not(test), deny(clippy::string_slice))]

pub mod body;
pub mod conn;
pub mod dropped;
pub mod host_check;
pub mod peer;
pub mod plain;
pub mod regular_file;
pub mod tls;
