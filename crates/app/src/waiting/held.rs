//! Trusted senders' envelopes held for consent: released to the runner, or denied (kept,
//! nothing runs).

use crate::doors::gate::consent::{risk_flags, ConsentError};
use chrono::{DateTime, Utc};
use gatehouse_store::{ExecStatus, Store};

use super::{ended, Decided, Holds, Later, COVERED_SHOWN};
use super::{grant, granted_words, ConsentItem, ConsentTarget, Decision, DecisionOutcome, UNVERIFIED};

pub(super) struct HeldEnvelopes;

impl Holds for HeldEnvelopes {
    fn describe(&self, store: &Store, now: DateTime<Utc>, later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        for row in store.envelopes_with_status(ExecStatus::Held)?.into_iter().rev() {
            let trust = store.trust_get(&row.sender)?;
            let risk = risk_flags(store, &row.envelope_id, &row.prompt, &crate::doors::allowed_hosts(trust.as_ref()), Some(&row.receipt_id))?;
            let (covered, covered_total) = store.covered_by_grant(&row.sender, &row.scope, Some(&row.envelope_id), COVERED_SHOWN)?;
            items.push(ConsentItem::Held {
                risk,
                covered,
                covered_total,
                grant_ended: ended(trust.as_ref(), &row.scope, now),
                key_change: trust.as_ref().is_some_and(|t| t.policy.key_change_unverified),
                later: later.of(ConsentTarget::Held { row_id: row.id }),
                sender_name: trust.map(|t| t.name),
                row_id: row.id,
                envelope_id: row.envelope_id,
                sender: row.sender,
                scope: row.scope,
                prompt: row.prompt,
                payload_type: row.payload_type,
                on_behalf_of: row.on_behalf_of,
                received_at: row.received_at,
                // Read by the door it came by (EPP's v1.1 fields only from what came by EPP).
                extras: crate::doors::told(&row.door, &row.raw).declared,
            });
        }
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.held
    }

    fn holds(&self, target: &ConsentTarget) -> bool {
        matches!(target, ConsentTarget::Held { .. })
    }

    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        let ConsentTarget::Held { row_id } = target else { return Err(ConsentError::Gone) };
        let Decided { gate, decision, end, .. } = *d;
        let (store, at) = (gate.store(), d.at());
        let Some(row) = store.envelope(*row_id)?.filter(|r| r.exec_status == ExecStatus::Held) else {
            return Err(ConsentError::Gone);
        };
        Ok(match decision {
            Decision::AllowOnce | Decision::AlwaysAllowScope if store.trust_get(&row.sender)?.is_some_and(|t| t.policy.key_change_unverified) => {
                return Err(ConsentError::Invalid(UNVERIFIED.into()));
            }
            Decision::AllowOnce | Decision::AlwaysAllowScope => {
                if decision == Decision::AlwaysAllowScope {
                    if let Some(mut t) = store.trust_get(&row.sender)? {
                        grant(&mut t.policy, &row.scope, end, true);
                        store.trust_update(&row.sender, None, &t.policy, None)?;
                    }
                }
                store.set_exec(row.id, ExecStatus::Queued, None, &at)?;
                // On a team's gate whichever node looks next claims and runs it.
                if !gate.execute(row.id) && !store.is_shared() {
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
        })
    }
}
