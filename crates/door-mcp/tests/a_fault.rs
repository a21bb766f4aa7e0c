//! A fault of Gatehouse's own while the user's rules are applied to a call refuses the
//! call and is recorded with it: the judge is told why, as for any refused call, so the
//! timeline shows what happened instead of a call that went nowhere.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use gatehouse_door_mcp::at_gate::{Admission, AskedOfUser, ByRule, Judge, Judged, McpDoor, SCOPE};
use gatehouse_door_mcp::signed::{self, Answer, Answers, Asked, Decided};
use gatehouse_gate::Gate;
use gatehouse_mcp::tools::Pin;
use gatehouse_store::{Policy, Store, TrustEntry};

/// Panics applying its rules; keeps what it was asked to record otherwise.
#[derive(Default)]
struct Faulty {
    recorded: Mutex<Vec<Admission>>,
}

impl Judge for Faulty {
    fn judge(&self, call: Judged) -> BoxFuture<'static, Decided> {
        let answer = match &call.admission {
            Admission::Refused { message, .. } => Answer::Deny { message: message.clone() },
            other => Answer::Deny { message: format!("asked of the user: {other:?}") },
        };
        self.recorded.lock().unwrap().push(call.admission);
        Box::pin(std::future::ready(Decided { answer, step: Some("step-1".into()) }))
    }
    fn by_rule(&self, _call: &Judged) -> ByRule {
        panic!("a rule's condition could not be read")
    }
    fn server_asks(&self, _request: AskedOfUser) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(Answer::Deny { message: "no".into() }))
    }
    fn answered(&self, _sender: String, _told: Answers) -> BoxFuture<'static, usize> {
        Box::pin(std::future::ready(0))
    }
}

#[tokio::test]
async fn a_fault_applying_the_rules_refuses_the_call_and_records_why() {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let gate = Arc::new(Gate::new(store.clone(), &"ab".repeat(32)));
    let public = "cd".repeat(32);
    let sender = signed::sender("files", &public);
    let at = gatehouse_gate::clock::utc_string(chrono::Utc::now());
    let policy = Policy { allowed_scopes: vec![SCOPE.into()], ..Policy::default() };
    store
        .trust_add(&TrustEntry {
            door: "mcp".into(),
            facts: Default::default(),
            public_key: sender.clone(),
            name: "Files".into(),
            added_at: at.clone(),
            policy,
        })
        .unwrap();
    let pin = Pin { name: "echo".into(), title: None, description: "Says it back".into(), input_schema: "{}".into(), digest: String::new() }.checked();
    store.mcp_offer(&sender, &[(pin.name.clone(), serde_json::to_string(&pin).unwrap(), pin.digest.clone())], &at).unwrap();
    assert_eq!(store.mcp_accept(&sender, &[(pin.name.clone(), pin.digest.clone())], &at).unwrap(), 1);

    let judge = Arc::new(Faulty::default());
    let door = McpDoor::new(&gate, judge.clone());
    let asked = Asked { server: "files".into(), session: "s-1".into(), tool: "echo".into(), arguments: serde_json::json!({"text": "hi"}), description: None };
    let ruling = door.ask(&public, asked, 64).await;

    let recorded = judge.recorded.lock().unwrap().clone();
    assert_eq!(recorded.len(), 1, "the refused call was handed to the judge to record: {recorded:?}");
    let Admission::Refused { message, blocked: false } = &recorded[0] else { panic!("recorded as {recorded:?}") };
    assert!(message.contains("failed while applying your rules") && message.contains("a rule's condition could not be read"), "{message}");
    assert_eq!(ruling.decided.step.as_deref(), Some("step-1"), "the answer names the step it was recorded as");
    assert!(matches!(&ruling.decided.answer, Answer::Deny { message: m } if m == message), "{:?}", ruling.decided.answer);
}
