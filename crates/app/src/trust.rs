//! The trust registry as the user changes it (add, edit, remove, block, tokens), each
//! change validated and written to the audit log. The window's commands and the CLI both
//! call these; neither validates on its own.

use crate::Context;
use chrono::{DateTime, Utc};
use gatehouse_store::Store;

/// The scope under which the user's own agents are registered with the guardian.
pub const ASOP_SCOPE: &str = crate::doors::guardian::SCOPE;
pub use gatehouse_store::{default_max_envelope_size, CapabilityLimit, EppFacts, Facts, Policy, RateLimit, RevokedKey, TrustEntry};

use crate::doors::gate::consent::{now_string, ConsentError};
use crate::target::{grantable, Source};

pub fn add(ctx: &Context, entry: &TrustEntry, now: DateTime<Utc>) -> std::result::Result<(), ConsentError> {
    add_in(&ctx.store, entry, now)
}

/// [`add`] on the store itself, for this crate's own callers.
pub(crate) fn add_in(store: &Store, entry: &TrustEntry, now: DateTime<Utc>) -> std::result::Result<(), ConsentError> {
    validate(&entry.policy, &entry.door, &entry.facts)?;
    scopes_grantable(entry)?;
    check_sender_id(&entry.public_key, &entry.facts)?;
    if entry.name.trim().is_empty() {
        return Err(ConsentError::Invalid("a name is required".into()));
    }
    store.unblock(&entry.public_key)?;
    store.trust_add(entry)?;
    store.audit("trust.add", Some(&gatehouse_store::sender_key(&entry.public_key)), &serde_json::to_value(entry).unwrap(), &now_string(now))?;
    Ok(())
}

/// Changes an entry's name and policy and, when `epp` is given, what the EPP door keeps
/// about an EPP sender (where answers go, its mail address, its capability limit).
pub fn update(ctx: &Context, key: &str, name: &str, policy: &Policy, epp: Option<&EppFacts>, now: DateTime<Utc>) -> std::result::Result<(), ConsentError> {
    let store: &Store = &ctx.store;
    let name = &crate::names::check(name)?;
    let Some(stored) = store.trust_get(key)? else { return Err(ConsentError::Gone) };
    // The window edits scopes, limits and an EPP sender's addresses; what another door
    // keeps (a UAMP agent's keys, learnt when it was added) is kept as it is.
    let facts = match epp {
        Some(_) if stored.door != crate::doors::epp::DOOR => {
            return Err(ConsentError::Invalid(format!("{key} came by the {} door: answers go back where that door says", stored.door)))
        }
        Some(e) => Facts { epp: Some(e.clone()).filter(|e| *e != EppFacts::default()), ..stored.facts.clone() },
        None => stored.facts.clone(),
    };
    validate(policy, &stored.door, &facts)?;
    let mut policy = policy.clone();
    // A key change waiting to be verified is lifted by verifying it, never by an edit.
    policy.key_change_unverified = stored.policy.key_change_unverified;
    store.trust_update(key, Some(name), &policy, Some(&facts))?;
    // A sender named anew is its person named anew (one name per person).
    store.name_person_of(key, name)?;
    store.audit(
        "trust.update",
        Some(&gatehouse_store::sender_key(key)),
        &serde_json::json!({"name": name, "policy": policy, "facts": facts}),
        &now_string(now),
    )?;
    Ok(())
}

pub fn remove(ctx: &Context, key: &str, now: DateTime<Utc>) -> std::result::Result<(), ConsentError> {
    let store: &Store = &ctx.store;
    if !store.trust_remove(key)? {
        return Err(ConsentError::Gone);
    }
    store.audit("trust.remove", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
    Ok(())
}

/// Issues a bearer token for a trusted UAMP sender (shown once; only its hash is kept).
pub fn token_issue(ctx: &Context, sender: &str, now: DateTime<Utc>) -> crate::Result<String> {
    let store: &Store = &ctx.store;
    if store.trust_get(sender)?.is_none() {
        return Err(crate::CommandError::new(
            crate::Code::NotTrusted,
            format!(
                "{sender} is not a trusted sender; trust it first (People & agents → Add someone, or `gatehouse trust add {sender} --name … --scopes ask`)"
            ),
        ));
    }
    let token = crate::doors::uamp::UampDoor::issue_token(store, sender, now)?;
    store.audit("uamp.token_issue", Some(&gatehouse_store::sender_key(sender)), &serde_json::json!({}), &now_string(now))?;
    Ok(token)
}

/// Revokes every bearer token of a sender; returns how many there were.
pub fn token_revoke(ctx: &Context, sender: &str, now: DateTime<Utc>) -> std::result::Result<usize, ConsentError> {
    let store: &Store = &ctx.store;
    let n = store.uamp_tokens_revoke(sender)?;
    store.audit("uamp.token_revoke", Some(&gatehouse_store::sender_key(sender)), &serde_json::json!({"revoked": n}), &now_string(now))?;
    Ok(n)
}

pub fn block(ctx: &Context, key: &str, now: DateTime<Utc>) -> std::result::Result<(), ConsentError> {
    let store: &Store = &ctx.store;
    store.block(key, "blocked from the trust manager", &now_string(now))?;
    store.audit("trust.block", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
    Ok(())
}

pub fn unblock(ctx: &Context, key: &str, now: DateTime<Utc>) -> std::result::Result<(), ConsentError> {
    let store: &Store = &ctx.store;
    store.unblock(key)?;
    store.audit("trust.unblock", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
    Ok(())
}

/// Revokes a key (EPP v1.1 SENDER_REVOKED), audited; its trust entry stays. Returns
/// whether it was not revoked before.
pub fn revoke(ctx: &Context, key: &str, reason: &str, now: DateTime<Utc>) -> std::result::Result<bool, ConsentError> {
    let store: &Store = &ctx.store;
    let new = store.revoke(key, reason.trim(), &now_string(now))?;
    store.audit("trust.revoke", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({"reason": reason.trim(), "new": new}), &now_string(now))?;
    Ok(new)
}

/// Takes a revocation back, audited. Returns whether the key was revoked.
pub fn unrevoke(ctx: &Context, key: &str, now: DateTime<Utc>) -> std::result::Result<bool, ConsentError> {
    let store: &Store = &ctx.store;
    let was = store.unrevoke(key)?;
    if was {
        store.audit("trust.unrevoke", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
    }
    Ok(was)
}

/// What the consent prompt would let a key in for, and nothing more: an agent or a site
/// only for its own scope, anyone else never for those.
fn scopes_grantable(entry: &TrustEntry) -> std::result::Result<(), ConsentError> {
    let source = Source::at(&entry.door);
    for scope in &entry.policy.allowed_scopes {
        match source.fixed_scope() {
            Some(fixed) if scope != fixed => return Err(ConsentError::Invalid(format!("{} can only be let in for \"{fixed}\"", entry.public_key))),
            _ if scope == "*" => {}
            _ => grantable(source, scope)?,
        }
    }
    Ok(())
}

fn validate(p: &Policy, door: &str, facts: &Facts) -> std::result::Result<(), ConsentError> {
    if p.allowed_scopes.is_empty() {
        return Err(ConsentError::Invalid("allow at least one scope, or * for all".into()));
    }
    if let Some(bad) = p.allowed_scopes.iter().find(|s| *s != "*" && !gatehouse_gate::consent::is_scope_like(s)) {
        return Err(ConsentError::Invalid(format!("scope {bad:?} may contain only letters, digits and hyphens")));
    }
    if facts.epp.is_some() && door != crate::doors::epp::DOOR {
        return Err(ConsentError::Invalid(format!(
            "reply and mail addresses and capability limits are kept for EPP senders; this entry came by the {door} door"
        )));
    }
    if facts.uamp.is_some() && door != crate::doors::uamp::DOOR {
        return Err(ConsentError::Invalid(format!("UAMP keys are kept for UAMP agents; this entry came by the {door} door")));
    }
    if let Some(u) = facts.reply_endpoint() {
        // An inbox's address, or a mail address answers go to by mail (EPP 8.2).
        let ok = match u.strip_prefix("mailto:") {
            Some(addr) => bare_mail_address(addr),
            None => url::Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "http" | "https")),
        };
        if !ok {
            return Err(ConsentError::Invalid(format!(
                "{u:?} is not an inbox address (http(s)://…/epp/v1/submit) or a mail address (mailto:someone@example.com)"
            )));
        }
    }
    if let Some(a) = facts.epp.as_ref().and_then(|e| e.mail_address.as_deref()) {
        // Receipts are mailed to this one address, as it is written (never a display
        // name, a list, or anything a mail reader would re-interpret).
        if !bare_mail_address(a) {
            return Err(ConsentError::Invalid(format!("{a:?} is not a mail address (someone@example.com): receipts are mailed only to a plain address")));
        }
    }
    if !p.auto_reply_scopes.is_empty() && facts.reply_endpoint().is_none() {
        return Err(ConsentError::Invalid("answers can go back without review only to an address: fill in where to send them".into()));
    }
    Ok(())
}

/// One address and nothing else: the reading `Facts::mail_to` relies on.
fn bare_mail_address(a: &str) -> bool {
    gatehouse_email::smtp::mailbox(a, "the mail address").is_ok_and(|m| m.name.is_none())
}

/// An EPP public key (64 hex), a did:key, or a did:web whose keys were fetched.
pub(crate) fn check_sender_id(id: &str, facts: &Facts) -> std::result::Result<(), ConsentError> {
    if id.starts_with("did:key:") {
        gatehouse_uamp::did::resolve_did_key(id).map_err(|e| ConsentError::Invalid(format!("not a usable did:key: {e}")))?;
    } else if let Some(agent) = id.strip_prefix("asop:") {
        // One of the user's own agents, registering with the ASOP guardian.
        if agent.trim().is_empty() {
            return Err(ConsentError::Invalid("an ASOP agent needs its id (asop:<agent id>)".into()));
        }
    } else if id.starts_with("a2a:") {
        // An A2A agent is known by what it proved at the transport: the hash of a token
        // the user issued, or of its certificate's key.
        if !crate::doors::a2a::is_caller_id(id) {
            return Err(ConsentError::Invalid(format!("not an A2A agent's key: {id} (a2a:token:<sha256> or a2a:key:<sha256>)")));
        }
    } else if id.starts_with("mcp:") {
        // An MCP server: the name its app runs it under, and its own Ed25519 key (a wrap's)
        // or the hash of the address the user added it by (a server the gate serves).
        let key = id.rsplit(':').next().unwrap_or_default();
        if crate::doors::mcp::signed::name_of(id).is_none() || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ConsentError::Invalid(format!("not an MCP server's key: {id} (mcp:<name>:<64 hex digits>)")));
        }
    } else if id.starts_with("did:web:") {
        gatehouse_uamp::did::did_web_url(id).map_err(ConsentError::Invalid)?;
        if facts.uamp_keys().is_empty() {
            return Err(ConsentError::Invalid(format!("{id}'s keys were not fetched; add it with its DID document reachable")));
        }
    } else {
        gatehouse_epp::parse_public_key(id).map_err(|e| ConsentError::Invalid(format!("not a usable public key: {e}")))?;
    }
    Ok(())
}

/// A trust entry as the user gives it (the window's form, the CLI's flags).
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TrustInput {
    pub public_key: String,
    pub name: String,
    pub policy: Policy,
    /// For an EPP sender: where answers go, its mail address, its capability limit.
    #[serde(default)]
    pub epp: Option<EppFacts>,
}

/// The door of a key the user types in by hand (no door recorded it): its form is the
/// user's statement of what it is — a DID a UAMP agent's, `asop:` one of their own agents,
/// `a2a:` an A2A agent's, a 64-hex key an EPP sender's.
pub fn door_of_typed_key(key: &str) -> &'static str {
    if key.starts_with("did:") {
        crate::doors::uamp::DOOR
    } else if key.starts_with("asop:") {
        crate::doors::guardian::DOOR
    } else if key.starts_with("a2a:") {
        crate::doors::a2a::DOOR
    } else if key.starts_with("mcp:") {
        crate::doors::mcp::DOOR
    } else {
        crate::doors::epp::DOOR
    }
}

/// Trusts a sender as the user typed it: a did:web's keys are fetched over HTTPS first (a
/// did:key carries its key), then [`add`].
pub async fn add_input(ctx: &Context, input: TrustInput) -> crate::Result<TrustEntry> {
    let store = ctx.store.clone();
    let key = input.public_key.trim().to_string();
    let door = door_of_typed_key(&key);
    let keys = did_web_keys(&key).await?;
    let facts = match door {
        d if d == crate::doors::uamp::DOOR && !keys.is_empty() => Facts::uamp(keys),
        _ => Facts { epp: input.epp.filter(|e| *e != EppFacts::default()), uamp: None },
    };
    let now = Utc::now();
    let entry = TrustEntry {
        public_key: gatehouse_store::sender_key(&key),
        name: input.name.trim().to_string(),
        added_at: now_string(now),
        door: door.to_string(),
        policy: input.policy,
        facts,
    };
    crate::blocking(move || {
        add_in(&store, &entry, now)?;
        Ok(entry)
    })
    .await
}

/// A did:web sender's keys, fetched over HTTPS from its DID document when the user lets it
/// in (never when something arrives); none for any other kind of key.
pub async fn did_web_keys(key: &str) -> crate::Result<Vec<gatehouse_store::UampKey>> {
    if !key.starts_with("did:web:") {
        return Ok(Vec::new());
    }
    crate::doors::uamp::peer::keys_for(key).await.map_err(|e| crate::CommandError::new(crate::Code::DidFetch, e))
}

/// Trusts a sender that knocked (it must be waiting for consent), under `name` or a
/// default one.
pub fn approve(ctx: &Context, key: &str, name: Option<String>, policy: Policy, epp: Option<EppFacts>, now: DateTime<Utc>) -> crate::Result<TrustEntry> {
    let store: &Store = &ctx.store;
    let key = gatehouse_store::sender_key(key.trim());
    let pending = store.pending_list()?;
    let Some(p) = pending.iter().find(|p| p.public_key == key) else {
        return Err(crate::CommandError::new(crate::Code::NotFound, format!("{key} has no pending request; trust it directly instead")));
    };
    let name = name.unwrap_or_else(|| crate::names::unnamed(&p.public_key));
    // The door it knocked at, as that door recorded it.
    let entry = TrustEntry { public_key: key, name, added_at: now_string(now), door: p.door.clone(), policy, facts: Facts { epp, uamp: None } };
    scopes_grantable(&entry)?;
    add(ctx, &entry, now)?;
    Ok(entry)
}

/// A trusted sender as the user sees it: short fingerprint, and how much it sent today.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TrustRow {
    #[serde(flatten)]
    pub entry: TrustEntry,
    pub fingerprint: String,
    pub used_today: i64,
}

pub fn list(ctx: &Context) -> crate::Result<Vec<TrustRow>> {
    let store: &Store = &ctx.store;
    let midnight = Utc::now().date_naive().and_hms_opt(0, 0, 0).expect("midnight").and_utc().timestamp_millis();
    store
        .trust_list()?
        .into_iter()
        .map(|entry| {
            let used_today = store.accepted_since(&entry.public_key, midnight)?;
            Ok(TrustRow { fingerprint: fingerprint(&entry.public_key), entry, used_today })
        })
        .collect()
}

/// Keys revoked, newest first: their envelopes are refused with SENDER_REVOKED.
pub fn revoked(ctx: &Context) -> crate::Result<Vec<RevokedKey>> {
    let store: &Store = &ctx.store;
    Ok(store.revoked_list()?)
}

/// A scope granted for a while, as the user sees it listed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimedGrant {
    pub public_key: String,
    pub name: String,
    pub scope: String,
    /// When it ends (UTC).
    pub until: String,
    /// It has ended: the sender's next message in the scope is held and asks again.
    pub ended: bool,
}

/// Every grant for a while, those ending first (ended ones first of all).
pub fn timed_grants(ctx: &Context, now: DateTime<Utc>) -> crate::Result<Vec<TimedGrant>> {
    let store: &Store = &ctx.store;
    let mut out: Vec<TimedGrant> = store
        .trust_list()?
        .into_iter()
        .flat_map(|t| {
            let (key, name) = (t.public_key, t.name);
            t.policy.grant_until.into_iter().map(move |(scope, until)| TimedGrant {
                ended: !gatehouse_store::grant_lasts(&until, now),
                public_key: key.clone(),
                name: name.clone(),
                scope,
                until,
            })
        })
        .collect();
    out.sort_by(|a, b| a.until.cmp(&b.until));
    Ok(out)
}

/// A key as people compare it: the first 16 hex digits in groups of four; a did:key by its
/// method and last characters; a did:web (a name its owner chose) and an agent's id whole.
pub fn fingerprint(key: &str) -> String {
    // A did:web's name was chosen by its owner: only the whole of it says who it is. An
    // agent of the user's is its id, whole (cut in fours it read "asop :mai ler- 1").
    if key.starts_with("did:web:") {
        return key.to_string();
    }
    if let Some(agent) = key.strip_prefix("asop:") {
        return format!("agent {agent}");
    }
    if key.starts_with("did:") {
        let method = key.splitn(3, ':').take(2).collect::<Vec<_>>().join(":");
        let tail: String = key.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        return format!("{method}:…{tail}");
    }
    key.get(..16).unwrap_or(key).as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_fingerprint_cuts_only_what_reads_as_well_cut() {
        assert_eq!(fingerprint(&"d04ab232742bb4ab".repeat(4)), "d04a b232 742b b4ab");
        assert_eq!(fingerprint("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"), "did:key:…EGta2doK");
        assert_eq!(fingerprint("did:web:evil-bank.example"), "did:web:evil-bank.example");
        assert_eq!(fingerprint("asop:mailer-1"), "agent mailer-1");
    }

    #[test]
    fn a_token_is_issued_to_a_trusted_sender_only_and_the_refusal_says_how_to_trust_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(Store::open(&dir.path().join("g.db")).unwrap());
        let ctx = crate::Context::with_store(dir.path().to_path_buf(), ed25519_dalek::SigningKey::from_bytes(&[7; 32]), store.clone());
        let key = "a".repeat(64);
        let e = token_issue(&ctx, &key, Utc::now()).unwrap_err();
        assert_eq!(e.code, crate::Code::NotTrusted, "{e:?}");
        assert!(e.message.contains("trust it first") && e.message.contains("gatehouse trust add"), "{}", e.message);
        assert!(store.audit_list(10).unwrap().is_empty(), "a refused issue is not audited");
        let policy = Policy { allowed_scopes: vec!["ask".into()], ..Policy::default() };
        let entry = TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: key.clone(),
            name: "a".into(),
            added_at: "2026-11-26T00:00:00Z".into(),
            policy,
        };
        add(&ctx, &entry, Utc::now()).unwrap();
        let token = token_issue(&ctx, &key, Utc::now()).unwrap();
        assert!(token.len() >= 32, "{token}");
    }

    fn with_endpoint(e: &str) -> (Policy, Facts) {
        let facts = Facts::epp(EppFacts { reply_endpoint: Some(e.into()), ..EppFacts::default() });
        (Policy { allowed_scopes: vec!["support".into()], ..Policy::default() }, facts)
    }

    #[test]
    fn answers_go_to_an_inbox_url_or_a_bare_mail_address_only() {
        for ok in ["https://inbox.example/epp/v1/submit", "http://127.0.0.1:8080/epp/v1/submit", "mailto:agent@clinic.example"] {
            let (p, f) = with_endpoint(ok);
            assert!(validate(&p, "epp", &f).is_ok(), "{ok}");
        }
        // A display name, no address, another scheme: not where answers can go.
        for bad in ["mailto:Clinic <agent@clinic.example>", "mailto:not an address", "mailto:", "file:///etc/passwd", "ftp://x.example/"] {
            let (p, f) = with_endpoint(bad);
            let e = validate(&p, "epp", &f).unwrap_err();
            assert!(e.to_string().contains("mail address (mailto:"), "{bad}: {e}");
        }
    }

    #[test]
    fn receipts_are_bound_to_a_plain_mail_address_only() {
        let p = Policy { allowed_scopes: vec!["support".into()], ..Policy::default() };
        let with = |a: &str| Facts::epp(EppFacts { mail_address: Some(a.into()), ..EppFacts::default() });
        assert!(validate(&p, "epp", &with("agent@clinic.example")).is_ok());
        for bad in ["Clinic <agent@clinic.example>", "a@x.example, b@y.example", "agent@clinic.example?cc=me@evil.example", "not an address", ""] {
            let e = validate(&p, "epp", &with(bad)).unwrap_err();
            assert!(e.to_string().contains("is not a mail address"), "{bad}: {e}");
        }
    }

    #[test]
    fn what_one_door_keeps_is_kept_only_for_an_entry_that_came_by_it() {
        let p = Policy { allowed_scopes: vec!["support".into()], ..Policy::default() };
        let e = validate(&p, "uamp", &with_endpoint("https://inbox.example/epp/v1/submit").1).unwrap_err();
        assert!(e.to_string().contains("kept for EPP senders"), "{e}");
        let keys = Facts::uamp(vec![gatehouse_store::UampKey { kid: "k".into(), jwk: serde_json::json!({}) }]);
        let e = validate(&p, "epp", &keys).unwrap_err();
        assert!(e.to_string().contains("kept for UAMP agents"), "{e}");
        assert_eq!(door_of_typed_key("did:key:z6Mk"), "uamp");
        assert_eq!(door_of_typed_key(&"ab".repeat(32)), "epp");
    }
}
