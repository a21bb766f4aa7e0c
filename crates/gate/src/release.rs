//! Letting in what waited at the gate: a knock the user allowed is handed back through the
//! door it knocked at, whose [`Reread`] reads its kept bytes again (the door verifies them
//! anew: the database keeps them, it does not vouch for them) and hands the arrival to
//! [`Gate::accept`] like any other, with the user's one-time consent where "allow once"
//! stands for a trust entry. The composition knows which door has one (one `match` over
//! its doors); a door that keeps nothing to deliver has none: its senders send again.

use chrono::{DateTime, Utc};
use gatehouse_code::Outcome;
use gatehouse_store::TrustEntry;
use serde::{Deserialize, Serialize};

use crate::state::Gate;

/// What became of a kept arrival handed back to the gate, in no door's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Delivered {
    /// Its receipt, as the door kept it.
    pub receipt_id: String,
    pub envelope_id: Option<String>,
    pub outcome: Outcome,
    /// Why it was not let in, in its door's words.
    pub message: Option<String>,
}

impl Delivered {
    /// Whether it got through (it may still wait for the user, held).
    pub fn let_in(&self) -> bool {
        matches!(self.outcome, Outcome::Accepted | Outcome::Held)
    }
}

/// A door's way to read what it kept of an arrival again and hand it to the gate
/// ([`Gate::accept`]).
pub trait Reread: Send + Sync {
    fn deliver(&self, gate: &Gate, raw: &[u8], consent: Option<&TrustEntry>, now: DateTime<Utc>) -> Delivered;
}
