//! EPP v1 (External Prompt Protocol), the protocol half of Gatehouse's inbox.
//!
//! Pure functions only: bytes in, typed values or typed [`Rejection`]s out. The clock is
//! passed in by the caller, and nothing here touches disk or network. [`v11`] reads and
//! checks the optional fields EPP v1.1 added (integrity, capabilities, provenance).

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]
// The JSON parser and the checks run on a stranger's bytes: no offset or count wraps and
// no index is trusted to be in range.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod canonical;
pub mod crypto;
pub mod envelope;
/// The strict JSON reader envelopes are read with (`gatehouse-json`).
pub use gatehouse_json as json;
pub mod receipt;
pub mod shapes;
pub mod v11;

pub use canonical::Form;
pub use crypto::{generate_signing_key, parse_public_key, public_key_hex, utc_string, verify, Draft};
pub use ed25519_dalek::VerifyingKey;
pub use envelope::{Envelope, MAX_ENVELOPE_BYTES};
pub use receipt::{ErrorCode, Receipt, ReceiptStatus, Rejection};

use chrono::{DateTime, Utc};

/// Steps 2–6 of spec 5.1, the part that needs no registry: structure, version,
/// recipient, expiry, signature. Order matters: an expired envelope with a bad signature
/// is EXPIRED, and a wrong recipient is reported before anything about the sender.
pub fn check(bytes: &[u8], inbox_key: &str, now: DateTime<Utc>) -> Result<(Envelope, Form), Rejection> {
    let env = Envelope::parse(bytes)?;
    let form = check_parsed(&env, inbox_key, now)?;
    Ok((env, form))
}

/// Steps 4–6 of spec 5.1 on an envelope that already passed [`Envelope::parse`].
pub fn check_parsed(env: &Envelope, inbox_key: &str, now: DateTime<Utc>) -> Result<Form, Rejection> {
    check_parsed_with(env, inbox_key, now, &Freshness::SPEC, parse_public_key)
}

/// How fresh an envelope must be, beyond the spec's "not after `expires_at`" (step 5).
/// An envelope from a clock far ahead, or one that stays valid for years, would make the
/// inbox keep its nonce that long; these bounds keep replay state finite while every
/// envelope that can still be accepted has its nonce kept (nonces are kept until
/// `expires_at`). See docs/interop.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    /// How far `timestamp` may be ahead of this machine's clock, in seconds.
    pub max_clock_skew_secs: u64,
    /// The longest validity (`expires_at` − `timestamp`) taken, in seconds; 0: no bound.
    pub max_lifetime_secs: u64,
}

impl Freshness {
    /// Only what the spec requires: nothing beyond `expires_at`.
    pub const SPEC: Freshness = Freshness { max_clock_skew_secs: u64::MAX, max_lifetime_secs: 0 };

    fn check(&self, env: &Envelope, now: DateTime<Utc>) -> Result<(), String> {
        let ahead = env.timestamp_utc.signed_duration_since(now).num_seconds();
        if ahead > 0 && ahead as u64 > self.max_clock_skew_secs {
            return Err(format!("timestamp {} is {ahead} s ahead of this inbox's clock (at most {} s is allowed)", env.timestamp, self.max_clock_skew_secs));
        }
        let lifetime = env.expires_at_utc.signed_duration_since(env.timestamp_utc).num_seconds().max(0) as u64;
        if self.max_lifetime_secs > 0 && lifetime > self.max_lifetime_secs {
            return Err(format!("valid for {lifetime} s (timestamp to expires_at); this inbox takes envelopes valid for at most {} s", self.max_lifetime_secs));
        }
        Ok(())
    }
}

/// [`check_parsed`] with the sender's key supplied by `key` (see [`crypto::verify_with`]).
pub fn check_parsed_with(
    env: &Envelope,
    inbox_key: &str,
    now: DateTime<Utc>,
    freshness: &Freshness,
    key: impl FnOnce(&str) -> Result<VerifyingKey, String>,
) -> Result<Form, Rejection> {
    let id = Some(env.envelope_id.clone());
    if env.recipient_key() != inbox_key.to_ascii_lowercase() {
        return Err(Rejection::new(
            ErrorCode::WrongRecipient,
            format!("envelope is addressed to {}…, not this inbox", env.recipient_key().chars().take(16).collect::<String>()),
        )
        .with_envelope_id(id));
    }
    if now > env.expires_at_utc {
        return Err(Rejection::new(ErrorCode::Expired, format!("envelope expired at {}", env.expires_at)).with_envelope_id(id));
    }
    // Outside the window this inbox accepts: reported at the expiry step, as EXPIRED.
    if let Err(why) = freshness.check(env, now) {
        return Err(Rejection::new(ErrorCode::Expired, why).with_envelope_id(id));
    }
    crypto::verify_with(env, key)
}
