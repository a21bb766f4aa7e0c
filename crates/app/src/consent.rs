//! Consent: a decision on what waits for the user, carried out by the holder of what it
//! decides (`waiting::Holds::settle`): an unknown EPP sender's knock is delivered through
//! the EPP pipeline, a held envelope goes to the runner, a held UAMP ask is released into
//! its stream. "Ask me later" and the audit are here, the same for every kind.

pub use crate::doors::gate::consent::ConsentError;
use crate::doors::gate::consent::{now_string, LATER};
pub use crate::doors::gate::consent::{Decision, Lasting};
use crate::doors::Gate;
pub use crate::target::{ConsentTarget, Source};
pub use crate::waiting::DecisionOutcome;
pub use crate::waiting::{pending_at, ConsentItem};
use crate::waiting::{Decided, HOLDERS};
use chrono::{DateTime, Utc};

use crate::Result;

/// The user's decision, as both faces take it: a did:web agent's keys are fetched now,
/// when the user lets it in, never on arrival; then [`decide_with_keys`], off the async
/// workers.
pub async fn decide_fetching(inbox: std::sync::Arc<Gate>, target: ConsentTarget, decision: Decision, lasting: Lasting) -> Result<DecisionOutcome> {
    decide_fetching_as(inbox, target, decision, lasting, By::Owner).await
}

/// [`decide_fetching`] from a prompt that was also given a name: a stranger let in (for
/// good or a while) is kept under it, it and its person. The name is checked before
/// anything is decided; a name with any other decision is refused (nothing would keep it).
pub async fn decide_naming(
    inbox: std::sync::Arc<Gate>,
    target: ConsentTarget,
    decision: Decision,
    lasting: Lasting,
    name: Option<String>,
) -> Result<DecisionOutcome> {
    let Some(name) = name.filter(|n| !n.trim().is_empty()) else {
        return decide_fetching(inbox, target, decision, lasting).await;
    };
    let name = crate::names::check(&name)?;
    let key = match (&target, decision) {
        (ConsentTarget::UnknownSender { public_key, .. }, Decision::AlwaysAllowScope) => public_key.clone(),
        _ => return Err(ConsentError::Invalid("a name is kept for a sender you let in, for good or for a while".into()).into()),
    };
    let mut out = decide_fetching(inbox.clone(), target, decision, lasting).await?;
    let named = name.clone();
    let kept = crate::blocking(move || Ok(crate::names::name_sender(inbox.store(), &key, &named, crate::doors::gate::clock::now())?)).await;
    // The decision stands either way: a name that could not be kept is said, not an error.
    out.message = match kept {
        Ok(()) => format!("{} It goes by “{name}” from now on.", out.message),
        Err(e) => format!("{} The name “{name}” could not be kept ({e}): give it in People & agents.", out.message),
    };
    Ok(out)
}

/// Who decided, as the audit log names them.
#[derive(Debug, Clone)]
pub enum By {
    /// The gate's own window or CLI.
    Owner,
    /// An approver device, deciding on the item it was shown (its digest); under a
    /// quorum, with the devices whose votes agreed (`agreed`, its own among them).
    Approver { id: String, name: String, digest: String, agreed: Vec<String> },
}

impl By {
    fn audit(&self, target: &ConsentTarget) -> serde_json::Value {
        let knock = match target {
            ConsentTarget::UnknownSender { knock, .. } => knock.clone(),
            _ => None,
        };
        match self {
            By::Owner => serde_json::json!({"device": "owner"}),
            By::Approver { id, name, digest, agreed } => {
                serde_json::json!({"approver": id, "name": name, "seen": {"item": target.key(), "knock": knock, "digest": digest}, "quorum": agreed})
            }
        }
    }
}

/// [`decide_fetching`] by `by`.
pub async fn decide_fetching_as(inbox: std::sync::Arc<Gate>, target: ConsentTarget, decision: Decision, lasting: Lasting, by: By) -> Result<DecisionOutcome> {
    let keys = match (&target, decision) {
        (ConsentTarget::UnknownSender { public_key, .. }, Decision::AlwaysAllowScope) => crate::trust::did_web_keys(public_key).await?,
        _ => Vec::new(),
    };
    crate::blocking(move || Ok(decide_by(&inbox, &target, decision, &lasting, crate::doors::gate::clock::now(), &keys, &by)?)).await
}

/// Applies the user's decision, an "allow" for good. Blocking (SQLite).
pub fn decide(inbox: &Gate, target: &ConsentTarget, decision: Decision, now: DateTime<Utc>) -> std::result::Result<DecisionOutcome, ConsentError> {
    decide_with_keys(inbox, target, decision, &Lasting::Always, now, &[])
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
    decide_by(inbox, target, decision, lasting, now, uamp_keys, &By::Owner)
}

/// [`decide_with_keys`], by `by`.
pub fn decide_by(
    inbox: &Gate,
    target: &ConsentTarget,
    decision: Decision,
    lasting: &Lasting,
    now: DateTime<Utc>,
    uamp_keys: &[gatehouse_store::UampKey],
    by: &By,
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
        _ => decide_now(&Decided { gate: inbox, decision, end, now, uamp_keys }, target)?,
    };
    if decision != Decision::AskLater {
        store.later_forget(&target.key())?;
    }
    store.audit(
        &format!("consent.{}", decision.as_str()),
        Some(&target.key()),
        &serde_json::json!({"target": target, "until": end.map(now_string), "result": outcome.message, "delivered": outcome.delivered, "by": by.audit(target)}),
        &at,
    )?;
    store.waiting_changed();
    Ok(outcome)
}

/// Allow, deny or block, carried out by the holder of what is decided.
fn decide_now(d: &Decided<'_>, target: &ConsentTarget) -> std::result::Result<DecisionOutcome, ConsentError> {
    match HOLDERS.iter().find(|h| h.holds(target)) {
        Some(h) => h.settle(d, target),
        None => Err(ConsentError::Gone),
    }
}

/// "What waits changed" (a decision made anywhere, an arrival), a burst at a time: the
/// window draws Waiting for you again and withdraws what it announced and is decided.
pub fn follow(ctx: &crate::Context) -> crate::waiting::Bursts {
    crate::waiting::follow(&ctx.store)
}

/// Everything waiting for the user, one list ([`crate::waiting`]).
pub fn pending(ctx: &crate::Context) -> std::result::Result<Vec<ConsentItem>, ConsentError> {
    crate::waiting::pending(&ctx.store)
}

/// How many items wait for the user.
pub fn waiting_count(ctx: &crate::Context) -> std::result::Result<usize, ConsentError> {
    crate::waiting::waiting_count(&ctx.store)
}
