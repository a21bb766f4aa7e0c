//! The canonical JSON of spec 4.2 and the JWS payload of 6.3.
//!
//! Canonical form: the envelope without `sig`, keys sorted at every level (by code point,
//! the order of Python's `sort_keys` and of UTF-8 bytes), no whitespace, UTF-8 text
//! (only `"`, `\` and control characters escaped), numbers exactly as sent. The JWS
//! payload is `{"sha256":"<lower-case hex of its SHA-256>"}`.
//!
//! The spec pins neither string escaping, number text nor the payload's spacing, so a
//! verifier also tries the spellings common serializers produce (see docs/interop.md);
//! each is the same envelope written differently, so accepting them lets nobody change
//! what was signed.

use gatehouse_json::{self as json, Json, NumberStyle, Style};
use sha2::{Digest, Sha256};

/// The envelope without its top-level `sig`.
fn without_sig(raw: &Json) -> Json {
    match raw {
        Json::Object(m) => Json::Object(m.iter().filter(|(k, _)| k != "sig").cloned().collect()),
        other => other.clone(),
    }
}

const CANONICAL: Style = Style { sort_keys: true, ascii: false, numbers: NumberStyle::AsSent };

/// The canonical bytes Gatehouse hashes when it signs.
pub fn canonical(raw: &Json) -> Vec<u8> {
    json::to_compact(&without_sig(raw), CANONICAL).into_bytes()
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The JWS payload Gatehouse signs for canonical bytes: `{"sha256":"<hex>"}`.
pub fn jws_payload(canonical: &[u8]) -> Vec<u8> {
    format!("{{\"sha256\":\"{}\"}}", sha256_hex(canonical)).into_bytes()
}

/// Every JWS payload a peer may have signed for this envelope, the canonical one first:
/// canonical bytes as above, with Python-style numbers, with non-ASCII escaped
/// (`json.dumps` without `ensure_ascii=False`); the payload compact or with Python's
/// default `": "` separator.
pub fn candidate_payloads(raw: &Json) -> Vec<Vec<u8>> {
    let body = without_sig(raw);
    let mut canon: Vec<String> = Vec::new();
    for ascii in [false, true] {
        for numbers in [NumberStyle::AsSent, NumberStyle::Python] {
            let text = json::to_compact(&body, Style { sort_keys: true, ascii, numbers });
            if !canon.contains(&text) {
                canon.push(text);
            }
        }
    }
    let mut out = Vec::new();
    for spaced in [false, true] {
        for c in &canon {
            let h = sha256_hex(c.as_bytes());
            out.push(if spaced { format!("{{\"sha256\": \"{h}\"}}") } else { format!("{{\"sha256\":\"{h}\"}}") }.into_bytes());
        }
    }
    out
}
