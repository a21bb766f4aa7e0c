//! Checking an envelope's signature against the key its `kid` names.

use crate::canonical;
use crate::did::{self, PublicKey};
use crate::envelope::Envelope;
use crate::error::{Code, UampError};

/// The key that must have signed `env`. The JWS `kid` must belong to the envelope's
/// `from` (a key of one DID cannot sign for another); a did:key resolves by itself, any
/// other DID only through `known`, the keys the user's trust entry holds for it. Without
/// a `kid`, the sender's only known key is used (or its did:key).
pub fn key_for(env: &Envelope, known: &[(String, PublicKey)]) -> Result<PublicKey, UampError> {
    let unauth = |reason, msg: String| UampError::new(Code::Unauthenticated, reason, msg);
    let kid = match &env.sig.kid {
        Some(k) => k.clone(),
        None if known.len() == 1 => return known.first().map(|(_, k)| k.clone()).ok_or_else(|| unauth("no_kid", String::new())),
        None if env.from.starts_with("did:key:") => env.from.clone(),
        None => return Err(unauth("no_kid", format!("the signature names no kid and {} has {} known keys", env.from, known.len()))),
    };
    let (kid_did, _) = did::split_kid(&kid);
    if kid_did != env.from {
        return Err(unauth("kid_mismatch", format!("the signature's kid {kid} does not belong to the sender {}", env.from)));
    }
    if let Some((_, k)) = known.iter().find(|(k, _)| *k == kid) {
        return Ok(k.clone());
    }
    if kid_did.starts_with("did:key:") {
        return did::resolve_did_key(&kid).map_err(|e| unauth("unknown_key", format!("kid {kid}: {e}")));
    }
    Err(unauth("unknown_key", format!("no key {kid} is known for {}; re-add the sender to refresh its DID document", env.from)))
}

/// Checks `env`'s detached JWS with `key` over the canonical JSON (and its common
/// spellings, see [`canonical::candidate_payloads`]).
pub fn verify(env: &Envelope, key: &PublicKey) -> Result<(), UampError> {
    if env.sig.verify_any(&canonical::candidate_payloads(&env.raw), key) {
        Ok(())
    } else {
        Err(UampError::new(Code::Unauthenticated, "invalid_signature", format!("the {} signature does not match this envelope", env.sig.alg.as_str())))
    }
}
