//! The gate: what every door asks it, answered in one place.
//!
//! A door (EPP over HTTP, folder or email; UAMP; the guardian; IntentWeb sites) reads
//! its protocol's bytes, checks what the sender signed, and then asks [`admit`] about the
//! arrival: who it is (the user's registry, read once as an [`Admission`]), what it asks
//! for, how large it is. The answer is a [`Verdict`] the door puts back into its own
//! protocol's words. A rule about who may reach the user's AI (blocks, revocation,
//! grants that end, key changes, scopes, sizes) is written here once, so every door has
//! it; this crate depends on no protocol or door crate, and Cargo keeps it that way.
//!
//! [`Admission`]: gatehouse_store::Admission

// Others' numbers reach the decision (sizes): nothing here wraps or indexes.
#![cfg_attr(not(test), deny(clippy::string_slice, clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod admit;

pub use admit::{admit, admitted_under, standing, Arrival, Checks, NoChecks, Refusal, Verdict};
