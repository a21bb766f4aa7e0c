//! Letting in what waited at the gate: a knock the user allowed is handed back to the
//! gate, which asks the door it knocked at to read its kept bytes again (the door verifies
//! them anew: the database keeps them, it does not vouch for them) and accepts the arrival
//! like any other, with the user's one-time consent where "allow once" stands for a trust
//! entry. A door that keeps nothing to deliver registers no reader: its senders send again.

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
/// ([`Gate::accept`]), registered by the composition under the door's name.
pub trait Reread: Send + Sync {
    fn deliver(&self, gate: &Gate, raw: &[u8], consent: Option<&TrustEntry>, now: DateTime<Utc>) -> Delivered;
}

impl Gate {
    /// Hands a knock's kept bytes back to the gate through the door it knocked at; `None`
    /// when that door registered no reader (it keeps nothing to deliver). `consent`: the
    /// user's "allow once", standing for a trust entry for this one arrival.
    pub fn release(&self, door: &str, raw: &[u8], consent: Option<&TrustEntry>, now: DateTime<Utc>) -> Option<Delivered> {
        let reader = self.reader(door)?;
        Some(reader.deliver(self, raw, consent, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A door that keeps what it refused: what it was handed back, and with whose consent.
    struct Pigeon(Mutex<Vec<(Vec<u8>, Option<String>)>>);

    impl Reread for Pigeon {
        fn deliver(&self, _gate: &Gate, raw: &[u8], consent: Option<&TrustEntry>, _now: DateTime<Utc>) -> Delivered {
            self.0.lock().unwrap().push((raw.to_vec(), consent.map(|c| c.public_key.clone())));
            Delivered { receipt_id: "r-2".into(), envelope_id: Some("e-1".into()), outcome: Outcome::Accepted, message: None }
        }
    }

    #[test]
    fn a_knock_goes_back_through_the_door_it_knocked_at_and_only_a_door_that_reads_again() {
        let store = Arc::new(gatehouse_store::Store::open_in_memory().unwrap());
        let pigeon = Arc::new(Pigeon(Mutex::new(Vec::new())));
        let gate = Gate::new(store, &"ab".repeat(32)).with_reader("pigeon", pigeon.clone());
        let entry = TrustEntry { public_key: "cd".repeat(32), name: "once".into(), added_at: "2026-11-28T00:00:00Z".into(), policy: Default::default() };
        let now = chrono::Utc::now();
        let got = gate.release("pigeon", b"kept bytes", Some(&entry), now).expect("its door reads it again");
        assert!(got.let_in());
        assert_eq!(*pigeon.0.lock().unwrap(), vec![(b"kept bytes".to_vec(), Some("cd".repeat(32)))]);
        // A door that registered no reader keeps nothing to deliver: its sender sends again.
        assert_eq!(gate.release("owl", b"kept bytes", None, now), None);
        assert_eq!(pigeon.0.lock().unwrap().len(), 1, "no other door's reader is asked");
    }
}
