//! Compact JWS (RFC 7515): detached for envelopes (Appendix F: the payload part is empty
//! and the verifier supplies it), attached for manifests and capability tokens.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};

// The algorithm is the key's (`did`): a JWS names it, a key decides it.
pub use crate::did::Alg;
use crate::did::PublicKey;

/// A compact JWS split into its parts, its header read.
#[derive(Debug, Clone, PartialEq)]
pub struct Compact {
    pub header_b64: String,
    pub alg: Alg,
    pub kid: Option<String>,
    pub typ: Option<String>,
    /// Empty for a detached JWS.
    pub payload_b64: String,
    pub signature: Vec<u8>,
}

fn b64(part: &str, what: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD.decode(part).map_err(|_| format!("the {what} is not unpadded base64url"))
}

impl Compact {
    pub fn parse(s: &str) -> Result<Compact, String> {
        let parts: Vec<&str> = s.split('.').collect();
        let [header_b64, payload_b64, signature_b64] = parts[..] else {
            return Err(format!("a compact JWS has 3 dot-separated parts; this has {}", parts.len()));
        };
        let header_bytes = b64(header_b64, "JWS header")?;
        let header: serde_json::Value = serde_json::from_slice(&header_bytes).map_err(|_| "the JWS header is not JSON".to_string())?;
        let obj = header.as_object().ok_or("the JWS header is not a JSON object")?;
        let alg = match obj.get("alg").and_then(|a| a.as_str()) {
            Some("EdDSA") => Alg::EdDSA,
            Some("ES256") => Alg::ES256,
            Some(other) => return Err(format!("JWS alg {other:?} is not allowed (UAMP 6.3: ES256 or EdDSA)")),
            None => return Err("the JWS header has no alg".into()),
        };
        // RFC 7515 4.1.11: a critical extension we do not understand must fail. We
        // understand none (not even RFC 7797 b64, which changes the signing input).
        if obj.contains_key("crit") {
            return Err("the JWS header lists critical extensions (crit), which this inbox does not support".into());
        }
        let text = |k: &str| obj.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let signature = b64(signature_b64, "JWS signature")?;
        if !payload_b64.is_empty() {
            b64(payload_b64, "JWS payload")?;
        }
        Ok(Compact { header_b64: header_b64.to_string(), alg, kid: text("kid"), typ: text("typ"), payload_b64: payload_b64.to_string(), signature })
    }

    /// The attached payload (empty for a detached JWS).
    pub fn payload(&self) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(&self.payload_b64).unwrap_or_default()
    }

    /// Checks the signature over `payload` (the detached content, or [`Self::payload`]).
    pub fn verify(&self, payload: &[u8], key: &PublicKey) -> bool {
        if key.alg() != self.alg {
            return false;
        }
        let input = signing_input(&self.header_b64, payload);
        key.verify(input.as_bytes(), &self.signature)
    }

    /// Tries each candidate payload; true when one verifies.
    pub fn verify_any(&self, payloads: &[Vec<u8>], key: &PublicKey) -> bool {
        payloads.iter().any(|p| self.verify(p, key))
    }
}

fn signing_input(header_b64: &str, payload: &[u8]) -> String {
    format!("{header_b64}.{}", URL_SAFE_NO_PAD.encode(payload))
}

/// Signs `payload` with Ed25519 under a header `{"alg":"EdDSA","kid":kid,...extra}`;
/// `detached` leaves the payload part empty.
pub fn sign_eddsa(payload: &[u8], key: &SigningKey, kid: &str, typ: Option<&str>, detached: bool) -> String {
    let mut header = serde_json::Map::new();
    header.insert("alg".into(), "EdDSA".into());
    header.insert("kid".into(), kid.into());
    if let Some(t) = typ {
        header.insert("typ".into(), t.into());
    }
    let header_b64 = URL_SAFE_NO_PAD.encode(serde_json::Value::Object(header).to_string());
    let input = signing_input(&header_b64, payload);
    let sig = key.sign(input.as_bytes());
    let payload_part = if detached { String::new() } else { URL_SAFE_NO_PAD.encode(payload) };
    format!("{header_b64}.{payload_part}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}
