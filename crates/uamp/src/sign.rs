//! Building and signing the envelopes Gatehouse sends.

use ed25519_dalek::SigningKey;
use gatehouse_json::Json;
use serde_json::{json, Value};

use crate::canonical;
use crate::did::PublicKey;
use crate::envelope::Intent;

/// Gatehouse's UAMP identity: the did:key of its Ed25519 key.
pub fn did_of(key: &SigningKey) -> String {
    PublicKey::Ed25519(key.verifying_key()).did_key()
}

/// The `kid` Gatehouse signs with: its did:key with the key as fragment (the did:key
/// method's verification method id).
pub fn kid_of(key: &SigningKey) -> String {
    let did = did_of(key);
    let frag = did.trim_start_matches("did:key:").to_string();
    format!("{did}#{frag}")
}

/// A new envelope with a fresh `urn:uuid:` id and `ts` now (the caller adds optional members).
pub fn draft(from: &str, to: &[&str], intent: Intent, body_type: &str, content: &str) -> Value {
    json!({
        "id": format!("urn:uuid:{}", uuid::Uuid::new_v4()),
        "ts": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "from": from,
        "to": to,
        "intent": intent.as_str(),
        "body": {"type": body_type, "content": content},
    })
}

/// Adds `sig`: a detached EdDSA JWS over `{"sha256": canonical hash}` (spec 4.2, 6.3).
pub fn sign(envelope: Value, key: &SigningKey) -> Value {
    sign_as(envelope, key, &kid_of(key))
}

/// [`sign`] naming `kid` (a did:web agent names a verification method of its DID document).
pub fn sign_as(mut envelope: Value, key: &SigningKey, kid: &str) -> Value {
    if let Some(o) = envelope.as_object_mut() {
        o.remove("sig");
    }
    let canonical = canonical::canonical(&Json::from_serde(&envelope));
    let sig = crate::jws::sign_eddsa(&canonical::jws_payload(&canonical), key, kid, None, true);
    if let Some(o) = envelope.as_object_mut() {
        o.insert("sig".into(), sig.into());
    }
    envelope
}
