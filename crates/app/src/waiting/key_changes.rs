//! Trusted senders whose signature named a key not kept for them: kept refused (or
//! blocked); a new key is taken only from the sender's DID document (`did_change`).

use crate::doors::gate::consent::ConsentError;
use chrono::{DateTime, Utc};
use gatehouse_store::Store;

use super::{ConsentItem, ConsentTarget, Decision, DecisionOutcome};
use super::{Decided, Holds, Later};

pub(super) struct KeyChanges;

impl Holds for KeyChanges {
    fn describe(&self, store: &Store, _now: DateTime<Utc>, later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        for k in store.key_changes()? {
            // As when the new keys are taken: a change to a verified contact blocks.
            let verified = store.holds_new_keys(&k.sender)?;
            items.push(ConsentItem::KeyChange {
                later: later.of(ConsentTarget::KeyChange { sender: k.sender.clone() }),
                sender_name: store.trust_get(&k.sender)?.map(|t| t.name),
                verified,
                sender: k.sender,
                key_id: k.key_id,
                reason: k.reason,
                first_seen: k.first_seen,
                last_seen: k.last_seen,
                count: k.count,
            });
        }
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.key_changes
    }

    fn holds(&self, target: &ConsentTarget) -> bool {
        matches!(target, ConsentTarget::KeyChange { .. })
    }

    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        let ConsentTarget::KeyChange { sender } = target else { return Err(ConsentError::Gone) };
        let Decided { gate, decision, .. } = *d;
        let (store, at) = (gate.store(), d.at());
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
        Ok(DecisionOutcome { message, delivered: None })
    }
}
