//! A door written outside the gate, as a new protocol's crate would be: it implements
//! `Door`, hands `Gate::accept` an `Arrival`, and gets the gate's whole acceptance (the
//! knock, the decision, the record, the replay refused) without a line of the gate
//! changed. If this stops compiling, adding a door would mean touching the gate.

use std::sync::Arc;

use gatehouse_code::Outcome;
use gatehouse_gate::{Arrival, Checks, Door, Gate, Kept, Why, Words};
use gatehouse_store::{Policy, Store, TrustEntry};

/// The whole door: no checks of its own, its words a line of text.
struct Pigeon;

impl Checks for Pigeon {
    type Refusal = std::convert::Infallible;
}

impl Door for Pigeon {
    type Answer = String;

    fn accepted(&self, _a: &Arrival<'_>, executor: &str, held: bool) -> Words<String> {
        let said = format!("delivered to {executor}{}", if held { ", held" } else { "" });
        Words { code: None, message: None, receipt: serde_json::json!({"said": said}), answer: said, keep: true }
    }

    fn refused(&self, _a: &Arrival<'_>, why: &Why<Self::Refusal>) -> Words<String> {
        let what = why.outcome(|n| match *n {}).as_str().to_string();
        Words { code: Some(format!("PIGEON_{what}")), message: Some(what.clone()), receipt: serde_json::json!({"refused": what}), answer: what, keep: true }
    }

    fn outcome(&self, r: &Self::Refusal) -> Outcome {
        match *r {}
    }
}

fn arrival<'a>(sender: &str, nonce: &[u8], receipt_id: &'a str, received_at: &'a str) -> Arrival<'a> {
    Arrival {
        door: "pigeon",
        transport: "pigeon",
        sender: sender.to_string(),
        scope: "support".into(),
        asks: None,
        size: 11,
        on_behalf_of: None,
        at: chrono::Utc::now(),
        received_at,
        receipt_id,
        consent: None,
        kept: Kept {
            id: format!("msg-{receipt_id}"),
            recipient: "me".into(),
            payload_type: None,
            conversation_id: None,
            in_reply_to: None,
            prompt: "coo, hello".into(),
            timestamp: received_at.to_string(),
            expires_at: "2099-01-01T00:00:00Z".into(),
            expires_at_ms: 4_070_908_800_000,
            nonce: nonce.to_vec(),
            signed_form: "transport",
            raw: b"coo, hello",
            raw_sha256: String::new(),
        },
        keeps_refused: true,
    }
}

#[test]
fn a_door_the_gate_never_heard_of_gets_the_whole_acceptance() {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let gate = Gate::new(store.clone(), &"ab".repeat(32));
    let sender = "cd".repeat(32);
    let at = gatehouse_gate::clock::utc_string(chrono::Utc::now());

    // Unknown: it knocks, and the knock is recorded as this door's.
    let knocked = gate.accept(&Pigeon, &arrival(&sender, b"nonce-1", "r-1", &at));
    assert!(matches!(knocked.why, Some(Why::Knock)), "{:?}", knocked.why);
    assert_eq!(knocked.answer, "knock");
    let waiting = store.pending_list().unwrap();
    assert_eq!((waiting.len(), waiting[0].door.as_str()), (1, "pigeon"), "{waiting:?}");

    // Trusted for its scope: let in, kept as the gate's record, with this door's name.
    let policy = Policy { allowed_scopes: vec!["support".into()], ..Policy::default() };
    store
        .trust_add(&TrustEntry {
            door: "pigeon".into(),
            facts: Default::default(),
            public_key: sender.clone(),
            name: "Pigeon".into(),
            added_at: at.clone(),
            policy,
        })
        .unwrap();
    let let_in = gate.accept(&Pigeon, &arrival(&sender, b"nonce-2", "r-2", &at));
    let row = let_in.row.expect("let in");
    assert_eq!(let_in.answer, "delivered to noop");
    let kept = store.envelope(row).unwrap().unwrap();
    assert_eq!((kept.door.as_str(), kept.prompt.as_str(), kept.scope.as_str()), ("pigeon", "coo, hello", "support"));

    // The same nonce again is a replay, whatever door it came by.
    let again = gate.accept(&Pigeon, &arrival(&sender, b"nonce-2", "r-3", &at));
    assert!(matches!(again.why, Some(Why::Replay)), "{:?}", again.why);
    assert_eq!(store.receipt("r-3").unwrap().unwrap().code.as_deref(), Some("PIGEON_replay"));
}
