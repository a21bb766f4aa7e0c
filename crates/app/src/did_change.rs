//! A did:web agent's keys live in its DID document, which its owner may change. The inbox
//! never fetches it when a message arrives: a trusted agent signing with a key not kept
//! for it is refused and noted (a key change prompt). The user checks the document again
//! here: what it now holds replaces the kept keys, the change is said in words and
//! audited, and on a verified contact it blocks everything from the agent until the user
//! verifies it again.

use crate::Context;

use crate::doors::gate::consent::now_string;
use chrono::{DateTime, Utc};
use gatehouse_store::{Store, UampKey};
use gatehouse_uamp::did::PublicKey;
use serde::Serialize;

use crate::{Code, CommandError, Result};

/// What checking an agent's DID document again found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeysChecked {
    pub message: String,
    /// Keys the document holds that were not kept (key id and fingerprint).
    pub added: Vec<String>,
    /// Kept keys the document no longer holds.
    pub removed: Vec<String>,
    /// The contact was verified and its keys changed: nothing from it gets through until
    /// the user verifies it again.
    pub blocked: bool,
}

/// Fetches `sender`'s DID document over HTTPS and [`apply`]s what it holds.
pub async fn check(ctx: &Context, sender: String) -> Result<KeysChecked> {
    let store = ctx.store.clone();
    let sender = sender.trim().to_string();
    if !sender.starts_with("did:web:") {
        return Err(CommandError::new(Code::Invalid, format!("{sender} is not a did:web: only a did:web's keys live in a document that can change")));
    }
    if store.trust_get(&sender)?.is_none() {
        return Err(CommandError::new(Code::NotFound, format!("{sender} is not a trusted sender")));
    }
    let keys = crate::trust::did_web_keys(&sender).await?;
    crate::blocking(move || apply(&store, &sender, &keys, crate::doors::gate::clock::now())).await
}

/// The keys `sender`'s DID document holds now replace those kept for it; the key change
/// prompt, if one waited, is answered. Blocking (SQLite). Audited.
pub fn apply(store: &Store, sender: &str, keys: &[UampKey], now: DateTime<Utc>) -> Result<KeysChecked> {
    let sender = gatehouse_store::sender_key(sender);
    let Some(mut trust) = store.trust_get(&sender)? else {
        return Err(CommandError::new(Code::NotFound, format!("{sender} is not a trusted sender")));
    };
    let name = trust.name.clone();
    let added: Vec<String> = keys.iter().filter(|k| !trust.facts.uamp_keys().iter().any(|o| same(o, k))).map(label).collect();
    let removed: Vec<String> = trust.facts.uamp_keys().iter().filter(|o| !keys.iter().any(|k| same(o, k))).map(label).collect();
    let waited = store.key_change_take(&sender)?;
    let at = now_string(now);
    if added.is_empty() && removed.is_empty() {
        store.audit("contact.check_keys", Some(&sender), &serde_json::json!({"changed": false}), &at)?;
        let message = match waited {
            Some(w) => format!(
                "{name}'s DID document holds the same keys as when you trusted it, and not the key its refused messages named ({}): they were not signed by {name} and stay refused.",
                w.key_id
            ),
            None => format!("{name}'s DID document holds the same keys as before: nothing changed."),
        };
        return Ok(KeysChecked { message, added, removed, blocked: false });
    }
    let verified = store.holds_new_keys(&sender)?;
    let facts = gatehouse_store::Facts::uamp(keys.to_vec());
    if verified {
        trust.policy.key_change_unverified = true;
        store.contact_key_unverified(&sender)?;
    }
    store.trust_update(&sender, None, &trust.policy, Some(&facts))?;
    store.audit("contact.key_change", Some(&sender), &serde_json::json!({"added": added, "removed": removed, "blocked": verified}), &at)?;
    let mut message = format!("{name}'s keys changed: {}.", words(&added, &removed));
    if let Some(w) = waited.filter(|w| !keys.iter().any(|k| k.kid == w.key_id)) {
        message.push_str(&format!(" The key its refused messages named ({}) is still not among them.", w.key_id));
    }
    message.push_str(&if verified {
        format!(" You had verified {name}: nothing from it gets through until you verify it again with them (People & agents → {name} → Verify).")
    } else {
        " Its messages signed with the new keys now get in; those sent before stay refused (ask it to send them again).".into()
    });
    Ok(KeysChecked { message, added, removed, blocked: verified })
}

fn same(a: &UampKey, b: &UampKey) -> bool {
    a.kid == b.kid && PublicKey::from_jwk(&a.jwk).ok() == PublicKey::from_jwk(&b.jwk).ok()
}

fn label(k: &UampKey) -> String {
    let fp = PublicKey::from_jwk(&k.jwk).map(|p| crate::trust::fingerprint(&p.did_key())).unwrap_or_else(|_| "unreadable key".into());
    format!("{} ({fp})", k.kid)
}

/// What changed, as a clause: "its DID document now holds 1 new key: …, and no longer …".
fn words(added: &[String], removed: &[String]) -> String {
    let new = match added.len() {
        0 => None,
        1 => Some(format!("now holds 1 new key: {}", added[0])),
        n => Some(format!("now holds {n} new keys: {}", added.join(", "))),
    };
    let gone = (!removed.is_empty()).then(|| format!("no longer holds {}", removed.join(", ")));
    format!("its DID document {}", [new, gone].into_iter().flatten().collect::<Vec<_>>().join(", and "))
}

/// What a did:web's safety code is computed over: the DID and the keys its document held
/// when checked, so a changed document changes the code. Any other key is itself.
pub fn code_material(key: &str, keys: &[UampKey]) -> String {
    if !key.starts_with("did:web:") || keys.is_empty() {
        return key.to_string();
    }
    format!("{key}#{}", did_keys(keys).join(","))
}

/// The keys a did:web's document held when last checked, as did:keys (sorted, once each):
/// what it is verified by and what its code covers.
pub fn did_keys(keys: &[UampKey]) -> Vec<String> {
    let mut dids: Vec<String> = keys.iter().filter_map(|k| PublicKey::from_jwk(&k.jwk).ok()).map(|p| p.did_key()).collect();
    dids.sort();
    dids.dedup();
    dids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_said_whichever_way_it_went() {
        let (a, b) = (vec!["#k2 (did:key:…x)".to_string()], vec!["#k1 (did:key:…y)".to_string()]);
        assert_eq!(words(&a, &b), "its DID document now holds 1 new key: #k2 (did:key:…x), and no longer holds #k1 (did:key:…y)");
        assert_eq!(words(&[], &b), "its DID document no longer holds #k1 (did:key:…y)");
        assert_eq!(words(&[a[0].clone(), b[0].clone()], &[]), "its DID document now holds 2 new keys: #k2 (did:key:…x), #k1 (did:key:…y)");
    }
}
