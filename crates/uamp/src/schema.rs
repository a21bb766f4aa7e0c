//! The spec's Appendix A schemas, compiled once, as the first check of everything read.
//!
//! The schemas are the ones in tests/data/vectors/uamp (copied into `schemas/`; a test
//! keeps the copies identical). Formats are asserted, with one Gatehouse reading: `uuid`
//! also accepts the `urn:uuid:` form the spec's own examples use.

use std::sync::OnceLock;

use jsonschema::{Draft, Validator};
use serde_json::Value;

use crate::error::UampError;

pub const ENVELOPE: &str = include_str!("../schemas/envelope-1.0.schema.json");
pub const DELTA: &str = include_str!("../schemas/delta-1.0.schema.json");
pub const MANIFEST: &str = include_str!("../schemas/manifest-1.0.schema.json");

fn compile(text: &str) -> Validator {
    let schema: Value = serde_json::from_str(text).expect("embedded schema is JSON");
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .with_format("uuid", |s: &str| parse_uuid(s).is_some())
        .build(&schema)
        .expect("embedded schema compiles")
}

fn validator(which: &'static str) -> &'static Validator {
    static ENV: OnceLock<Validator> = OnceLock::new();
    static DEL: OnceLock<Validator> = OnceLock::new();
    static MAN: OnceLock<Validator> = OnceLock::new();
    match which {
        "envelope" => ENV.get_or_init(|| compile(ENVELOPE)),
        "delta" => DEL.get_or_init(|| compile(DELTA)),
        _ => MAN.get_or_init(|| compile(MANIFEST)),
    }
}

/// Checks `v` against the named schema; the first violation becomes an error naming its
/// field as a JSON pointer (a missing or unexpected member is named itself, not its parent).
pub fn check(which: &'static str, v: &Value) -> Result<(), UampError> {
    match gatehouse_schema::violation(validator(which), v, gatehouse_schema::Pick::First, Some(which)) {
        None => Ok(()),
        Some((field, message)) => Err(UampError::invalid(field, message)),
    }
}

/// `uuid` in the schema: a bare UUID or the `urn:uuid:` form of the spec's examples.
pub fn parse_uuid(s: &str) -> Option<uuid::Uuid> {
    let bare = s.strip_prefix("urn:uuid:").unwrap_or(s);
    // Only the hyphenated form: Uuid::parse_str also takes braces, simple and urn forms.
    if bare.len() != 36 {
        return None;
    }
    uuid::Uuid::parse_str(bare).ok()
}
