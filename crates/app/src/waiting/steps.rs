//! The user's own agents' steps, held by the guardian: listed first (each holds an agent's
//! request open); decided through the guardian's own answers (allow, deny, redact, a
//! rule), never through a consent target.

use chrono::{DateTime, Utc};
use gatehouse_store::Store;

use super::{ConsentError, ConsentItem, ConsentTarget, DecisionOutcome};
use super::{Decided, Holds, Later};

pub(super) struct Steps;

impl Holds for Steps {
    fn describe(&self, store: &Store, _now: DateTime<Utc>, _later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        // A step is 'pending' only while its guardian holds the request: steps a stopped
        // guardian held are marked abandoned when it starts again.
        items.extend(store.asop_pending()?.into_iter().map(|step| ConsentItem::GuardianStep { step }));
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.steps
    }

    fn holds(&self, _target: &ConsentTarget) -> bool {
        false
    }

    fn settle(&self, _d: &Decided<'_>, _target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        Err(ConsentError::Invalid("a guardian step is answered by the guardian's own choices".into()))
    }
}
