//! EPP v1.1: the optional fields the reference implementation (elliptic1/external-prompt-
//! protocol) added beside the twelve signed ones, on the same signing payload:
//!
//! - `integrity` `{alg, hash}`: the payload's hash (sha256/384/512 over its canonical JSON);
//! - `capabilities`: what the sender asks to use (filesystem, network, actions, data);
//! - `provenance` `{content_hash, entries}`: attestations (author, auditor, …), each signed
//!   by its own key and linked to the one before;
//! - `payment`, `payment_proof`, `stake`: shown, never acted on (payments are a non-goal
//!   of EPP v1).
//!
//! None of them is covered by the sender's signature, so each is only as good as its own
//! check: an integrity hash must match the payload, an attestation must verify under its
//! own key and be about this payload. See docs/interop.md.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha384, Sha512};

use crate::canonical::payload_spellings;
use crate::envelope::Envelope;
use crate::json::Json;
use crate::receipt::{ErrorCode, Rejection};

/// Fields shown but never acted on.
pub const INERT: [&str; 3] = ["payment", "payment_proof", "stake"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Integrity {
    #[serde(default = "sha256")]
    pub alg: String,
    pub hash: String,
}

fn sha256() -> String {
    "sha256".into()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FilesystemCaps {
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub write: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct NetworkCaps {
    #[serde(default)]
    pub domains: Vec<String>,
    #[serde(default)]
    pub protocols: Vec<String>,
    #[serde(default)]
    pub ports: Vec<u16>,
}

/// What a sender declares it will ask the user's AI to use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Capabilities {
    #[serde(default)]
    pub filesystem: Option<FilesystemCaps>,
    #[serde(default)]
    pub network: Option<NetworkCaps>,
    #[serde(default)]
    pub actions: Vec<String>,
    #[serde(default)]
    pub data_access: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Attestation {
    pub role: String,
    pub identity: String,
    pub timestamp: String,
    pub signature: String,
    #[serde(default)]
    pub statement: Option<String>,
    #[serde(default)]
    pub parent_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Provenance {
    pub content_hash: String,
    #[serde(default)]
    pub entries: Vec<Attestation>,
}

/// An envelope's v1.1 fields, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extensions {
    pub integrity: Option<Integrity>,
    pub capabilities: Option<Capabilities>,
    pub provenance: Option<Provenance>,
    /// `payment`, `payment_proof`, `stake` as sent.
    pub inert: Vec<(String, serde_json::Value)>,
}

/// At most this many attestations are checked (each is a signature verification).
pub const MAX_ATTESTATIONS: usize = 16;

fn field<T: for<'de> Deserialize<'de>>(env: &Envelope, name: &str) -> Result<Option<T>, Rejection> {
    let Some((_, v)) = env.unsigned_extensions.iter().find(|(k, _)| k == name) else {
        return Ok(None);
    };
    if matches!(v, Json::Null) {
        return Ok(None);
    }
    serde_json::from_value(v.to_serde())
        .map(Some)
        .map_err(|e| Rejection::new(ErrorCode::InvalidFormat, format!("{name} (EPP v1.1) is malformed: {e}")).with_envelope_id(Some(env.envelope_id.clone())))
}

impl Extensions {
    /// Reads the v1.1 fields; a malformed one is INVALID_FORMAT, as the reference's own
    /// model refuses it.
    pub fn read(env: &Envelope) -> Result<Extensions, Rejection> {
        for (name, v) in env.unsigned_extensions.iter().filter(|(_, v)| !matches!(v, Json::Null)) {
            if let Some(check) = crate::shapes::of(name) {
                check(&v.to_serde()).map_err(|why| {
                    Rejection::new(ErrorCode::InvalidFormat, format!("{why} (EPP v1.1, malformed as the reference's model reads it)"))
                        .with_envelope_id(Some(env.envelope_id.clone()))
                })?;
            }
        }
        let inert = env
            .unsigned_extensions
            .iter()
            .filter(|(k, v)| INERT.contains(&k.as_str()) && !matches!(v, Json::Null))
            .map(|(k, v)| (k.clone(), v.to_serde()))
            .collect();
        Ok(Extensions { integrity: field(env, "integrity")?, capabilities: field(env, "capabilities")?, provenance: field(env, "provenance")?, inert })
    }

    pub fn is_empty(&self) -> bool {
        *self == Extensions::default()
    }
}

fn digest(alg: &str, bytes: &[u8]) -> Option<String> {
    Some(match alg.to_ascii_lowercase().as_str() {
        "sha256" => hex::encode(Sha256::digest(bytes)),
        "sha384" => hex::encode(Sha384::digest(bytes)),
        "sha512" => hex::encode(Sha512::digest(bytes)),
        _ => return None,
    })
}

/// Whether `hash` (hex, `alg`) is the hash of the payload in one of its `spellings` (every
/// spelling of its JSON that means what was received; the reference hashes Python's
/// sorted, ASCII form). None for an unknown algorithm.
fn payload_hashes_to(spellings: &[String], alg: &str, hash: &str) -> Option<bool> {
    if !["sha256", "sha384", "sha512"].contains(&alg.to_ascii_lowercase().as_str()) {
        return None;
    }
    let want = hash.to_ascii_lowercase();
    Some(spellings.iter().any(|p| digest(alg, p.as_bytes()).is_some_and(|d| d == want)))
}

/// The chain link the reference computes for an attestation: sha256 of its fields as
/// Python's `json.dumps(sort_keys=True, separators=(",", ":"))` writes them.
fn link_hash(a: &Attestation) -> String {
    let v = serde_json::json!({
        "parent_hash": a.parent_hash, "identity": a.identity.to_ascii_lowercase(), "role": a.role.to_ascii_lowercase(),
        "signature": a.signature, "statement": a.statement, "timestamp": a.timestamp,
    });
    let text = crate::json::to_compact(&Json::from_serde(&v), crate::json::Style::REFERENCE);
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The bytes an attestation's key signs: role, identity, timestamp, statement, parent
/// hash and the content hash, one per line.
fn attestation_bytes(a: &Attestation, content_hash: &str) -> Vec<u8> {
    [
        a.role.to_ascii_lowercase().as_str(),
        &a.identity.to_ascii_lowercase(),
        &a.timestamp,
        a.statement.as_deref().unwrap_or(""),
        a.parent_hash.as_deref().unwrap_or(""),
        content_hash,
    ]
    .join("\n")
    .into_bytes()
}

/// Checks `integrity` and `provenance` when present, after the sender's signature. Each
/// failure is its own code: the payload was changed after it was hashed
/// (INTEGRITY_MISMATCH), or an attestation is forged, out of its chain, or about other
/// content (PROVENANCE_INVALID).
pub fn verify(env: &Envelope, ext: &Extensions) -> Result<(), Rejection> {
    let id = Some(env.envelope_id.clone());
    // Written out once for both checks, and only for an envelope that has one.
    let spellings = if ext.integrity.is_some() || ext.provenance.is_some() { payload_spellings(env) } else { Vec::new() };
    if let Some(i) = &ext.integrity {
        match payload_hashes_to(&spellings, &i.alg, &i.hash) {
            None => {
                return Err(Rejection::new(ErrorCode::InvalidFormat, format!("integrity.alg {:?} is not sha256, sha384 or sha512", i.alg)).with_envelope_id(id))
            }
            Some(false) => {
                return Err(Rejection::new(
                    ErrorCode::IntegrityMismatch,
                    format!("the payload does not match its integrity hash ({}): it was changed after it was hashed", i.alg),
                )
                .with_envelope_id(id))
            }
            Some(true) => {}
        }
    }
    if let Some(p) = &ext.provenance {
        let bad = |m: String| Err(Rejection::new(ErrorCode::ProvenanceInvalid, m).with_envelope_id(id.clone()));
        if p.entries.len() > MAX_ATTESTATIONS {
            return bad(format!("provenance has {} attestations; at most {MAX_ATTESTATIONS} are checked", p.entries.len()));
        }
        if payload_hashes_to(&spellings, "sha256", &p.content_hash) != Some(true) {
            return bad("provenance attests to other content: its content_hash is not this payload's sha256".into());
        }
        for (i, a) in p.entries.iter().enumerate() {
            let who = format!("attestation {} ({} {}…)", i.saturating_add(1), a.role, a.identity.get(..16).unwrap_or(&a.identity));
            let expected_parent = i.checked_sub(1).and_then(|j| p.entries.get(j)).map(link_hash);
            let linked = match (&expected_parent, a.parent_hash.as_deref().map(str::to_ascii_lowercase)) {
                (None, None) => true,
                (None, Some(ph)) => ph == p.content_hash.to_ascii_lowercase(),
                (Some(want), Some(ph)) => *want == ph,
                (Some(_), None) => false,
            };
            if !linked {
                return bad(format!("{who} is out of its chain: its parent_hash is not the previous attestation's"));
            }
            let Ok(key) = crate::crypto::parse_public_key(&a.identity) else {
                return bad(format!("{who}: identity is not an Ed25519 public key"));
            };
            let sig = crate::envelope::decode_b64(&a.signature).and_then(|b| ed25519_dalek::Signature::from_slice(&b).ok());
            let ok = sig.is_some_and(|s| crate::crypto::verify_signature(&key, &attestation_bytes(a, &p.content_hash.to_ascii_lowercase()), &s));
            if !ok {
                return bad(format!("{who}: its signature does not verify (altered or forged)"));
            }
        }
    }
    Ok(())
}

/// What the capabilities ask for, in words a person reads before saying yes.
pub fn plain_words(c: &Capabilities) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(fs) = &c.filesystem {
        if !fs.read.is_empty() {
            out.push(format!("read files in {}", fs.read.join(", ")));
        }
        if !fs.write.is_empty() {
            out.push(format!("change files in {}", fs.write.join(", ")));
        }
    }
    if let Some(n) = &c.network {
        if !n.domains.is_empty() {
            let mut s = format!("connect to {}", n.domains.join(", "));
            let how: Vec<String> = n.protocols.iter().cloned().chain(n.ports.iter().map(|p| format!("port {p}"))).collect();
            if !how.is_empty() {
                s.push_str(&format!(" ({})", how.join(", ")));
            }
            out.push(s);
        }
    }
    if !c.actions.is_empty() {
        out.push(format!("take these actions: {}", c.actions.join(", ")));
    }
    if !c.data_access.is_empty() {
        out.push(format!("see your {}", c.data_access.join(", ")));
    }
    out
}

/// What `asked` wants beyond `allowed` (a trust entry's limit), in plain words; empty
/// when everything asked is allowed. A path is allowed when it is one the limit names or
/// lies under it, component by component, and never climbs out with `..`; a domain when
/// it is one the limit names or a subdomain of it.
pub fn beyond(asked: &Capabilities, allowed: &Capabilities) -> Vec<String> {
    let path_under = |x: &str, a: &str| {
        let parts = |p: &str| p.split('/').filter(|c| !c.is_empty() && *c != ".").map(str::to_string).collect::<Vec<_>>();
        let (x, a) = (parts(x), parts(a));
        !x.iter().any(|c| c == "..") && x.starts_with(&a)
    };
    let domain_under = |x: &str, a: &str| {
        let (x, a) = (x.trim_end_matches('.').to_ascii_lowercase(), a.trim_end_matches('.').to_ascii_lowercase());
        x == a || x.ends_with(&format!(".{a}"))
    };
    let extra =
        |xs: &[String], set: &[String], under: &dyn Fn(&str, &str) -> bool| xs.iter().filter(|x| !set.iter().any(|a| under(x, a))).cloned().collect::<Vec<_>>();
    let none = FilesystemCaps::default();
    let (fa, fl) = (asked.filesystem.as_ref().unwrap_or(&none), allowed.filesystem.as_ref().unwrap_or(&none));
    let nnone = NetworkCaps::default();
    let (na, nl) = (asked.network.as_ref().unwrap_or(&nnone), allowed.network.as_ref().unwrap_or(&nnone));
    let over = Capabilities {
        filesystem: Some(FilesystemCaps { read: extra(&fa.read, &fl.read, &path_under), write: extra(&fa.write, &fl.write, &path_under) }),
        network: Some(NetworkCaps { domains: extra(&na.domains, &nl.domains, &domain_under), protocols: vec![], ports: vec![] }),
        actions: asked.actions.iter().filter(|a| !allowed.actions.contains(a)).cloned().collect(),
        data_access: asked.data_access.iter().filter(|a| !allowed.data_access.contains(a)).cloned().collect(),
    };
    plain_words(&over)
}
