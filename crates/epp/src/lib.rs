//! EPP v1 (External Prompt Protocol), the protocol half of Gatehouse's inbox.
//!
//! Pure functions only: bytes in, typed values or typed [`Rejection`]s out. The clock is
//! passed in by the caller, and nothing here touches disk or network.

pub mod canonical;
pub mod crypto;
pub mod envelope;
pub mod json;
pub mod receipt;

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
    check_parsed_with(env, inbox_key, now, parse_public_key)
}

/// [`check_parsed`] with the sender's key supplied by `key` (see [`crypto::verify_with`]).
pub fn check_parsed_with(
    env: &Envelope,
    inbox_key: &str,
    now: DateTime<Utc>,
    key: impl FnOnce(&str) -> Result<VerifyingKey, String>,
) -> Result<Form, Rejection> {
    let id = Some(env.envelope_id.clone());
    if env.recipient_key() != inbox_key.to_ascii_lowercase() {
        return Err(Rejection::new(
            ErrorCode::WrongRecipient,
            format!("envelope is addressed to {}…, not this inbox", &env.recipient_key()[..16]),
        )
        .with_envelope_id(id));
    }
    if now > env.expires_at_utc {
        return Err(Rejection::new(ErrorCode::Expired, format!("envelope expired at {}", env.expires_at))
            .with_envelope_id(id));
    }
    crypto::verify_with(env, key)
}
