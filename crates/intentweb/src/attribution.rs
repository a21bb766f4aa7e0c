//! Attribution (§5), signed and checked. The spec leaves the signature open; Gatehouse
//! signs each chain entry it adds with Ed25519 over RFC 8785 (JCS) bytes and says so in
//! the entry itself (`alg`, `kid`). Exactly (docs/interop.md, "IntentWeb attribution"):
//!
//! - `query_hash` = lower-case hex SHA-256 of JCS(`{"flow_type":"intent_request",
//!   "interaction_id":…, "message":<the initial intent>, "protocol_version":"1.0"}`); every
//!   message of the interaction, both ways, carries the same value.
//! - signed bytes = JCS(`{"actor_id", "actor_type", "attribution_timestamp",
//!   "chain_timestamp", "flow_type", "interaction_id", "message_sha256", "nonce",
//!   "query_hash"}`) with `message_sha256` the hex SHA-256 of the message's UTF-8 bytes.
//! - `signature` = base64url without padding of the 64-byte Ed25519 signature; `alg` =
//!   `EdDSA`; `kid` = the signer's did:key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use gatehouse_uamp::did::{self, PublicKey};
use rand::RngCore as _;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::envelope::{ChainEntry, Envelope, FlowType, PROTOCOL_VERSION};

pub const ALG: &str = "EdDSA";

fn jcs(v: &serde_json::Value) -> Vec<u8> {
    serde_json_canonicalizer::to_vec(v).expect("a JSON value canonicalises")
}

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The hash every message of an interaction carries: its initial intent, canonicalised.
pub fn query_hash(interaction_id: &str, initial_message: &str) -> String {
    sha256_hex(&jcs(
        &json!({"flow_type": "intent_request", "interaction_id": interaction_id, "message": initial_message, "protocol_version": PROTOCOL_VERSION}),
    ))
}

/// 128 random bits, base64url.
pub fn fresh_nonce() -> String {
    let mut b = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

/// The exact bytes a chain entry's signature covers.
pub fn signed_bytes(env: &Envelope, entry: &ChainEntry) -> Vec<u8> {
    jcs(&json!({
        "actor_id": entry.actor_id,
        "actor_type": entry.actor_type,
        "attribution_timestamp": env.attribution.timestamp,
        "chain_timestamp": entry.timestamp,
        "flow_type": env.flow_type.as_str(),
        "interaction_id": env.interaction_id,
        "message_sha256": sha256_hex(env.message.as_bytes()),
        "nonce": env.attribution.nonce,
        "query_hash": env.attribution.query_hash,
    }))
}

/// Appends a signed chain entry for `key` as `actor_type` (its actor_id is its did:key).
pub fn sign(env: &mut Envelope, key: &SigningKey, actor_type: &str, at: &str) {
    let kid = PublicKey::Ed25519(key.verifying_key()).did_key();
    let mut entry = ChainEntry {
        actor_type: actor_type.into(),
        actor_id: kid.clone(),
        timestamp: at.into(),
        signature: String::new(),
        alg: Some(ALG.into()),
        kid: Some(kid),
    };
    entry.signature = URL_SAFE_NO_PAD.encode(key.sign(&signed_bytes(env, &entry)).to_bytes());
    env.attribution.chain.push(entry);
}

/// A new message of an interaction, with fresh attribution signed by `key`.
#[allow(clippy::too_many_arguments)]
pub fn draft(
    flow_type: FlowType,
    interaction_id: &str,
    initial_message: &str,
    message: &str,
    locale: Option<&str>,
    key: &SigningKey,
    actor_type: &str,
    now: &str,
) -> Envelope {
    let mut env = Envelope {
        protocol_version: PROTOCOL_VERSION.into(),
        flow_type,
        message: message.into(),
        interaction_id: interaction_id.into(),
        attribution: crate::envelope::Attribution {
            query_hash: query_hash(interaction_id, initial_message),
            nonce: fresh_nonce(),
            timestamp: now.into(),
            chain: Vec::new(),
        },
        required_information: Vec::new(),
        collected_information: None,
        status: None,
        external_id: None,
        explicability: Vec::new(),
        locale: locale.map(str::to_string),
        timestamp: Some(now.into()),
    };
    sign(&mut env, key, actor_type, now);
    env
}

/// What checking a message's attribution found, for the user to see.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// Signed by the pinned key.
    Verified { kid: String },
    /// Correctly signed by a key the user has not pinned yet (first contact).
    NewKey { kid: String },
    /// Correctly signed, but not by the key the user pinned.
    KeyMismatch { pinned: String, kid: String },
    /// No entry of this actor carries a signature Gatehouse can check.
    Unsigned,
    /// A signature that does not verify, or a query_hash that is not this interaction's.
    Invalid { reason: String },
}

impl Verdict {
    /// Whether the message may change the conversation.
    pub fn acceptable(&self) -> bool {
        matches!(self, Verdict::Verified { .. } | Verdict::NewKey { .. } | Verdict::Unsigned)
    }
}

/// Checks one chain entry's signature; Ok(kid).
pub fn verify_entry(env: &Envelope, entry: &ChainEntry) -> Result<String, String> {
    if entry.alg.as_deref() != Some(ALG) {
        return Err(format!("the {} entry's alg is {:?}; Gatehouse checks EdDSA", entry.actor_type, entry.alg));
    }
    let kid = entry.kid.clone().ok_or_else(|| format!("the {} entry names no kid", entry.actor_type))?;
    let key = did::resolve_did_key(&kid).map_err(|e| format!("kid {kid}: {e}"))?;
    let sig = URL_SAFE_NO_PAD.decode(entry.signature.trim_end_matches('=')).map_err(|_| format!("the {} signature is not base64url", entry.actor_type))?;
    if key.verify(&signed_bytes(env, entry), &sig) {
        Ok(kid)
    } else {
        Err(format!("the {} signature does not match this message", entry.actor_type))
    }
}

/// Checks the attribution of a message from `actor_type` (an IntentSite: `intent_site`)
/// against `expected_query_hash` and, when the user pinned one, its key.
pub fn verify(env: &Envelope, actor_type: &str, expected_query_hash: &str, pinned: Option<&str>) -> Verdict {
    if env.attribution.query_hash != expected_query_hash {
        return Verdict::Invalid { reason: format!("query_hash {} is not this interaction's ({expected_query_hash})", env.attribution.query_hash) };
    }
    let entry = env.attribution.chain.iter().rev().find(|e| e.actor_type == actor_type && (e.alg.is_some() || e.kid.is_some()));
    let Some(entry) = entry else {
        return match pinned {
            // Once a key is pinned, an unsigned answer is not the site the user trusts.
            Some(p) => Verdict::Invalid { reason: format!("the message is not signed, though you pinned {p}") },
            None => Verdict::Unsigned,
        };
    };
    match verify_entry(env, entry) {
        Err(reason) => Verdict::Invalid { reason },
        Ok(kid) => match pinned {
            Some(p) if p == kid => Verdict::Verified { kid },
            Some(p) => Verdict::KeyMismatch { pinned: p.to_string(), kid },
            None => Verdict::NewKey { kid },
        },
    }
}
