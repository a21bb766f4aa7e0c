//! The user's own agents' steps, held by the guardian: listed first (each holds an agent's
//! request open); decided through the guardian's own answers: in the window (allow, deny,
//! redact, a rule), and from any device as allow (once, or always: a rule) or deny.

use chrono::{DateTime, Utc};
use gatehouse_store::Store;

use super::{ConsentError, ConsentItem, ConsentTarget, Decision, DecisionOutcome};
use super::{Decided, Holds, Later};
use crate::doors::guardian::{Guardian, GuardianError, UserAnswer};
use gatehouse_asop::rules::Action;

pub(super) struct Steps;

impl Holds for Steps {
    fn describe(&self, store: &Store, _now: DateTime<Utc>, _later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        // A step is 'pending' only while its guardian holds the request: steps a stopped
        // guardian held are marked abandoned when it starts again.
        items.extend(store.asop_pending()?.into_iter().map(|step| {
            let risk = super::shown::tool_described(&step.request).map(|said| gatehouse_risk::scan(said, &[])).unwrap_or_default();
            ConsentItem::GuardianStep { step, risk }
        }));
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.steps
    }

    fn holds(&self, target: &ConsentTarget) -> bool {
        matches!(target, ConsentTarget::Step { .. })
    }

    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        let ConsentTarget::Step { row } = target else { return Err(ConsentError::Gone) };
        let (action, always, said) = match d.decision {
            Decision::AllowOnce => (Action::Allow, false, "Allowed"),
            Decision::AlwaysAllowScope => (Action::Allow, true, "Allowed, and made a rule"),
            Decision::Deny => (Action::Deny, false, "Denied"),
            Decision::Block | Decision::AskLater => {
                return Err(ConsentError::Invalid("a step is allowed or denied; its agent is blocked under Your agents".into()))
            }
        };
        if always && d.end.is_some() {
            return Err(ConsentError::Invalid("a rule made here lasts until you remove it; make one for a while under Your agents".into()));
        }
        // Only the guardian holding the agent's request can answer it.
        let guardian = d.gate.door::<Guardian>().ok_or(ConsentError::Gone)?;
        guardian.answer(*row, UserAnswer { decision: action, always, redact: None, note: None, lasting: None }).map_err(|e| match e {
            GuardianError::Gone => ConsentError::Gone,
            GuardianError::Invalid(m) => ConsentError::Invalid(m),
            GuardianError::Store(e) => ConsentError::Store(e),
        })?;
        Ok(DecisionOutcome { message: format!("{said}. The agent has its answer."), delivered: None })
    }
}
