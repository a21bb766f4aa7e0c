//! Ed25519 keys, envelope signing (in the reference form) and verification (spec 4).

use base64::Engine as _;
use chrono::{DateTime, SecondsFormat, Utc};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rand::RngCore;

use crate::canonical::{self, Form};
use crate::envelope::Envelope;
use crate::json::{to_compact, Json, Style};
use crate::receipt::{ErrorCode, Rejection};

/// Parses a 64-hex Ed25519 public key (any case).
pub fn parse_public_key(hex_key: &str) -> Result<VerifyingKey, String> {
    let bytes: [u8; 32] =
        hex::decode(hex_key).map_err(|_| "not hexadecimal".to_string())?.try_into().map_err(|_| "not 32 bytes (64 hex characters)".to_string())?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| "not a valid Ed25519 public key".to_string())
}

pub fn public_key_hex(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().as_bytes())
}

pub fn generate_signing_key() -> SigningKey {
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    SigningKey::from_bytes(&seed)
}

/// Step 6 of spec 5.1. Returns which serialisation the signature matched.
pub fn verify(env: &Envelope) -> Result<Form, Rejection> {
    verify_with(env, parse_public_key)
}

/// [`verify`] with the sender's key supplied by `key` (from a cache of decompressed keys,
/// say: decompressing is a fifth of a verification).
pub fn verify_with(env: &Envelope, key: impl FnOnce(&str) -> Result<VerifyingKey, String>) -> Result<Form, Rejection> {
    let fail = |m: &str| Rejection::new(ErrorCode::InvalidSignature, m).with_envelope_id(Some(env.envelope_id.clone()));
    let key = key(&env.sender).map_err(|e| fail(&format!("sender key is unusable: {e}")))?;
    let sig_bytes: [u8; 64] =
        env.signature_bytes.as_slice().try_into().map_err(|_| fail(&format!("signature must be 64 bytes, got {}", env.signature_bytes.len())))?;
    let sig = Signature::from_bytes(&sig_bytes);
    // The other serialisations are only built when the reference one does not match.
    if verify_signature(&key, &canonical::reference_payload(env), &sig) {
        return Ok(Form::Reference);
    }
    for (form, bytes) in canonical::candidates(env).into_iter().skip(1) {
        if verify_signature(&key, &bytes, &sig) {
            return Ok(form);
        }
    }
    Err(fail("the signature does not match the envelope's contents and sender key"))
}

/// Ed25519 verification deciding exactly what `verify_strict` decides: `s` canonical, the
/// cofactorless equation, and neither the key nor `R` of small order. `verify_strict` learns
/// whether `R` is of small order by decompressing it, a square root costing a tenth of the
/// whole verification. Here the plain check runs instead, and it only passes when `R`'s bytes
/// are the canonical encoding of the point the equation computed; such an `R` is of small
/// order exactly when its bytes are one of the eight small-order points' encodings.
pub fn verify_signature(key: &VerifyingKey, message: &[u8], signature: &Signature) -> bool {
    use ed25519_dalek::Verifier as _;
    static SMALL_ORDER: std::sync::LazyLock<[[u8; 32]; 8]> =
        std::sync::LazyLock::new(|| curve25519_dalek::constants::EIGHT_TORSION.map(|p| p.compress().to_bytes()));
    !key.is_weak() && !SMALL_ORDER.contains(signature.r_bytes()) && key.verify(message, signature).is_ok()
}

pub fn utc_string(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// With milliseconds, for receipts (so their order is visible within a second).
pub fn utc_string_ms(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// What a sender fills in; [`Draft::sign`] adds nonce, id and signature.
#[derive(Debug, Clone)]
pub struct Draft {
    pub recipient: String,
    pub scope: String,
    pub prompt: String,
    pub context: Option<serde_json::Value>,
    pub metadata: Option<serde_json::Value>,
    pub payload_type: Option<String>,
    pub conversation_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub on_behalf_of: Option<String>,
    pub authorization: Option<String>,
    pub ttl: chrono::Duration,
}

impl Draft {
    pub fn new(recipient: &str, scope: &str, prompt: &str) -> Self {
        Draft {
            recipient: recipient.to_ascii_lowercase(),
            scope: scope.into(),
            prompt: prompt.into(),
            context: None,
            metadata: None,
            payload_type: None,
            conversation_id: None,
            in_reply_to: None,
            on_behalf_of: None,
            authorization: None,
            ttl: chrono::Duration::hours(1),
        }
    }

    /// Signs in the reference form (sorted, ASCII-escaped, explicit `authorization`),
    /// which both spec-literal and reference inboxes accept. Returns the wire JSON.
    pub fn sign(&self, key: &SigningKey, now: DateTime<Utc>) -> serde_json::Value {
        let mut nonce = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut payload = serde_json::Map::new();
        payload.insert("prompt".into(), self.prompt.clone().into());
        if let Some(c) = &self.context {
            payload.insert("context".into(), c.clone());
        }
        if let Some(m) = &self.metadata {
            payload.insert("metadata".into(), m.clone());
        }
        if let Some(t) = &self.payload_type {
            payload.insert("payload_type".into(), t.clone().into());
        }
        let payload = serde_json::Value::Object(payload);
        let delegation = self.on_behalf_of.as_ref().map(|p| serde_json::json!({"on_behalf_of": p.to_ascii_lowercase(), "authorization": self.authorization}));
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut env = serde_json::json!({
            "version": "1",
            "envelope_id": uuid::Uuid::new_v4().to_string(),
            "sender": public_key_hex(key),
            "recipient": self.recipient,
            "timestamp": utc_string(now),
            "expires_at": utc_string(now.checked_add_signed(self.ttl).unwrap_or(DateTime::<Utc>::MAX_UTC)),
            "nonce": b64.encode(nonce),
            "scope": self.scope,
            "payload": payload,
        });
        let s = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
        let delegation_json = delegation.as_ref().map(|d| to_compact(&Json::from_serde(d), Style::REFERENCE)).unwrap_or_default();
        let bytes = canonical::join_fields(
            "1",
            &s(&env, "envelope_id"),
            &s(&env, "sender"),
            &s(&env, "recipient"),
            &s(&env, "timestamp"),
            &s(&env, "expires_at"),
            &s(&env, "nonce"),
            &s(&env, "scope"),
            self.conversation_id.as_deref(),
            self.in_reply_to.as_deref(),
            &delegation_json,
            &to_compact(&Json::from_serde(&payload), Style::REFERENCE),
        );
        let sig = key.sign(&bytes);
        let obj = env.as_object_mut().expect("built as an object");
        if let Some(c) = &self.conversation_id {
            obj.insert("conversation_id".into(), c.clone().into());
        }
        if let Some(r) = &self.in_reply_to {
            obj.insert("in_reply_to".into(), r.clone().into());
        }
        if let Some(d) = delegation {
            obj.insert("delegation".into(), d);
        }
        obj.insert("signature".into(), b64.encode(sig.to_bytes()).into());
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_drafts_verify_in_the_reference_form() {
        let key = generate_signing_key();
        let mut d = Draft::new(&"ab".repeat(32), "support", "Grüße 🐑 \"quoted\"\n");
        d.context = Some(serde_json::json!({"z": 1.5, "a": {"b": [1, 2, null]}}));
        d.on_behalf_of = Some("CD".repeat(32));
        d.conversation_id = Some(uuid::Uuid::new_v4().to_string());
        let wire = d.sign(&key, Utc::now());
        let env = Envelope::parse(wire.to_string().as_bytes()).unwrap();
        assert_eq!(verify(&env), Ok(Form::Reference));
        // The wire carries the explicit null so spec-literal verifiers agree.
        assert_eq!(wire["delegation"]["authorization"], serde_json::Value::Null);
    }

    #[test]
    fn tampering_any_signed_field_breaks_the_signature() {
        let key = generate_signing_key();
        let mut d = Draft::new(&"ab".repeat(32), "support", "hello");
        d.conversation_id = Some(uuid::Uuid::new_v4().to_string());
        let wire = d.sign(&key, Utc::now());
        for (field, value) in [
            ("scope", serde_json::json!("admin")),
            ("envelope_id", serde_json::json!("other")),
            ("expires_at", serde_json::json!("2099-01-01T00:00:00Z")),
            ("conversation_id", serde_json::json!(uuid::Uuid::new_v4().to_string())),
            ("payload", serde_json::json!({"prompt": "hello!"})),
            ("in_reply_to", serde_json::json!("x")),
        ] {
            let mut w = wire.clone();
            w[field] = value;
            let env = Envelope::parse(w.to_string().as_bytes()).unwrap();
            assert_eq!(verify(&env).unwrap_err().code, ErrorCode::InvalidSignature, "{field}");
        }
    }
}
