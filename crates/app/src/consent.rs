//! Consent: what waits for the user, and a decision carried out by the door that holds
//! what it decides: an unknown EPP sender's knock is delivered through the EPP pipeline, a
//! held envelope goes to the runner, a held UAMP ask is released into its stream. Every
//! decision is audited.

pub use crate::doors::gate::consent::ConsentError;
use crate::doors::gate::consent::{now_string, LATER};
pub use crate::doors::gate::consent::{Decision, Lasting};
use crate::doors::Gate;
use crate::doors::Submit as _;
use crate::target::grantable;
pub use crate::target::{ConsentTarget, Source};
pub use crate::waiting::{pending, pending_at, waiting_count, ConsentItem};
use chrono::{DateTime, Utc};
use gatehouse_store::{ExecStatus, Policy, TrustEntry};
use serde::Serialize;

use crate::trust::check_sender_id;

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecisionOutcome {
    pub message: String,
    /// The receipt of the envelope the decision delivered, if any.
    pub delivered: Option<gatehouse_epp::Receipt>,
}

use crate::Result;

/// The user's decision, as both faces take it: a did:web agent's keys are fetched now,
/// when the user lets it in, never on arrival; then [`decide_with_keys`], off the async
/// workers.
pub async fn decide_fetching(inbox: std::sync::Arc<Gate>, target: ConsentTarget, decision: Decision, lasting: Lasting) -> Result<DecisionOutcome> {
    let keys = match (&target, decision) {
        (ConsentTarget::UnknownSender { public_key, .. }, Decision::AlwaysAllowScope) => crate::trust::did_web_keys(public_key).await?,
        _ => Vec::new(),
    };
    crate::blocking(move || Ok(decide_with_keys(&inbox, &target, decision, &lasting, crate::doors::gate::clock::now(), &keys)?)).await
}

/// Applies the user's decision, an "allow" for good. Blocking (SQLite).
pub fn decide(inbox: &Gate, target: &ConsentTarget, decision: Decision, now: DateTime<Utc>) -> std::result::Result<DecisionOutcome, ConsentError> {
    decide_with_keys(inbox, target, decision, &Lasting::Always, now, &[])
}

/// Grants `scope` in `policy` until `end` (for good when `None`): a timed grant is listed
/// with its end, a grant for good replaces it. `held_only`: the sender's envelopes are
/// admitted already and only the hold is lifted.
fn grant(policy: &mut Policy, scope: &str, end: Option<DateTime<Utc>>, held_only: bool) {
    match end {
        Some(end) => {
            policy.grant_until.insert(scope.to_string(), now_string(end));
        }
        None => {
            policy.grant_until.remove(scope);
            if held_only && !policy.consent_granted_scopes.iter().any(|s| s == scope) {
                policy.consent_granted_scopes.push(scope.to_string());
            }
        }
    }
}

/// [`decide`], with the keys of a did:web sender fetched (by the caller, over HTTPS) when
/// the user approves it.
pub fn decide_with_keys(
    inbox: &Gate,
    target: &ConsentTarget,
    decision: Decision,
    lasting: &Lasting,
    now: DateTime<Utc>,
    uamp_keys: &[gatehouse_store::UampKey],
) -> std::result::Result<DecisionOutcome, ConsentError> {
    let store = inbox.store();
    let at = now_string(now);
    let end = lasting.end(now)?;
    let outcome = match (target, decision) {
        (_, Decision::AskLater) => {
            if !pending_at(store, now)?.iter().any(|i| i.target().as_ref() == Some(target)) {
                return Err(ConsentError::Gone);
            }
            let until = now + LATER;
            store.later_defer(&target.key(), &now_string(until), &at)?;
            DecisionOutcome {
                message: format!("Put off {}. Nothing was allowed or denied: it waits, and asks you again then.", Lasting::words(Some(until))),
                delivered: None,
            }
        }
        _ => decide_now(inbox, target, decision, end, now, uamp_keys)?,
    };
    if decision != Decision::AskLater {
        store.later_forget(&target.key())?;
    }
    store.audit(
        &format!("consent.{}", serde_json::to_value(decision).unwrap().as_str().unwrap_or("?")),
        Some(&target.key()),
        &serde_json::json!({"target": target, "until": end.map(now_string), "result": outcome.message, "delivered": outcome.delivered}),
        &at,
    )?;
    Ok(outcome)
}

/// Allow, deny or block, carried out by the door that holds what is decided.
fn decide_now(
    inbox: &Gate,
    target: &ConsentTarget,
    decision: Decision,
    end: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    uamp_keys: &[gatehouse_store::UampKey],
) -> std::result::Result<DecisionOutcome, ConsentError> {
    let store = inbox.store();
    let at = now_string(now);
    let outcome = match target {
        ConsentTarget::UnknownSender { public_key, knock: shown } => {
            let key = gatehouse_store::sender_key(public_key);
            let Some(request) = store.pending_list()?.into_iter().find(|p| p.public_key == key) else {
                return Err(ConsentError::Gone);
            };
            let knock = store.latest_receipt_from(&key, "UNTRUSTED_SENDER")?;
            // The decision is on the knock the user saw: if the sender knocked again in
            // between (another scope, other words), nothing is decided and the newer one
            // is shown instead.
            if knock.as_ref().map(|k| &k.receipt_id) != shown.as_ref() && decision != Decision::Block {
                return Err(ConsentError::Changed(
                    "Nothing was decided: this sender knocked again since the prompt was shown. Look at what it sends now, then decide.".into(),
                ));
            }
            let scope = knock.as_ref().and_then(|k| k.scope.clone()).or_else(|| request.scopes_tried.first().cloned());
            // What knocked, by the door it knocked at.
            let source = Source::at(&request.door);
            match decision {
                Decision::AskLater => return Err(ConsentError::Invalid("a prompt is put off, not decided".into())),
                Decision::Deny => {
                    store.pending_remove(&key)?;
                    DecisionOutcome { message: "Denied. The sender stays unknown; if it writes again you will be asked again.".into(), delivered: None }
                }
                Decision::Block => {
                    store.block(&key, "blocked from a consent prompt", &at)?;
                    DecisionOutcome { message: "Blocked. Nothing from this sender will reach you or ask again.".into(), delivered: None }
                }
                Decision::AllowOnce if source == Source::AsopAgent => {
                    return Err(ConsentError::Invalid("an agent is registered by letting it in for good; it then asks again and your rules decide".into()));
                }
                Decision::AllowOnce if source == Source::UampAgent => {
                    return Err(ConsentError::Invalid(
                        "a UAMP agent is let in by trusting it for the scope and issuing it a token; nothing of its message was kept to deliver once".into(),
                    ));
                }
                Decision::AllowOnce if source == Source::IntentSite => {
                    return Err(ConsentError::Invalid(
                        "a site's key is pinned, for good or for a while; nothing of its answer waits to be delivered once".into(),
                    ));
                }
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    let scope = scope.ok_or_else(|| ConsentError::Invalid("the request has no scope to allow".into()))?;
                    grantable(source, &scope)?;
                    if end.is_some() && source == Source::AsopAgent {
                        return Err(ConsentError::Invalid(
                            "an agent is registered for good (it can be removed at any time); its steps can be allowed for a while".into(),
                        ));
                    }
                    // A knock that came by mail: its From is where this sender's receipts
                    // go from now on (the address the user let it in under).
                    let mail_from = match &knock {
                        Some(k) => store.email_arrival_get(&k.receipt_id)?.and_then(|a| a.from_addr),
                        None => None,
                    };
                    let mut policy =
                        Policy { allowed_scopes: vec![scope.clone()], uamp_keys: uamp_keys.to_vec(), mail_address: mail_from.clone(), ..Policy::default() };
                    if decision == Decision::AlwaysAllowScope {
                        grant(&mut policy, &scope, end, false);
                    }
                    let entry = TrustEntry { public_key: key.clone(), name: default_name(&key), added_at: at.clone(), policy };
                    let body = knock.as_ref().filter(|k| !k.body_truncated).and_then(|k| k.body.clone());
                    check_sender_id(&key, &entry.policy)?;
                    let delivered = if decision == Decision::AlwaysAllowScope {
                        match store.trust_get(&key)? {
                            // Known already, its grant for this scope ended (a pin for a
                            // while): the grant is given again.
                            Some(mut t) => {
                                grant(&mut t.policy, &scope, end, false);
                                if !t.policy.allows_scope(&scope) {
                                    t.policy.allowed_scopes.push(scope.clone());
                                }
                                if t.policy.mail_address.is_none() {
                                    t.policy.mail_address = mail_from;
                                }
                                store.trust_update(&key, None, &t.policy)?;
                                store.pending_remove(&key)?;
                            }
                            None => store.trust_add(&entry)?,
                        }
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
                        (_, Decision::AlwaysAllowScope) if source == Source::AsopAgent => {
                            "Registered: this agent's steps are now decided by your rules, or asked about.".to_string()
                        }
                        (_, Decision::AlwaysAllowScope) if source == Source::IntentSite => {
                            format!(
                                "Pinned {}: this IntentSite's answers are checked against its key, and answers signed by any other key are refused.",
                                Lasting::words(end)
                            )
                        }
                        (_, Decision::AlwaysAllowScope) if key.starts_with("did:") => {
                            format!(
                                "Trusted for \"{scope}\" {}. Issue it a token (UAMP tab) and send it the token: its messages arrive once it uses it.",
                                Lasting::words(end)
                            )
                        }
                        (_, Decision::AlwaysAllowScope) if end.is_some() => {
                            format!(
                                "Allowed for \"{scope}\" {}. Its messages in that scope arrive until then; after, each asks you again.",
                                Lasting::words(end)
                            )
                        }
                        (_, Decision::AlwaysAllowScope) => format!("Trusted for \"{scope}\". Its messages in that scope now arrive."),
                        _ => "Allowed once. The waiting message was delivered.".into(),
                    };
                    DecisionOutcome { message, delivered: delivered.map(|o| o.receipt) }
                }
            }
        }
        ConsentTarget::HeldAsk { stream_id } => {
            let Some(s) = store.uamp_stream(stream_id)?.filter(|s| s.state == "NEW" && s.detail.as_deref() == Some(gatehouse_store::uamp::HELD_FOR_CONSENT))
            else {
                return Err(ConsentError::Gone);
            };
            let Some(uamp) = inbox.door::<crate::doors::uamp::UampDoor>() else {
                return Err(ConsentError::Invalid("UAMP is not running (the inbox is paused); resume it, then decide".into()));
            };
            match decision {
                Decision::AllowOnce | Decision::AlwaysAllowScope if store.trust_get(&s.peer)?.is_some_and(|t| t.policy.key_change_unverified) => {
                    return Err(ConsentError::Invalid(UNVERIFIED.into()));
                }
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    if decision == Decision::AlwaysAllowScope {
                        let scope = store.uamp_message_by_row(s.message_row)?.and_then(|m| m.scope);
                        if let (Some(mut t), Some(scope)) = (store.trust_get(&s.peer)?, scope) {
                            grant(&mut t.policy, &scope, end, true);
                            store.trust_update(&s.peer, None, &t.policy)?;
                        }
                    }
                    if !uamp.release(stream_id, now)? {
                        return Err(ConsentError::Gone);
                    }
                    DecisionOutcome {
                        message: format!("Released: the agent's ask runs and its answer streams back.{}", granted_words(decision, end)),
                        delivered: None,
                    }
                }
                Decision::AskLater => return Err(ConsentError::Invalid("a prompt is put off, not decided".into())),
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
                Decision::AllowOnce | Decision::AlwaysAllowScope if store.trust_get(&row.sender)?.is_some_and(|t| t.policy.key_change_unverified) => {
                    return Err(ConsentError::Invalid(UNVERIFIED.into()));
                }
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    if decision == Decision::AlwaysAllowScope {
                        if let Some(mut t) = store.trust_get(&row.sender)? {
                            grant(&mut t.policy, &row.scope, end, true);
                            store.trust_update(&row.sender, None, &t.policy)?;
                        }
                    }
                    store.set_exec(row.id, ExecStatus::Queued, None, &at)?;
                    if !inbox.execute(row.id) {
                        return Err(ConsentError::Invalid("the inbox is paused; the message will run when it resumes".into()));
                    }
                    DecisionOutcome { message: format!("Released to its executor.{}", granted_words(decision, end)), delivered: None }
                }
                Decision::AskLater => return Err(ConsentError::Invalid("a prompt is put off, not decided".into())),
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
        ConsentTarget::KeyChange { sender } => {
            let name = store.trust_get(sender)?.map(|t| t.name).unwrap_or_else(|| sender.clone());
            match decision {
                Decision::AllowOnce | Decision::AlwaysAllowScope => {
                    return Err(ConsentError::Invalid(format!(
                        "a new key is taken only from {name}'s DID document: check it again (the prompt's \"Check its DID document\"), never from a message"
                    )))
                }
                Decision::AskLater => return Err(ConsentError::Invalid("a prompt is put off, not decided".into())),
                Decision::Deny | Decision::Block => {}
            }
            if store.key_change_take(sender)?.is_none() {
                return Err(ConsentError::Gone);
            }
            let message = if decision == Decision::Block {
                store.block(sender, "blocked from a key change prompt", &at)?;
                format!("Blocked {name}. Nothing from it will reach you.")
            } else {
                format!("Kept {name}'s keys as they are. Messages signed with another key stay refused.")
            };
            DecisionOutcome { message, delivered: None }
        }
    };
    Ok(outcome)
}

/// Why nothing from a new key of a verified contact may be let through yet.
const UNVERIFIED: &str = "this is a new key of a verified contact: verify it first (Trusted senders → the contact → Verify), then decide";

/// What an "allow" for the scope granted beyond the one message, in words.
fn granted_words(decision: Decision, end: Option<DateTime<Utc>>) -> String {
    match (decision, end) {
        (Decision::AlwaysAllowScope, Some(_)) => {
            format!(" Its next messages in this scope run without asking {}; then you are asked again.", Lasting::words(end))
        }
        (Decision::AlwaysAllowScope, None) => " Its next messages in this scope run without asking.".into(),
        _ => String::new(),
    }
}

/// A short label for a sender the user has not named yet.
fn default_name(key: &str) -> String {
    // A did:web is a name its owner chose (did:web:evil-mybank.com): shown whole, since
    // any part of it could be chosen to look like another. Other ids begin with key
    // material; cut by characters, never bytes (an asop: id is the agent's own text).
    if key.starts_with("did:web:") {
        format!("Agent {key}")
    } else if key.starts_with("did:") {
        let tail: String = key.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        format!("Agent …{tail}")
    } else {
        format!("Sender {}", key.chars().take(8).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_default_name_never_cuts_a_character_and_shows_a_did_web_whole() {
        assert_eq!(super::default_name("asop:ééééééééé"), "Sender asop:ééé");
        assert_eq!(super::default_name("did:web:evil-mybank.com"), "Agent did:web:evil-mybank.com");
        assert_eq!(super::default_name(&"ab".repeat(32)), "Sender abababab");
    }
}
