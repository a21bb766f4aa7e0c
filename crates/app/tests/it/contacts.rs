//! Contacts: a new key claiming to act for a verified contact is shown as a claim, joins
//! the contact only by the user's word, and is held (never let through) until it is
//! verified too; a code shared for another key verifies nothing.

use crate::common::*;
use chrono::Utc;
use gatehouse_app::consent::{self, ConsentError, ConsentItem, ConsentTarget, Decision};
use gatehouse_app::contacts;

#[tokio::test]
async fn a_new_key_of_a_verified_contact_is_a_claim_then_a_change_held_until_verified() {
    let (lee, lee2, other) = (key(3), key(4), key(5));
    let own = pubhex(&key(2));
    let inbox = TestInbox::start(&own, false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.trust(&pubhex(&lee), "Dr. Lee", policy(&["lab-results"]));
    let list = contacts::list(&inbox.ctx()).unwrap();
    assert_eq!((list.len(), list[0].name.as_str(), list[0].verified), (1, "Dr. Lee", false));
    let id = list[0].id;
    // Verified with what Dr. Lee shared (their QR's text).
    let shared = contacts::share_text(&pubhex(&lee), "http://127.0.0.1:1/epp/v1/submit");
    let v = contacts::verify(&inbox.ctx(), &pubhex(&lee), Some(&shared), Utc::now()).unwrap();
    assert!(v.verified && !v.key_changed);
    assert_eq!(v.keys[0].safety_code, contacts::safety_code(&pubhex(&lee), &own), "the code both sides compute");

    assert_eq!(inbox.post_json(&inbox.signed(&lee, "lab-results", "from the first key")).await.0, 200);

    // A new key says it acts on behalf of Dr. Lee: a claim on the prompt, not a merge.
    let env = gatehouse_epp::Draft { on_behalf_of: Some(pubhex(&lee)), ..inbox.draft("lab-results", "New results, from my new key") }.sign(&lee2, Utc::now());
    assert_eq!(inbox.post_json(&env).await.0, 401);
    let claims = match &consent::pending(&crate::common::ctx(&inbox.store)).unwrap()[..] {
        [ConsentItem::UnknownSender { claims, .. }] => claims.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(claims.len(), 1);
    assert!(claims[0].contact_id == id && claims[0].verified && claims[0].how.contains("acts on behalf of Dr. Lee"), "{claims:?}");
    assert_eq!(inbox.store.contact_of(&pubhex(&lee2)).unwrap(), None, "never merged on its own");

    // The user says it is Dr. Lee's new key: it joins the contact, and what it sent is held.
    let said = contacts::adopt(&i, id, &pubhex(&lee2), Utc::now()).unwrap();
    assert!(said.contains("held until you verify it"), "{said}");
    let c = inbox.store.contact_of(&pubhex(&lee2)).unwrap().unwrap();
    assert_eq!((c.id, c.keys.len()), (id, 2));
    let row_id = match &consent::pending(&crate::common::ctx(&inbox.store)).unwrap()[..] {
        [ConsentItem::Held { row_id, key_change: true, prompt, .. }] if prompt == "New results, from my new key" => *row_id,
        other => panic!("{other:?}"),
    };
    let e = gatehouse_app::consent::decide(&i, &ConsentTarget::Held { row_id }, Decision::AllowOnce, Utc::now()).unwrap_err();
    assert!(matches!(&e, ConsentError::Invalid(m) if m.contains("verify it first")), "{e}");
    let (status, _, r) = inbox.post_json(&inbox.signed(&lee2, "lab-results", "and another")).await;
    assert_eq!((status, r["x-held-for-consent"].as_bool()), (200, Some(true)), "{r}");
    assert!(contacts::list(&inbox.ctx()).unwrap()[0].key_changed);

    // A code shared for another key verifies nothing.
    let wrong = contacts::share_text(&pubhex(&other), "http://x/");
    assert!(contacts::verify(&inbox.ctx(), &pubhex(&lee2), Some(&wrong), Utc::now()).unwrap_err().to_string().contains("for another key"));
    assert!(contacts::list(&inbox.ctx()).unwrap()[0].key_changed);

    // Verified (the codes matched): it may now be let through, and is no longer held.
    let v = contacts::verify(&inbox.ctx(), &pubhex(&lee2), None, Utc::now()).unwrap();
    assert!(v.verified && !v.key_changed);
    gatehouse_app::consent::decide(&i, &ConsentTarget::Held { row_id }, Decision::AllowOnce, Utc::now()).unwrap();
    let (_, _, r) = inbox.post_json(&inbox.signed(&lee2, "lab-results", "after verifying")).await;
    assert!(!r["x-held-for-consent"].as_bool().unwrap_or(false), "{r}");
    // One history across the contact's keys.
    let history = inbox.store.inbox(&gatehouse_store::InboxFilter { contact: Some(id), ..Default::default() }).unwrap();
    let senders: std::collections::BTreeSet<_> = history.iter().filter_map(|r| r.sender.clone()).collect();
    assert_eq!(senders, [pubhex(&lee), pubhex(&lee2)].into_iter().collect());
    assert_eq!(history.len(), 4, "the first key's message, the knock (shown as the message it became) and the new key's two later messages");
    assert!(history.iter().any(|r| r.story.knocked_at.is_some() && r.status == "accepted"), "the delivery tells it knocked first");
    assert!(history.windows(2).all(|w| w[0].seq > w[1].seq), "newest first");
    let actions: Vec<String> = inbox.store.audit_list(20).unwrap().into_iter().map(|a| a.action).collect();
    assert!(actions.contains(&"contact.add_key".to_string()) && actions.iter().filter(|a| *a == "contact.verify").count() == 2, "{actions:?}");
    inbox.stop().await;
}

#[tokio::test]
async fn a_namesake_is_flagged_and_joins_a_verified_contact_only_as_a_key_change() {
    let (lee, other) = (key(3), key(6));
    let own = pubhex(&key(2));
    let inbox = TestInbox::start(&own, false).await;
    inbox.trust(&pubhex(&lee), "Dr. Lee", policy(&["lab-results"]));
    inbox.trust(&pubhex(&other), "dr. lee ", policy(&["lab-results"]));
    let list = contacts::list(&inbox.ctx()).unwrap();
    assert_eq!(list.len(), 2, "the same name is never merged on its own");
    let (first, second) = (list.iter().find(|c| c.name == "Dr. Lee").unwrap().id, list.iter().find(|c| c.name != "Dr. Lee").unwrap().id);
    assert!(list.iter().all(|c| c.namesakes.len() == 1), "{list:?}");
    contacts::verify(&inbox.ctx(), &pubhex(&lee), None, Utc::now()).unwrap();
    contacts::merge(&crate::common::ctx(&inbox.store), second, first, Utc::now()).unwrap();
    let list = contacts::list(&inbox.ctx()).unwrap();
    assert_eq!((list.len(), list[0].keys.len(), list[0].key_changed, list[0].verified), (1, 2, true, true));
    let (_, _, r) = inbox.post_json(&inbox.signed(&other, "lab-results", "from the merged key")).await;
    assert_eq!(r["x-held-for-consent"].as_bool(), Some(true), "held until verified: {r}");
    assert!(list[0].keys.iter().any(|k| k.key == pubhex(&lee) && k.verified_at.is_some()), "the verified key stays verified");
    inbox.stop().await;
}

/// A sealed key joined to a contact with SQL (the bank's, to Dr. Lee) is not shown as
/// theirs and lends its grant to no key the user then says is Dr. Lee's.
#[tokio::test]
async fn a_key_joined_to_a_contact_beside_the_gate_lends_a_new_key_nothing() {
    let (lee, bank, laptop) = (key(3), key(7), key(8));
    let own = pubhex(&key(2));
    let inbox = TestInbox::start(&own, false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.trust(&pubhex(&lee), "Dr. Lee", policy(&["lab-results"]));
    inbox.trust(&pubhex(&bank), "Bank", policy(&["payments"]));
    let lee_id = contacts::list(&inbox.ctx()).unwrap().into_iter().find(|c| c.name == "Dr. Lee").unwrap().id;
    behind_the_gates_back(inbox.dir.path(), &format!("UPDATE contact_keys SET contact_id = {lee_id} WHERE key = '{}'", pubhex(&bank)));
    assert_eq!(contacts::list(&inbox.ctx()).unwrap().into_iter().find(|c| c.id == lee_id).unwrap().keys.len(), 1, "whatever the database says");
    assert_eq!(inbox.post_json(&inbox.signed(&laptop, "lab-results", "from my new laptop")).await.0, 401);
    contacts::adopt(&i, lee_id, &pubhex(&laptop), Utc::now()).unwrap();
    let entry = inbox.store.trust_get(&pubhex(&laptop)).unwrap().unwrap();
    assert_eq!((entry.name.as_str(), entry.policy.allowed_scopes.clone()), ("Dr. Lee", vec!["lab-results".to_string()]), "Dr. Lee's grant only");
    inbox.stop().await;
}

/// A verified mark cleared with SQL cannot be told from one never made: the next key the
/// user says is Dr. Lee's is held until verified, as if the mark were there.
#[tokio::test]
async fn a_verification_cleared_beside_the_gate_still_holds_the_next_new_key() {
    let (lee, laptop) = (key(3), key(8));
    let own = pubhex(&key(2));
    let inbox = TestInbox::start(&own, false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.trust(&pubhex(&lee), "Dr. Lee", policy(&["lab-results"]));
    let lee_id = contacts::verify(&inbox.ctx(), &pubhex(&lee), None, Utc::now()).unwrap().id;
    behind_the_gates_back(inbox.dir.path(), &format!("UPDATE contact_keys SET verified_at = NULL WHERE key = '{}'", pubhex(&lee)));
    assert_eq!(inbox.post_json(&inbox.signed(&laptop, "lab-results", "from my new laptop")).await.0, 401);
    let said = contacts::adopt(&i, lee_id, &pubhex(&laptop), Utc::now()).unwrap();
    assert!(said.contains("held until you verify it"), "{said}");
    assert!(inbox.store.trust_get(&pubhex(&laptop)).unwrap().unwrap().policy.key_change_unverified);
    let (status, _, r) = inbox.post_json(&inbox.signed(&laptop, "lab-results", "and another")).await;
    assert_eq!((status, r["x-held-for-consent"].as_bool()), (200, Some(true)), "{r}");
    inbox.stop().await;
}
