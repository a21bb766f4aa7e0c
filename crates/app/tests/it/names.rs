//! A sender goes by one name: the one the user gave it on its prompt, by Edit, or to its
//! person, the same in the inbox's rows, the contacts (what Ctrl+K searches) and Activity.

use crate::common::*;
use chrono::Utc;
use gatehouse_app::consent::{self, ConsentError, Decision, Lasting};
use gatehouse_app::{contacts, trust};

fn names_in_inbox(inbox: &TestInbox, key: &str) -> Vec<Option<String>> {
    let rows = inbox.store.inbox(&gatehouse_store::InboxFilter::default()).unwrap();
    rows.into_iter().filter(|r| r.sender.as_deref() == Some(key)).map(|r| r.sender_name).collect()
}

#[tokio::test]
async fn a_stranger_named_on_its_prompt_goes_by_that_name_everywhere() {
    let s = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (gate, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    assert_eq!(inbox.post_json(&inbox.signed(&s, "support", "Where is my order?")).await.0, 401);

    // A name with a decision that keeps nothing is refused, and nothing is decided.
    let e = consent::decide_naming(gate.clone(), shown(&gate, &pubhex(&s)), Decision::AllowOnce, Lasting::Always, Some("Alice".into())).await.unwrap_err();
    assert!(e.to_string().contains("a name is kept for a sender you let in"), "{e}");
    let e = consent::decide_naming(gate.clone(), shown(&gate, &pubhex(&s)), Decision::AlwaysAllowScope, Lasting::Always, Some("Al\u{7}ice".into()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("without control characters"), "{e}");
    assert!(inbox.store.trust_get(&pubhex(&s)).unwrap().is_none(), "nothing was decided");

    let out =
        consent::decide_naming(gate.clone(), shown(&gate, &pubhex(&s)), Decision::AlwaysAllowScope, Lasting::Hour, Some("  Alice ".into())).await.unwrap();
    assert!(out.message.ends_with("It goes by “Alice” from now on."), "{}", out.message);
    assert_eq!(inbox.store.trust_get(&pubhex(&s)).unwrap().unwrap().name, "Alice");
    let people = contacts::list(&inbox.ctx()).unwrap();
    assert_eq!(people.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["Alice"], "the person Ctrl+K finds");
    assert!(names_in_inbox(&inbox, &pubhex(&s)).iter().all(|n| n.as_deref() == Some("Alice")));
    let named = inbox.store.audit_list(20).unwrap().into_iter().find(|a| a.action == "trust.name").expect("the naming is in Activity");
    assert_eq!(named.detail["name"], "Alice");

    // Named again by Edit: the person follows; named again as a person: the entry follows.
    let entry = inbox.store.trust_get(&pubhex(&s)).unwrap().unwrap();
    trust::update(&inbox.ctx(), &pubhex(&s), "Alice Smith", &entry.policy, None, Utc::now()).unwrap();
    assert_eq!(contacts::list(&inbox.ctx()).unwrap()[0].name, "Alice Smith");
    let id = contacts::list(&inbox.ctx()).unwrap()[0].id;
    contacts::rename(&inbox.ctx(), id, "Dr. Alice Smith", Utc::now()).unwrap();
    assert_eq!(inbox.store.trust_get(&pubhex(&s)).unwrap().unwrap().name, "Dr. Alice Smith");
    assert!(names_in_inbox(&inbox, &pubhex(&s)).iter().all(|n| n.as_deref() == Some("Dr. Alice Smith")));
    let e = contacts::rename(&inbox.ctx(), id, &"x".repeat(81), Utc::now()).unwrap_err();
    assert!(e.to_string().contains("1 to 80 characters"), "{e}");
    inbox.stop().await;
}

#[tokio::test]
async fn a_stranger_let_in_without_a_name_is_shown_by_the_one_unnamed_form() {
    let s = key(8);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (gate, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.post_json(&inbox.signed(&s, "support", "hello")).await;
    consent::decide_naming(gate.clone(), shown(&gate, &pubhex(&s)), Decision::AlwaysAllowScope, Lasting::Always, Some("   ".into())).await.unwrap();
    let unnamed = gatehouse_app::names::shown(None, &pubhex(&s));
    assert_eq!(unnamed, format!("Sender {}", &pubhex(&s)[..8]));
    assert_eq!(inbox.store.trust_get(&pubhex(&s)).unwrap().unwrap().name, unnamed);
    assert_eq!(contacts::list(&inbox.ctx()).unwrap()[0].name, unnamed);
    // A name for a sender that is not let in has nothing to name.
    let e = gatehouse_app::names::name_sender(&inbox.store, &pubhex(&key(9)), "Bob", Utc::now()).unwrap_err();
    assert!(matches!(e, ConsentError::Gone), "{e}");
    inbox.stop().await;
}
