//! Trusted UAMP agents' asks held for consent (their streams open and waiting): released
//! into the stream, or refused with a cancel, by the UAMP door.

use crate::doors::gate::consent::{risk_flags, ConsentError};
use chrono::{DateTime, Utc};
use gatehouse_store::Store;

use super::{ended, Decided, Holds, Later};
use super::{grant, granted_words, ConsentItem, ConsentTarget, Decision, DecisionOutcome, UNVERIFIED};

pub(super) struct HeldAsks;

impl Holds for HeldAsks {
    fn describe(&self, store: &Store, now: DateTime<Utc>, later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        for s in store.uamp_held_streams()?.into_iter().rev() {
            let Some(m) = store.uamp_message_by_row(s.message_row)? else { continue };
            let trust = store.trust_get(&s.peer)?;
            // A stream id may be the agent's own choice: not a key to keep a scan under.
            let risk = risk_flags(store, &s.stream_id, &m.content, &crate::doors::allowed_hosts(trust.as_ref()), None)?;
            let scope = m.scope.unwrap_or(m.intent);
            items.push(ConsentItem::HeldAsk {
                grant_ended: ended(trust.as_ref(), &scope, now),
                key_change: trust.as_ref().is_some_and(|t| t.policy.key_change_unverified),
                later: later.of(ConsentTarget::HeldAsk { stream_id: s.stream_id.clone() }),
                sender_name: trust.map(|t| t.name),
                risk,
                stream_id: s.stream_id,
                sender: s.peer,
                scope,
                prompt: m.content,
                received_at: m.received_at,
            });
        }
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.held_asks
    }

    fn holds(&self, target: &ConsentTarget) -> bool {
        matches!(target, ConsentTarget::HeldAsk { .. })
    }

    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        let ConsentTarget::HeldAsk { stream_id } = target else { return Err(ConsentError::Gone) };
        let Decided { gate, decision, end, now, .. } = *d;
        let (store, at) = (gate.store(), d.at());
        let Some(s) = store.uamp_stream(stream_id)?.filter(|s| s.state == "NEW" && s.detail.as_deref() == Some(gatehouse_store::uamp::HELD_FOR_CONSENT)) else {
            return Err(ConsentError::Gone);
        };
        let Some(uamp) = gate.door::<crate::doors::uamp::UampDoor>() else {
            return Err(ConsentError::Invalid("UAMP is not running (the inbox is paused); resume it, then decide".into()));
        };
        Ok(match decision {
            Decision::AllowOnce | Decision::AlwaysAllowScope if store.trust_get(&s.peer)?.is_some_and(|t| t.policy.key_change_unverified) => {
                return Err(ConsentError::Invalid(UNVERIFIED.into()));
            }
            Decision::AllowOnce | Decision::AlwaysAllowScope => {
                if decision == Decision::AlwaysAllowScope {
                    let scope = store.uamp_message_by_row(s.message_row)?.and_then(|m| m.scope);
                    if let (Some(mut t), Some(scope)) = (store.trust_get(&s.peer)?, scope) {
                        grant(&mut t.policy, &scope, end, true);
                        store.trust_update(&s.peer, None, &t.policy, None)?;
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
        })
    }
}
