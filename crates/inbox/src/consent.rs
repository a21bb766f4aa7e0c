//! What the user decides: consent prompts (unknown senders, held envelopes) and changes
//! to the trust registry. Every decision takes effect at once and is written to the
//! audit log the user can read.

use chrono::{DateTime, Utc};
use gatehouse_epp::Receipt;
use gatehouse_store::{ExecStatus, Policy, Store, StoreError, TrustEntry};
use serde::{Deserialize, Serialize};

use crate::pipeline::Inbox;

/// One thing waiting for the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConsentItem {
    /// A sender not in the trust registry knocked with a valid signature.
    UnknownSender {
        public_key: String,
        /// What is knocking, from where it arrived (never from what it wrote).
        source: Source,
        first_seen: String,
        last_seen: String,
        count: i64,
        scopes_tried: Vec<String>,
        /// The newest knock: what "allow" would deliver.
        envelope_id: Option<String>,
        scope: Option<String>,
        prompt: Option<String>,
    },
    /// A trusted sender's envelope whose policy holds it for consent.
    Held {
        row_id: i64,
        envelope_id: String,
        sender: String,
        sender_name: Option<String>,
        scope: String,
        prompt: String,
        payload_type: Option<String>,
        on_behalf_of: Option<String>,
        received_at: String,
    },
    /// A trusted UAMP agent's `ask` whose policy holds it for consent: its stream is open
    /// and waits.
    HeldAsk { stream_id: String, sender: String, sender_name: Option<String>, scope: String, prompt: String, received_at: String },
}

/// What an unknown key is, decided by how it reached Gatehouse: its registry key's
/// namespace (`asop:` for agents at the guardian, `did:` for UAMP) and the one scope only
/// Gatehouse itself records (an IntentSite's answer signed by a key not yet pinned). Senders cannot
/// choose it: EPP envelopes in the reserved scopes are refused before they can knock, and
/// a UAMP knock's scope is its signed intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    EppSender,
    UampAgent,
    IntentSite,
    AsopAgent,
}

/// Scopes Gatehouse records for its own doors; no EPP envelope may use them.
pub const RESERVED_SCOPES: [&str; 2] = [crate::guardian::SCOPE, crate::intent::SCOPE];

impl Source {
    pub fn of(key: &str, scope: Option<&str>) -> Source {
        if key.starts_with("asop:") {
            Source::AsopAgent
        } else if scope == Some(crate::intent::SCOPE) {
            // IntentSite keys are DIDs too; only intent.rs records this scope (EPP refuses
            // it, and a UAMP knock asks for its intent).
            Source::IntentSite
        } else if key.starts_with("did:") {
            Source::UampAgent
        } else {
            Source::EppSender
        }
    }

    /// The one scope a grant for this source may name, when it is fixed.
    fn fixed_scope(self) -> Option<&'static str> {
        match self {
            Source::AsopAgent => Some(crate::guardian::SCOPE),
            Source::IntentSite => Some(crate::intent::SCOPE),
            Source::EppSender | Source::UampAgent => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    AllowOnce,
    AlwaysAllowScope,
    Deny,
    Block,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConsentTarget {
    UnknownSender { public_key: String },
    Held { row_id: i64 },
    HeldAsk { stream_id: String },
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecisionOutcome {
    pub message: String,
    /// The receipt of the envelope the decision delivered, if any.
    pub delivered: Option<Receipt>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("nothing is waiting for that decision any more")]
    Gone,
    #[error("{0}")]
    Invalid(String),
}

impl ConsentError {
    pub fn code(&self) -> &'static str {
        match self {
            ConsentError::Store(_) => "STORE",
            ConsentError::Gone => "GONE",
            ConsentError::Invalid(_) => "INVALID",
        }
    }
}

fn now_string(now: DateTime<Utc>) -> String {
    gatehouse_epp::utc_string(now)
}

/// Everything waiting for the user, newest first.
pub fn pending(store: &Store) -> Result<Vec<ConsentItem>, ConsentError> {
    let mut items = Vec::new();
    for s in store.uamp_held_streams()?.into_iter().rev() {
        let Some(m) = store.uamp_message_by_row(s.message_row)? else { continue };
        items.push(ConsentItem::HeldAsk {
            sender_name: store.trust_get(&s.peer)?.map(|t| t.name),
            stream_id: s.stream_id,
            sender: s.peer,
            scope: m.scope.unwrap_or(m.intent),
            prompt: m.content,
            received_at: m.received_at,
        });
    }
    for row in store.envelopes_with_status(ExecStatus::Held)?.into_iter().rev() {
        let sender_name = store.trust_get(&row.sender)?.map(|t| t.name);
        items.push(ConsentItem::Held {
            row_id: row.id,
            envelope_id: row.envelope_id,
            sender: row.sender,
            sender_name,
            scope: row.scope,
            prompt: row.prompt,
            payload_type: row.payload_type,
            on_behalf_of: row.on_behalf_of,
            received_at: row.received_at,
        });
    }
    for p in store.pending_list()? {
        let knock = store.latest_receipt_from(&p.public_key, "UNTRUSTED_SENDER")?;
        let scope = knock.as_ref().and_then(|k| k.scope.clone()).or_else(|| p.scopes_tried.first().cloned());
        items.push(ConsentItem::UnknownSender {
            source: Source::of(&p.public_key, scope.as_deref()),
            envelope_id: knock.as_ref().and_then(|k| k.envelope_id.clone()),
            scope,
            prompt: knock.and_then(|k| k.prompt),
            public_key: p.public_key,
            first_seen: p.first_seen,
            last_seen: p.last_seen,
            count: p.count,
            scopes_tried: p.scopes_tried,
        });
    }
    Ok(items)
}

pub fn waiting_count(store: &Store) -> Result<usize, ConsentError> {
    Ok(store.count_waiting()? as usize)
}

/// Applies the user's decision. Blocking (SQLite).
pub fn decide(inbox: &Inbox, target: &ConsentTarget, decision: Decision, now: DateTime<Utc>) -> Result<DecisionOutcome, ConsentError> {
    decide_with_keys(inbox, target, decision, now, &[])
}

/// [`decide`], with the keys of a did:web sender fetched (by the caller, over HTTPS) when
/// the user approves it.
pub fn decide_with_keys(
    inbox: &Inbox,
    target: &ConsentTarget,
    decision: Decision,
    now: DateTime<Utc>,
    uamp_keys: &[gatehouse_store::UampKey],
) -> Result<DecisionOutcome, ConsentError> {
    let store = inbox.store();
    let at = now_string(now);
    let outcome = match target {
        ConsentTarget::UnknownSender { public_key } => {
            let key = gatehouse_store::sender_key(public_key);
            let Some(request) = store.pending_list()?.into_iter().find(|p| p.public_key == key) else {
                return Err(ConsentError::Gone);
            };
            let knock = store.latest_receipt_from(&key, "UNTRUSTED_SENDER")?;
            let scope = knock.as_ref().and_then(|k| k.scope.clone()).or_else(|| request.scopes_tried.first().cloned());
            match decision {
                Decision::Deny => {
                    store.pending_remove(&key)?;
                    DecisionOutcome { message: "Denied. The sender stays unknown; if it writes again you will be asked again.".into(), delivered: None }
                }
                Decision::Block => {
                    store.block(&key, "blocked from a consent prompt", &at)?;
                    DecisionOutcome { message: "Blocked. Nothing from this sender will reach you or ask again.".into(), delivered: None }
                }
                Decision::AllowOnce if key.starts_with("asop:") => {
                    return Err(ConsentError::Invalid("an agent is registered by letting it in for good; it then asks again and your rules decide".into()));
                }
                Decision::AllowOnce if key.starts_with("did:") => {
                    return Err(ConsentError::Invalid(
                        "a UAMP agent is let in by trusting it for the scope and issuing it a token; nothing of its message was kept to deliver once".into(),
                    ));
                }
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    let scope = scope.ok_or_else(|| ConsentError::Invalid("the request has no scope to allow".into()))?;
                    grantable(&key, &scope)?;
                    let entry = TrustEntry {
                        public_key: key.clone(),
                        name: default_name(&key),
                        added_at: at.clone(),
                        policy: Policy { allowed_scopes: vec![scope.clone()], uamp_keys: uamp_keys.to_vec(), ..Policy::default() },
                    };
                    let body = knock.as_ref().filter(|k| !k.body_truncated).and_then(|k| k.body.clone());
                    check_sender_id(&key, &entry.policy)?;
                    let delivered = if decision == Decision::AlwaysAllowScope {
                        store.trust_add(&entry)?;
                        body.map(|b| inbox.submit(b.as_bytes(), "consent", now))
                    } else {
                        store.pending_remove(&key)?;
                        body.map(|b| inbox.submit_as(b.as_bytes(), "consent", now, Some(&entry)))
                    };
                    let message = match (&delivered, decision) {
                        (Some(o), _) if o.receipt.code().is_some() => format!(
                            "Allowed, but the waiting message could not be delivered: {}",
                            o.receipt.error.as_ref().map(|e| e.message.as_str()).unwrap_or("")
                        ),
                        (_, Decision::AlwaysAllowScope) if Source::of(&key, Some(&scope)) == Source::AsopAgent => {
                            "Registered: this agent's steps are now decided by your rules, or asked about.".to_string()
                        }
                        (_, Decision::AlwaysAllowScope) if Source::of(&key, Some(&scope)) == Source::IntentSite => {
                            "Pinned: this IntentSite's answers are now checked against its key, and answers signed by any other key are refused.".to_string()
                        }
                        (_, Decision::AlwaysAllowScope) if key.starts_with("did:") => {
                            format!("Trusted for \"{scope}\". Issue it a token (UAMP tab) and send it the token: its messages arrive once it uses it.")
                        }
                        (_, Decision::AlwaysAllowScope) => format!("Trusted for \"{scope}\". Its messages in that scope now arrive."),
                        _ => "Allowed once. The waiting message was delivered.".into(),
                    };
                    DecisionOutcome { message, delivered: delivered.map(|o| o.receipt) }
                }
            }
        }
        ConsentTarget::HeldAsk { stream_id } => {
            let Some(s) = store.uamp_stream(stream_id)?.filter(|s| s.state == "NEW" && s.detail.as_deref() == Some(gatehouse_store::HELD_FOR_CONSENT)) else {
                return Err(ConsentError::Gone);
            };
            let Some(uamp) = inbox.uamp() else {
                return Err(ConsentError::Invalid("UAMP is not running (the inbox is paused); resume it, then decide".into()));
            };
            match decision {
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    if decision == Decision::AlwaysAllowScope {
                        let scope = store.uamp_message_by_row(s.message_row)?.and_then(|m| m.scope);
                        if let (Some(mut t), Some(scope)) = (store.trust_get(&s.peer)?, scope) {
                            if !t.policy.consent_granted_scopes.contains(&scope) {
                                t.policy.consent_granted_scopes.push(scope);
                            }
                            store.trust_update(&s.peer, None, &t.policy)?;
                        }
                    }
                    if !uamp.release(stream_id, now)? {
                        return Err(ConsentError::Gone);
                    }
                    DecisionOutcome { message: "Released: the agent's ask runs and its answer streams back.".into(), delivered: None }
                }
                Decision::Deny | Decision::Block => {
                    if !uamp.refuse_held(stream_id, now)? {
                        return Err(ConsentError::Gone);
                    }
                    if decision == Decision::Block {
                        store.block(&s.peer, "blocked from a consent prompt", &at)?;
                    }
                    DecisionOutcome { message: "Denied. Nothing ran; the agent's stream ends with a cancel.".into(), delivered: None }
                }
            }
        }
        ConsentTarget::Held { row_id } => {
            let Some(row) = store.envelope(*row_id)?.filter(|r| r.exec_status == ExecStatus::Held) else {
                return Err(ConsentError::Gone);
            };
            match decision {
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    if decision == Decision::AlwaysAllowScope {
                        if let Some(mut t) = store.trust_get(&row.sender)? {
                            if !t.policy.consent_granted_scopes.contains(&row.scope) {
                                t.policy.consent_granted_scopes.push(row.scope.clone());
                            }
                            store.trust_update(&row.sender, None, &t.policy)?;
                        }
                    }
                    store.set_exec(row.id, ExecStatus::Queued, None, &at)?;
                    if !inbox.execute(row.id) {
                        return Err(ConsentError::Invalid("the inbox is paused; the message will run when it resumes".into()));
                    }
                    DecisionOutcome { message: "Released to its executor.".into(), delivered: None }
                }
                Decision::Deny | Decision::Block => {
                    let note = serde_json::json!({"denied_by": "user", "at": at});
                    store.set_exec(row.id, ExecStatus::Denied, Some(&note), &at)?;
                    if decision == Decision::Block {
                        store.block(&row.sender, "blocked from a consent prompt", &at)?;
                    }
                    DecisionOutcome { message: "Denied. The message stays in your inbox but nothing runs.".into(), delivered: None }
                }
            }
        }
    };
    store.audit(
        &format!("consent.{}", serde_json::to_value(decision).unwrap().as_str().unwrap_or("?")),
        Some(&match target {
            ConsentTarget::UnknownSender { public_key } => gatehouse_store::sender_key(public_key),
            ConsentTarget::Held { row_id } => format!("envelope-row:{row_id}"),
            ConsentTarget::HeldAsk { stream_id } => format!("uamp-stream:{stream_id}"),
        }),
        &serde_json::json!({"target": target, "result": outcome.message, "delivered": outcome.delivered}),
        &at,
    )?;
    Ok(outcome)
}

/// A consent prompt grants exactly the one scope it showed, and only a scope that fits
/// what is knocking: never `*`, never a reserved scope to anything but its own door.
fn grantable(key: &str, scope: &str) -> Result<(), ConsentError> {
    if !gatehouse_epp::envelope::is_scope_like(scope) {
        return Err(ConsentError::Invalid(format!("{scope:?} is not a single scope; a prompt grants one scope, never all")));
    }
    let source = Source::of(key, Some(scope));
    match source.fixed_scope() {
        Some(fixed) if fixed != scope => Err(ConsentError::Invalid(format!("this knock can only be let in for \"{fixed}\""))),
        None if RESERVED_SCOPES.contains(&scope) => Err(ConsentError::Invalid(format!("\"{scope}\" is reserved for Gatehouse's own agents and sites"))),
        _ => Ok(()),
    }
}

/// An EPP public key (64 hex), a did:key, or a did:web whose keys were fetched.
fn check_sender_id(id: &str, policy: &Policy) -> Result<(), ConsentError> {
    if id.starts_with("did:key:") {
        gatehouse_uamp::did::resolve_did_key(id).map_err(|e| ConsentError::Invalid(format!("not a usable did:key: {e}")))?;
    } else if let Some(agent) = id.strip_prefix("asop:") {
        // One of the user's own agents, registering with the ASOP guardian.
        if agent.trim().is_empty() {
            return Err(ConsentError::Invalid("an ASOP agent needs its id (asop:<agent id>)".into()));
        }
    } else if id.starts_with("did:web:") {
        gatehouse_uamp::did::did_web_url(id).map_err(ConsentError::Invalid)?;
        if policy.uamp_keys.is_empty() {
            return Err(ConsentError::Invalid(format!("{id}'s keys were not fetched; add it with its DID document reachable")));
        }
    } else {
        gatehouse_epp::parse_public_key(id).map_err(|e| ConsentError::Invalid(format!("not a usable public key: {e}")))?;
    }
    Ok(())
}

/// A short label for a sender the user has not named yet.
fn default_name(key: &str) -> String {
    if key.starts_with("did:") {
        let tail: String = key.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        format!("Agent …{tail}")
    } else {
        format!("Sender {}", &key[..8.min(key.len())])
    }
}

/// Trust manager operations, each audited.
pub mod trust {
    use super::*;

    pub fn add(store: &Store, entry: &TrustEntry, now: DateTime<Utc>) -> Result<(), ConsentError> {
        validate(&entry.policy)?;
        check_sender_id(&entry.public_key, &entry.policy)?;
        if entry.name.trim().is_empty() {
            return Err(ConsentError::Invalid("a name is required".into()));
        }
        store.unblock(&entry.public_key)?;
        store.trust_add(entry)?;
        store.audit("trust.add", Some(&gatehouse_store::sender_key(&entry.public_key)), &serde_json::to_value(entry).unwrap(), &now_string(now))?;
        Ok(())
    }

    pub fn update(store: &Store, key: &str, name: &str, policy: &Policy, now: DateTime<Utc>) -> Result<(), ConsentError> {
        validate(policy)?;
        if name.trim().is_empty() {
            return Err(ConsentError::Invalid("a name is required".into()));
        }
        // The window edits scopes and limits; a UAMP sender's keys (learnt when it was
        // added) are kept as they are.
        let mut policy = policy.clone();
        if policy.uamp_keys.is_empty() {
            if let Some(t) = store.trust_get(key)? {
                policy.uamp_keys = t.policy.uamp_keys;
            }
        }
        store.trust_update(key, Some(name), &policy)?;
        store.audit("trust.update", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({"name": name, "policy": policy}), &now_string(now))?;
        Ok(())
    }

    pub fn remove(store: &Store, key: &str, now: DateTime<Utc>) -> Result<(), ConsentError> {
        if !store.trust_remove(key)? {
            return Err(ConsentError::Gone);
        }
        store.audit("trust.remove", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
        Ok(())
    }

    /// Issues a bearer token for a trusted UAMP sender (shown once; only its hash is kept).
    pub fn token_issue(store: &Store, sender: &str, now: DateTime<Utc>) -> Result<String, ConsentError> {
        if store.trust_get(sender)?.is_none() {
            return Err(ConsentError::Invalid(format!("{sender} is not a trusted sender; trust it first")));
        }
        let token = crate::uamp::UampInbox::issue_token(store, sender, now)?;
        store.audit("uamp.token_issue", Some(&gatehouse_store::sender_key(sender)), &serde_json::json!({}), &now_string(now))?;
        Ok(token)
    }

    /// Revokes every bearer token of a sender; returns how many there were.
    pub fn token_revoke(store: &Store, sender: &str, now: DateTime<Utc>) -> Result<usize, ConsentError> {
        let n = store.uamp_tokens_revoke(sender)?;
        store.audit("uamp.token_revoke", Some(&gatehouse_store::sender_key(sender)), &serde_json::json!({"revoked": n}), &now_string(now))?;
        Ok(n)
    }

    pub fn block(store: &Store, key: &str, now: DateTime<Utc>) -> Result<(), ConsentError> {
        store.block(key, "blocked from the trust manager", &now_string(now))?;
        store.audit("trust.block", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
        Ok(())
    }

    pub fn unblock(store: &Store, key: &str, now: DateTime<Utc>) -> Result<(), ConsentError> {
        store.unblock(key)?;
        store.audit("trust.unblock", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({}), &now_string(now))?;
        Ok(())
    }

    fn validate(p: &Policy) -> Result<(), ConsentError> {
        if p.allowed_scopes.is_empty() {
            return Err(ConsentError::Invalid("allow at least one scope, or * for all".into()));
        }
        if let Some(bad) = p.allowed_scopes.iter().find(|s| *s != "*" && !gatehouse_epp::envelope::is_scope_like(s)) {
            return Err(ConsentError::Invalid(format!("scope {bad:?} may contain only letters, digits and hyphens")));
        }
        if let Some(u) = &p.reply_endpoint {
            let ok = reqwest::Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if !ok {
                return Err(ConsentError::Invalid(format!("{u:?} is not an inbox address (http(s)://…/epp/v1/submit)")));
            }
        }
        if !p.auto_reply_scopes.is_empty() && p.reply_endpoint.is_none() {
            return Err(ConsentError::Invalid("answers can go back without review only to an address: fill in where to send them".into()));
        }
        Ok(())
    }
}
