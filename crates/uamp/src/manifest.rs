//! The agent manifest (schema A.3) and its signed form served at
//! `/.well-known/agent-manifest.json` (spec 8).

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use crate::did::PublicKey;
use crate::error::UampError;
use crate::jws::Compact;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Limits {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_body_kb: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_lph: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Manifest {
    pub agent: String,
    pub description: String,
    pub intents: Vec<String>,
    pub body_types: Vec<String>,
    pub auth: Vec<String>,
    pub limits: Limits,
}

/// The JWS `typ` Gatehouse writes on manifests.
pub const TYP: &str = "manifest+jws";

impl Manifest {
    /// Reads and schema-checks a manifest.
    pub fn from_json(bytes: &[u8]) -> Result<Manifest, UampError> {
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| UampError::invalid("/", format!("the manifest is not JSON: {e}")))?;
        crate::schema::check("manifest", &v)?;
        serde_json::from_value(v).map_err(|e| UampError::invalid("/", e.to_string()))
    }

    /// The signed form: a compact JWS with the manifest JSON attached, `kid` naming the
    /// key (Gatehouse's did:key).
    pub fn sign(&self, key: &SigningKey, kid: &str) -> String {
        let payload = serde_json::to_vec(self).expect("a manifest serialises");
        crate::jws::sign_eddsa(&payload, key, kid, Some(TYP), false)
    }
}

/// A signed manifest taken apart: the manifest, the `kid` that signed it and the JWS.
#[derive(Debug, Clone)]
pub struct SignedManifest {
    pub manifest: Manifest,
    pub kid: String,
    pub jws: Compact,
}

impl SignedManifest {
    /// Parses the JWS and the manifest in it; the signature is not yet checked
    /// (the caller finds the key `kid` names, then calls [`Self::verify`]).
    pub fn parse(text: &str) -> Result<SignedManifest, UampError> {
        let jws = Compact::parse(text.trim()).map_err(|e| UampError::invalid("/", format!("the signed manifest: {e}")))?;
        if jws.payload_b64.is_empty() {
            return Err(UampError::invalid("/", "the signed manifest has no payload (a manifest JWS is not detached)"));
        }
        let kid = jws.kid.clone().ok_or_else(|| UampError::invalid("/", "the manifest's JWS header names no kid, so no key can verify it"))?;
        let manifest = Manifest::from_json(&jws.payload())?;
        Ok(SignedManifest { manifest, kid, jws })
    }

    pub fn verify(&self, key: &PublicKey) -> bool {
        self.jws.verify(&self.jws.payload(), key)
    }
}
