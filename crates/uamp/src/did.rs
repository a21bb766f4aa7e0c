//! Which public key a JWS `kid` names.
//!
//! `did:key` carries its key in the identifier and is resolved here, offline. `did:web`
//! names a DID document at an HTTPS address ([`did_web_url`]); the inbox fetches it only
//! when the user adds the sender and keeps the keys read from it ([`keys_from_document`])
//! in the trust entry, so no envelope ever makes the inbox go to the network.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::Verifier as _;
use serde_json::{json, Value};

const ED25519_CODEC: [u8; 2] = [0xed, 0x01];
const P256_CODEC: [u8; 2] = [0x80, 0x24];

/// A JWS algorithm (RFC 7518) this crate signs and verifies with: the key's kind decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Alg {
    EdDSA,
    ES256,
}

impl Alg {
    pub fn as_str(self) -> &'static str {
        match self {
            Alg::EdDSA => "EdDSA",
            Alg::ES256 => "ES256",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    P256(p256::ecdsa::VerifyingKey),
}

impl PublicKey {
    pub fn alg(&self) -> Alg {
        match self {
            PublicKey::Ed25519(_) => Alg::EdDSA,
            PublicKey::P256(_) => Alg::ES256,
        }
    }

    /// Verifies a JWS signature: 64 bytes for Ed25519, R||S (64 bytes, RFC 7518 3.4) for ES256.
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        match self {
            PublicKey::Ed25519(k) => {
                let Ok(sig) = ed25519_dalek::Signature::from_slice(sig) else { return false };
                k.verify_strict(msg, &sig).is_ok()
            }
            PublicKey::P256(k) => {
                let Ok(sig) = p256::ecdsa::Signature::from_slice(sig) else { return false };
                k.verify(msg, &sig).is_ok()
            }
        }
    }

    /// The key as a `did:key` identifier.
    pub fn did_key(&self) -> String {
        let mut bytes = Vec::new();
        match self {
            PublicKey::Ed25519(k) => {
                bytes.extend_from_slice(&ED25519_CODEC);
                bytes.extend_from_slice(k.as_bytes());
            }
            PublicKey::P256(k) => {
                bytes.extend_from_slice(&P256_CODEC);
                bytes.extend_from_slice(k.to_encoded_point(true).as_bytes());
            }
        }
        format!("did:key:z{}", bs58::encode(bytes).into_string())
    }

    /// The key as a JWK (RFC 8037 for Ed25519, RFC 7518 for P-256): how trust entries store it.
    pub fn to_jwk(&self) -> Value {
        match self {
            PublicKey::Ed25519(k) => json!({"kty": "OKP", "crv": "Ed25519", "x": URL_SAFE_NO_PAD.encode(k.as_bytes())}),
            PublicKey::P256(k) => {
                let p = k.to_encoded_point(false);
                json!({
                    "kty": "EC", "crv": "P-256",
                    "x": URL_SAFE_NO_PAD.encode(p.x().expect("uncompressed point has x")),
                    "y": URL_SAFE_NO_PAD.encode(p.y().expect("uncompressed point has y")),
                })
            }
        }
    }

    /// The key an X.509 certificate (DER) carries: what an mTLS client proves it holds.
    /// Only the key matters (its did:key is the client's identity); names, issuer and
    /// validity dates of a self-signed agent certificate say nothing a peer could check.
    pub fn from_certificate(der: &[u8]) -> Result<PublicKey, String> {
        use x509_cert::der::{oid::ObjectIdentifier, Decode as _};
        const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
        const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
        const PRIME256V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
        let cert = x509_cert::Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        let spki = &cert.tbs_certificate.subject_public_key_info;
        let bits = spki.subject_public_key.as_bytes().ok_or("the certificate's public key is not whole bytes")?;
        let alg = spki.algorithm.oid;
        if alg == ED25519 {
            let bytes: [u8; 32] = bits.try_into().map_err(|_| "an Ed25519 key is 32 bytes".to_string())?;
            return ed25519_dalek::VerifyingKey::from_bytes(&bytes).map(PublicKey::Ed25519).map_err(|e| format!("bad Ed25519 key: {e}"));
        }
        if alg == EC_PUBLIC_KEY {
            let curve = spki.algorithm.parameters.as_ref().and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
            if curve != Some(PRIME256V1) {
                return Err("the certificate's EC key is not on P-256".into());
            }
            return p256::ecdsa::VerifyingKey::from_sec1_bytes(bits).map(PublicKey::P256).map_err(|e| format!("bad P-256 key: {e}"));
        }
        Err(format!("the certificate's key type {alg} is neither Ed25519 nor P-256"))
    }

    pub fn from_jwk(jwk: &Value) -> Result<PublicKey, String> {
        let field = |k: &str| -> Result<Vec<u8>, String> {
            let s = jwk.get(k).and_then(|v| v.as_str()).ok_or_else(|| format!("the JWK has no {k}"))?;
            URL_SAFE_NO_PAD.decode(s).map_err(|_| format!("the JWK's {k} is not base64url"))
        };
        match (jwk.get("kty").and_then(|v| v.as_str()), jwk.get("crv").and_then(|v| v.as_str())) {
            (Some("OKP"), Some("Ed25519")) => ed25519(&field("x")?),
            (Some("EC"), Some("P-256")) => {
                let (x, y) = (field("x")?, field("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err("a P-256 JWK has 32-byte x and y".into());
                }
                let mut sec1 = vec![4u8];
                sec1.extend_from_slice(&x);
                sec1.extend_from_slice(&y);
                p256(&sec1)
            }
            (kty, crv) => Err(format!("unsupported JWK (kty {kty:?}, crv {crv:?}); UAMP keys are Ed25519 or P-256")),
        }
    }

    /// Reads a multibase (`z` + base58btc) multicodec key, as in did:key and
    /// `publicKeyMultibase`.
    pub fn from_multibase(s: &str) -> Result<PublicKey, String> {
        let b58 = s.strip_prefix('z').ok_or("only base58btc multibase keys (starting with z) are supported")?;
        let bytes = bs58::decode(b58).into_vec().map_err(|_| "the key is not base58btc")?;
        if let Some(k) = bytes.strip_prefix(&ED25519_CODEC) {
            ed25519(k)
        } else if let Some(k) = bytes.strip_prefix(&P256_CODEC) {
            p256(k)
        } else {
            Err("the key is neither Ed25519 (0xed) nor P-256 (0x1200)".into())
        }
    }
}

fn ed25519(bytes: &[u8]) -> Result<PublicKey, String> {
    let arr: [u8; 32] = bytes.try_into().map_err(|_| "an Ed25519 key is 32 bytes")?;
    ed25519_dalek::VerifyingKey::from_bytes(&arr).map(PublicKey::Ed25519).map_err(|_| "not a valid Ed25519 point".into())
}

fn p256(sec1: &[u8]) -> Result<PublicKey, String> {
    p256::ecdsa::VerifyingKey::from_sec1_bytes(sec1).map(PublicKey::P256).map_err(|_| "not a valid P-256 point".into())
}

/// Splits `did:…#fragment` into the DID and the fragment.
pub fn split_kid(kid: &str) -> (&str, Option<&str>) {
    match kid.split_once('#') {
        Some((did, frag)) => (did, Some(frag)),
        None => (kid, None),
    }
}

/// The key of a `did:key` (with or without a `#fragment`).
pub fn resolve_did_key(kid: &str) -> Result<PublicKey, String> {
    let (did, _) = split_kid(kid);
    let id = did.strip_prefix("did:key:").ok_or_else(|| format!("{did} is not a did:key"))?;
    PublicKey::from_multibase(id)
}

/// The HTTPS address of a did:web's DID document (W3C did:web method, section 3.2).
pub fn did_web_url(did: &str) -> Result<String, String> {
    let (did, _) = split_kid(did);
    let id = did.strip_prefix("did:web:").ok_or_else(|| format!("{did} is not a did:web"))?;
    let mut parts = id.split(':');
    let host = parts.next().filter(|h| !h.is_empty()).ok_or("a did:web names a host")?;
    let host = host.replace("%3A", ":").replace("%3a", ":");
    if host.contains(['/', '?', '#', '@']) || host.contains('%') {
        return Err(format!("{host:?} is not a host name"));
    }
    let path: Vec<&str> = parts.collect();
    if path.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return Err("a did:web path has empty or dot segments".into());
    }
    Ok(if path.is_empty() { format!("https://{host}/.well-known/did.json") } else { format!("https://{host}/{}/did.json", path.join("/")) })
}

/// The keys a DID document lists (`verificationMethod`, and methods embedded in
/// `authentication` / `assertionMethod`), each with its absolute `kid`.
pub fn keys_from_document(did: &str, doc: &Value) -> Result<Vec<(String, PublicKey)>, String> {
    if doc.get("id").and_then(|v| v.as_str()) != Some(did) {
        return Err(format!("the DID document is for {:?}, not {did}", doc.get("id").and_then(|v| v.as_str()).unwrap_or("nobody")));
    }
    let mut out: Vec<(String, PublicKey)> = Vec::new();
    let methods = ["verificationMethod", "authentication", "assertionMethod"]
        .iter()
        .filter_map(|k| doc.get(*k).and_then(|v| v.as_array()))
        .flatten()
        .filter(|m| m.is_object());
    for m in methods {
        let Some(id) = m.get("id").and_then(|v| v.as_str()) else { continue };
        let kid = if id.starts_with('#') { format!("{did}{id}") } else { id.to_string() };
        let key = if let Some(jwk) = m.get("publicKeyJwk") {
            PublicKey::from_jwk(jwk)
        } else if let Some(mb) = m.get("publicKeyMultibase").and_then(|v| v.as_str()) {
            PublicKey::from_multibase(mb)
        } else {
            continue;
        };
        let key = key.map_err(|e| format!("{kid}: {e}"))?;
        if !out.iter().any(|(k, _)| *k == kid) {
            out.push((kid, key));
        }
    }
    if out.is_empty() {
        return Err("the DID document lists no Ed25519 or P-256 key".into());
    }
    Ok(out)
}
