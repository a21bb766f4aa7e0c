//! Attribution (§5), signed and checked. The spec leaves the signature open; Gatehouse
//! signs each chain entry it adds with Ed25519 over RFC 8785 (JCS) bytes and says so in
//! the entry itself (`alg`, `kid`). Exactly (docs/interop.md, "IntentWeb attribution"):
//!
//! - `query_hash` = lower-case hex SHA-256 of JCS(`{"flow_type":"intent_request",
//!   "interaction_id":…, "message":<the initial intent>, "protocol_version":"1.0"}`); every
//!   message of the interaction, both ways, carries the same value.
//! - signed bytes of chain entry *i* = JCS of the whole envelope as sent, with
//!   `attribution.chain` cut after entry *i* and that entry's `signature` member left out.
//!   Every field the envelope carries is covered — the message, `status`, `external_id`,
//!   `required_information`, `collected_information`, `explicability`, the earlier
//!   entries with their signatures — and so is the entry's own `alg`, `kid` and timestamp.
//!   Entries appended later (by someone the message passes through) are not.
//! - `signature` = base64url without padding of the 64-byte Ed25519 signature; `alg` =
//!   `EdDSA`; `kid` = the signer's did:key.
//!
//! Gatehouse's first scheme signed only the message's hash, the ids, the nonce and the
//! timestamps ([`first_scheme_bytes`]). An answer that verifies only under it is read as
//! the site's words with claims beside them: its `status`, `external_id` and the rest were
//! not signed, so they never become the conversation's outcome ([`Verdict::FirstScheme`]).

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

/// The exact bytes chain entry `index` of `envelope` (as sent, JSON) is signed over; None
/// when there is no such entry.
pub fn signed_bytes(envelope: &serde_json::Value, index: usize) -> Option<Vec<u8>> {
    let mut v = envelope.clone();
    let chain = v.get_mut("attribution")?.get_mut("chain")?.as_array_mut()?;
    if index >= chain.len() {
        return None;
    }
    chain.truncate(index.checked_add(1)?);
    chain.last_mut()?.as_object_mut()?.remove("signature");
    Some(jcs(&v))
}

/// The bytes Gatehouse's first scheme signed: the message's hash, the ids, the nonce and
/// the timestamps, nothing of the outcome. Read only to tell such an answer's claims from
/// a forgery.
pub fn first_scheme_bytes(env: &Envelope, entry: &ChainEntry) -> Vec<u8> {
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

/// Appends a signed chain entry for `key` as `actor_type` (its actor_id is its did:key),
/// covering the envelope as it is now: set every field before signing.
pub fn sign(env: &mut Envelope, key: &SigningKey, actor_type: &str, at: &str) {
    let kid = PublicKey::Ed25519(key.verifying_key()).did_key();
    let index = env.attribution.chain.len();
    env.attribution.chain.push(ChainEntry {
        actor_type: actor_type.into(),
        actor_id: kid.clone(),
        timestamp: at.into(),
        signature: String::new(),
        alg: Some(ALG.into()),
        kid: Some(kid),
    });
    let value = serde_json::to_value(&*env).expect("an envelope is JSON");
    let bytes = signed_bytes(&value, index).expect("the entry was just added");
    if let Some(entry) = env.attribution.chain.last_mut() {
        entry.signature = URL_SAFE_NO_PAD.encode(key.sign(&bytes).to_bytes());
    }
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
    /// Signed whole by the pinned key.
    Verified { kid: String },
    /// Signed whole by a key the user has not pinned yet (first contact).
    NewKey { kid: String },
    /// Correctly signed, but not by the key the user pinned.
    KeyMismatch { pinned: String, kid: String },
    /// No entry of this actor carries a signature Gatehouse can check.
    Unsigned,
    /// Signed under Gatehouse's first scheme by this key (the pinned one, or none is
    /// pinned): the message is the site's, every other field only its claim.
    FirstScheme { kid: String },
    /// A signature that does not verify, or a query_hash that is not this interaction's.
    Invalid { reason: String },
}

impl Verdict {
    /// Whether the message may be kept as the site's and the conversation go on.
    pub fn acceptable(&self) -> bool {
        matches!(self, Verdict::Verified { .. } | Verdict::NewKey { .. } | Verdict::Unsigned | Verdict::FirstScheme { .. })
    }

    /// Whether the fields beside the message (status, external_id, what it needs) were
    /// signed, and so may decide the conversation's outcome; otherwise they are claims.
    pub fn signed_whole(&self) -> bool {
        matches!(self, Verdict::Verified { .. } | Verdict::NewKey { .. })
    }
}

/// What a chain entry's signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Covers {
    /// The whole envelope (the current scheme).
    Whole,
    /// The message and ids only (the first scheme).
    MessageOnly,
}

/// Checks chain entry `index` of `env` (`raw`: the envelope as it was sent, JSON; the
/// signature covers its bytes, fields Gatehouse does not read included); Ok(kid and what
/// the signature covers).
pub fn verify_entry(raw: &serde_json::Value, env: &Envelope, index: usize) -> Result<(String, Covers), String> {
    let entry = env.attribution.chain.get(index).ok_or_else(|| format!("the chain has no entry {index}"))?;
    if entry.alg.as_deref() != Some(ALG) {
        return Err(format!("the {} entry's alg is {:?}; Gatehouse checks EdDSA", entry.actor_type, entry.alg));
    }
    let kid = entry.kid.clone().ok_or_else(|| format!("the {} entry names no kid", entry.actor_type))?;
    let key = did::resolve_did_key(&kid).map_err(|e| format!("kid {kid}: {e}"))?;
    let sig = URL_SAFE_NO_PAD.decode(entry.signature.trim_end_matches('=')).map_err(|_| format!("the {} signature is not base64url", entry.actor_type))?;
    let whole = signed_bytes(raw, index).ok_or_else(|| format!("the {} entry is not in the envelope as sent", entry.actor_type))?;
    if key.verify(&whole, &sig) {
        Ok((kid, Covers::Whole))
    } else if key.verify(&first_scheme_bytes(env, entry), &sig) {
        Ok((kid, Covers::MessageOnly))
    } else {
        Err(format!("the {} signature does not match this message", entry.actor_type))
    }
}

/// Checks the attribution of a message from `actor_type` (an IntentSite: `intent_site`)
/// against `expected_query_hash` and, when the user pinned one, its key. `raw` is the
/// envelope as it was sent.
pub fn verify(raw: &serde_json::Value, env: &Envelope, actor_type: &str, expected_query_hash: &str, pinned: Option<&str>) -> Verdict {
    if env.attribution.query_hash != expected_query_hash {
        return Verdict::Invalid { reason: format!("query_hash {} is not this interaction's ({expected_query_hash})", env.attribution.query_hash) };
    }
    let found = env.attribution.chain.iter().enumerate().rev().find(|(_, e)| e.actor_type == actor_type && (e.alg.is_some() || e.kid.is_some()));
    let Some((index, _)) = found else {
        return match pinned {
            // Once a key is pinned, an unsigned answer is not the site the user trusts.
            Some(p) => Verdict::Invalid { reason: format!("the message is not signed, though you pinned {p}") },
            None => Verdict::Unsigned,
        };
    };
    match verify_entry(raw, env, index) {
        Err(reason) => Verdict::Invalid { reason },
        Ok((kid, covers)) => match (pinned, covers) {
            (Some(p), _) if p != kid => Verdict::KeyMismatch { pinned: p.to_string(), kid },
            (_, Covers::MessageOnly) => Verdict::FirstScheme { kid },
            (Some(_), Covers::Whole) => Verdict::Verified { kid },
            (None, Covers::Whole) => Verdict::NewKey { kid },
        },
    }
}
