//! Contacts as the user sees them: one person or organisation with its keys of every
//! protocol, one name, their grants; checked out of band with a safety code both sides
//! see the same; a new key that claims to be one of them shown as a change to that contact,
//! never merged but by the user's word, and blocked until verified when the contact was.

use crate::doors::gate::consent::{now_string, ConsentError, Decision};
use crate::doors::Gate;
use crate::target::Source;
pub use crate::waiting::{claims, Claim};
use crate::Context;
use chrono::{DateTime, Utc};
use gatehouse_store::contacts::Contact;
use gatehouse_store::{Policy, Store, TrustEntry};
use serde::Serialize;
use sha2::{Digest, Sha512};

use crate::{Code, CommandError, Result};

/// One key of a contact, with what it may do and the code to compare for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeyView {
    pub key: String,
    pub fingerprint: String,
    pub source: Source,
    pub scopes: Vec<String>,
    pub added_at: String,
    pub verified_at: Option<String>,
    /// Joined beside this verified key: a key change.
    pub changed_from: Option<String>,
    /// Everything from this key is held until it is verified.
    pub blocked: bool,
    /// What both sides see for this key and the user's own (compare it out of band).
    pub safety_code: String,
    /// Why this key's verification should be made again (it stays verified meanwhile).
    pub reverify: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContactView {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    pub verified: bool,
    /// A key of this contact changed and waits to be verified.
    pub key_changed: bool,
    pub keys: Vec<KeyView>,
    /// Other contacts with the same name: perhaps the same person with another key, which
    /// only the user may merge.
    pub namesakes: Vec<i64>,
}

/// How many times each side's half is hashed: as Signal's safety numbers, it makes a
/// search for a key whose half matches a given one cost thousands of hashes a try.
const HALF_ITERATIONS: usize = 5200;

/// One side's half of the safety code: 30 digits from its own key alone (iterated
/// SHA-512). A man in the middle must find a key whose half equals the real key's, a
/// second preimage of about 2^100 work, not a pair of colliding codes.
pub fn safety_half(key: &str) -> String {
    let key = gatehouse_store::sender_key(key);
    let mut h = Sha512::new().chain_update(b"gatehouse safety code v2\0").chain_update(key.as_bytes()).finalize();
    for _ in 1..HALF_ITERATIONS {
        h = Sha512::new().chain_update(h).chain_update(key.as_bytes()).finalize();
    }
    h.chunks_exact(5).take(6).map(|c| format!("{:05}", c.iter().fold(0u64, |n, b| (n << 8) | u64::from(*b)) % 100_000)).collect::<Vec<_>>().join(" ")
}

/// The code two Gatehouse users compare: both halves, the lower first, so it is the same
/// on both sides whichever is "mine". Sixty digits in twelve groups.
pub fn safety_code(a: &str, b: &str) -> String {
    let (a, b) = (safety_half(a), safety_half(b));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    format!("{lo} {hi}")
}

/// What the user's QR code holds and what they paste to others: their key and address.
pub fn share_text(own_key: &str, address: &str) -> String {
    let mut u = url::Url::parse("gatehouse:contact").expect("a fixed URL");
    u.query_pairs_mut().append_pair("key", own_key).append_pair("address", address);
    u.to_string()
}

/// The key in what someone shared: their QR's text, or a bare key.
pub fn shared_key(text: &str) -> Result<String> {
    let text = text.trim();
    let key = match url::Url::parse(text) {
        Ok(u) if u.scheme() == "gatehouse" => u.query_pairs().find(|(k, _)| k == "key").map(|(_, v)| v.into_owned()),
        _ => Some(text.to_string()),
    };
    match key {
        Some(k) if k.starts_with("did:web:") => Err(CommandError::new(
            Code::Invalid,
            "a did:web names a web address, not a key (anyone can paste it): paste one of its keys (did:key:…) or compare the safety code",
        )),
        Some(k) if (k.len() == 64 && k.bytes().all(|b| b.is_ascii_hexdigit())) || k.starts_with("did:key:") => Ok(gatehouse_store::sender_key(&k)),
        _ => Err(CommandError::new(Code::Invalid, "that is not a Gatehouse key or QR code text (it starts with gatehouse:contact?key=)")),
    }
}

fn view(store: &Store, c: Contact, own_key: &str) -> Result<ContactView> {
    let mut keys = Vec::new();
    for k in &c.keys {
        let trust = store.trust_get(&k.key)?;
        let scopes = trust.as_ref().map(|t| t.policy.allowed_scopes.clone()).unwrap_or_default();
        let code = safety_code(own_key, &crate::did_change::code_material(&k.key, trust.as_ref().map_or(&[], |t| t.facts.uamp_keys())));
        keys.push(KeyView {
            fingerprint: crate::trust::fingerprint(&k.key),
            source: Source::at(trust.as_ref().map_or(crate::trust::door_of_typed_key(&k.key), |t| &t.door)),
            blocked: trust.is_some_and(|t| t.policy.key_change_unverified),
            safety_code: code,
            scopes,
            key: k.key.clone(),
            added_at: k.added_at.clone(),
            verified_at: k.verified_at.clone(),
            changed_from: k.changed_from.clone(),
            reverify: k.reverify.clone(),
        });
    }
    Ok(ContactView {
        verified: c.verified(),
        key_changed: keys.iter().any(|k| k.blocked),
        id: c.id,
        name: c.name,
        created_at: c.created_at,
        keys,
        namesakes: Vec::new(),
    })
}

pub fn list(ctx: &Context) -> Result<Vec<ContactView>> {
    let own_key = ctx.public_key.as_str();
    let store: &Store = &ctx.store;
    let mut all: Vec<ContactView> = store.contacts()?.into_iter().map(|c| view(store, c, own_key)).collect::<Result<_>>()?;
    let names: Vec<(i64, String)> = all.iter().map(|c| (c.id, c.name.trim().to_lowercase())).collect();
    for c in &mut all {
        let mine = c.name.trim().to_lowercase();
        c.namesakes = names.iter().filter(|(id, n)| *id != c.id && *n == mine).map(|(id, _)| *id).collect();
    }
    Ok(all)
}

/// The user says contact `from` is the same person as `into`: its keys join `into`. If
/// `into` was verified, each joining key is a key change, held until it is verified too.
/// Audited.
pub fn merge(ctx: &Context, from: i64, into: i64, now: DateTime<Utc>) -> Result<()> {
    let store: &Store = &ctx.store;
    if from == into {
        return Err(CommandError::new(Code::Invalid, "a contact is already itself"));
    }
    let (Some(f), Some(i)) = (store.contact(from)?, store.contact(into)?) else {
        return Err(CommandError::new(Code::NotFound, "that contact is gone"));
    };
    let verified_key = i.keys.iter().find(|k| k.verified_at.is_some()).map(|k| k.key.clone());
    let at = now_string(now);
    for k in &f.keys {
        store.contact_add_key(into, &k.key, verified_key.as_deref(), &at)?;
        if i.holds_new_keys() && k.verified_at.is_none() {
            if let Some(mut t) = store.trust_get(&k.key)? {
                t.policy.key_change_unverified = true;
                store.trust_update(&k.key, None, &t.policy, None)?;
            }
        }
    }
    store.audit("contact.merge", None, &serde_json::json!({"from": from, "into": into, "keys": f.keys.iter().map(|k| &k.key).collect::<Vec<_>>()}), &at)?;
    Ok(())
}

/// Marks a key verified: `pasted` is what the other side shared (their QR's text or key),
/// which must be this very key; without it, the user said the safety codes match. A key
/// change waiting on this key is lifted. Audited.
pub fn verify(ctx: &Context, key: &str, pasted: Option<&str>, now: DateTime<Utc>) -> Result<ContactView> {
    let own_key = ctx.public_key.as_str();
    let store: &Store = &ctx.store;
    let key = gatehouse_store::sender_key(key);
    let Some(contact) = store.contact_of(&key)? else {
        return Err(CommandError::new(Code::NotFound, format!("{key} is not a key of any contact")));
    };
    let how = match pasted {
        Some(text) => {
            let theirs = shared_key(text)?;
            // A did:web is verified by a key its DID document holds now (as kept when it
            // was last checked), never by its DID, which anyone can read.
            let names_it = match key.starts_with("did:web:") {
                true => store.trust_get(&key)?.is_some_and(|t| crate::did_change::did_keys(t.facts.uamp_keys()).contains(&theirs)),
                false => theirs == key,
            };
            if !names_it {
                return Err(CommandError::new(
                    Code::Invalid,
                    format!(
                        "that code is for another key ({}), not {}'s ({}): nothing was marked verified",
                        crate::trust::fingerprint(&theirs),
                        contact.name,
                        crate::trust::fingerprint(&key)
                    ),
                ));
            }
            "their shared code"
        }
        None => "safety codes compared",
    };
    let at = now_string(now);
    store.contact_key_verified(&key, &at)?;
    if let Some(mut t) = store.trust_get(&key)?.filter(|t| t.policy.key_change_unverified) {
        t.policy.key_change_unverified = false;
        store.trust_update(&key, None, &t.policy, None)?;
    }
    store.audit("contact.verify", Some(&key), &serde_json::json!({"contact": contact.id, "how": how}), &at)?;
    let c = store.contact(contact.id)?.ok_or_else(|| CommandError::new(Code::NotFound, "the contact is gone"))?;
    view(store, c, own_key)
}

pub fn rename(ctx: &Context, id: i64, name: &str, now: DateTime<Utc>) -> Result<()> {
    let store: &Store = &ctx.store;
    let name = &crate::names::check(name)?;
    store.contact_rename(id, name)?;
    store.audit("contact.rename", None, &serde_json::json!({"contact": id, "name": name}), &now_string(now))?;
    Ok(())
}

/// The user says a key that knocked is a new key of contact `id`: it is trusted for what
/// the contact's keys may do and the knock's scope, joins the contact, and its waiting
/// message is delivered. If the contact was verified, the new key is blocked (everything
/// it sends is held) until it is verified too. Blocking (SQLite). Audited.
pub fn adopt(inbox: &Gate, id: i64, key: &str, now: DateTime<Utc>) -> std::result::Result<String, ConsentError> {
    let store = inbox.store();
    let key = gatehouse_store::sender_key(key);
    let Some(contact) = store.contact(id)? else { return Err(ConsentError::Invalid(format!("there is no contact {id}"))) };
    let Some(request) = store.pending_list()?.into_iter().find(|p| p.public_key == key) else {
        return Err(ConsentError::Gone);
    };
    let knock = store.knock_of(&request)?;
    let mut scopes: Vec<String> = Vec::new();
    for k in &contact.keys {
        // The contact's keys are those the gate sealed as its; and only an entry the gate
        // sealed under the contact's own name lends its grant (a key's entry renamed
        // beside the gate lends the new key nothing).
        let entry = store.trust_get(&k.key)?.filter(|t| t.name == contact.name);
        for s in entry.map(|t| t.policy.allowed_scopes).unwrap_or_default() {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
    }
    if let Some(s) = knock.as_ref().and_then(|k| k.scope.clone()) {
        crate::target::grantable(Source::at(&request.door), &s)?;
        if !scopes.contains(&s) && !scopes.iter().any(|x| x == "*") {
            scopes.push(s);
        }
    }
    let verified_key = contact.keys.iter().find(|k| k.verified_at.is_some()).map(|k| k.key.clone());
    let at = now_string(now);
    let entry = TrustEntry {
        door: request.door.clone(),
        facts: Default::default(),
        public_key: key.clone(),
        name: contact.name.clone(),
        added_at: at.clone(),
        policy: Policy { allowed_scopes: scopes, key_change_unverified: contact.holds_new_keys(), ..Policy::default() },
    };
    crate::trust::check_sender_id(&key, &entry.facts)?;
    store.trust_add(&entry)?;
    store.contact_add_key(id, &key, verified_key.as_deref(), &at)?;
    let delivered = crate::waiting::knocks::deliver(inbox, &request.door, knock.as_ref(), None, now);
    if let Some(k) = &knock {
        // Let in for good, as one of the contact's keys: the knock's row is the message it became.
        store.knock_decided(&key, &k.receipt_id, Decision::AlwaysAllowScope.as_str(), &at, delivered.as_ref().map(|d| d.receipt_id.as_str()))?;
    }
    store.audit("contact.add_key", Some(&key), &serde_json::json!({"contact": id, "changed_from": verified_key}), &at)?;
    Ok(match (verified_key, contact.intact) {
        (Some(_), _) => format!(
            "Added to {} as a new key. {} was verified, so everything this key sends is held until you verify it too: compare safety codes with them.",
            contact.name, contact.name
        ),
        (None, false) => format!(
            "Added to {} as a new key. Your contacts were changed outside Gatehouse (Waiting for you names the rows), so whether {} was verified cannot be told: everything this key sends is held until you verify it.",
            contact.name, contact.name
        ),
        (None, true) => format!("Added to {} as one of their keys.", contact.name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_see_the_same_code_and_each_half_is_one_key_alone() {
        let (a, b, c) = ("aa".repeat(32), "bb".repeat(32), "cc".repeat(32));
        let code = safety_code(&a, &b);
        assert_eq!(code, safety_code(&b, &a));
        assert_eq!(code, safety_code(&a.to_uppercase(), &b), "keys are compared as the registry writes them");
        assert_ne!(code, safety_code(&a, &c));
        assert!(code.len() == 71 && code.split(' ').all(|g| g.len() == 5 && g.bytes().all(|d| d.is_ascii_digit())), "{code}");
        // Each side's half depends on its own key only: a substitution must match a given
        // half, not just make two codes collide.
        let (ha, hb) = (safety_half(&a), safety_half(&b));
        assert_eq!(ha.len(), 35);
        assert!(code == format!("{ha} {hb}") || code == format!("{hb} {ha}"), "{code}");
        assert!(safety_code(&a, &c).contains(&ha), "A's half is the same with anyone");
    }

    #[test]
    fn a_did_web_is_never_verified_by_its_own_did() {
        let err = shared_key("did:web:agent.example").unwrap_err();
        assert!(err.message.contains("names a web address, not a key"), "{}", err.message);
        assert!(shared_key("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK").is_ok());
    }

    #[test]
    fn a_shared_code_reads_back_as_its_key_and_nonsense_is_refused() {
        let key = "ab".repeat(32);
        let text = share_text(&key, "http://127.0.0.1:7777/epp/v1/submit");
        assert!(text.starts_with("gatehouse:contact?key="), "{text}");
        assert_eq!(shared_key(&text).unwrap(), key);
        assert_eq!(shared_key(&format!("  {}\n", key.to_uppercase())).unwrap(), key);
        assert!(shared_key("gatehouse:contact?key=nothex").is_err());
        assert!(shared_key("hello").is_err());
    }
}
