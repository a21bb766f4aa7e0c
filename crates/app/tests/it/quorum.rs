//! Quorum over the approvers' API: "2 of 3" needs two devices agreeing, each counts once,
//! a deny ends it, a device not named cannot vote, and two votes at the same moment
//! cannot both decide.

use crate::approvers::{call, joined, Device};
use crate::common::{behind_the_gates_back, key, pubhex, TestInbox};
use gatehouse_app::quorum::{self, RuleInput};
use serde_json::{json, Value};

async fn waiting(inbox: &TestInbox, d: &Device) -> Vec<Value> {
    let (status, v) = call(inbox, d, reqwest::Method::GET, "/approve/waiting", "").await;
    assert_eq!(status, 200, "{v}");
    v.as_array().unwrap().clone()
}

async fn vote(inbox: &TestInbox, d: &Device, item: &Value, decision: &str) -> (u16, Value) {
    let body = json!({"target": item["target"], "digest": item["digest"], "decision": decision}).to_string();
    call(inbox, d, reqwest::Method::POST, "/approve/decide", &body).await
}

#[tokio::test]
async fn two_of_three_needs_two_agreeing_devices_each_counted_once_and_a_deny_ends_it() {
    let inbox = TestInbox::start(&pubhex(&key(0x71)), false).await;
    let (a, b, c, d) = (joined(&inbox, "Ana").await, joined(&inbox, "Bo").await, joined(&inbox, "Cy").await, joined(&inbox, "Dee").await);
    let rule = RuleInput { scope: Some("support".into()), sender: None, need: 2, approvers: vec![a.id.clone(), b.id.clone(), c.id.clone()], deny_ends: None };
    quorum::rule_add(&crate::common::ctx(&inbox.store), rule).unwrap();

    let stranger = key(0x72);
    inbox.post_json(&inbox.signed(&stranger, "support", "May I reach your AI?")).await;
    let item = waiting(&inbox, &a).await[0].clone();
    assert_eq!(item["quorum"]["need"], 2);
    assert_eq!(item["quorum"]["of"], json!(["Ana", "Bo", "Cy"]));

    let (status, out) = vote(&inbox, &a, &item, "always_allow_scope").await;
    assert_eq!(status, 200, "{out}");
    assert!(out["message"].as_str().unwrap().contains("1 of the 2 needed"), "{out}");
    assert!(out["delivered"].is_null());
    // Still waiting, and the prompt shows who decided so far.
    let now = waiting(&inbox, &b).await[0].clone();
    assert_eq!(now["digest"], item["digest"]);
    assert_eq!(now["quorum"]["votes"][0]["approver"], "Ana");
    // Each device counts once; a device the rule does not name does not count at all.
    assert_eq!(vote(&inbox, &a, &item, "always_allow_scope").await.1["code"], "ALREADY_SENT");
    let (status, v) = vote(&inbox, &d, &item, "always_allow_scope").await;
    assert_eq!((status, v["code"].as_str()), (403, Some("NOT_ALLOWED")), "{v}");
    // Another decision does not add to this one.
    assert!(vote(&inbox, &b, &item, "allow_once").await.1["message"].as_str().unwrap().contains("1 of the 2"));
    let (status, out) = vote(&inbox, &c, &item, "always_allow_scope").await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["delivered"]["outcome"], "accepted", "the second agreeing vote decides: {out}");
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "In now")).await.0, 200);
    let audit = inbox.store.audit_list(30).unwrap();
    let decided = audit.iter().find(|e| e.action == "consent.always_allow_scope").unwrap();
    assert_eq!(decided.detail["by"]["quorum"], json!([a.id, c.id]), "{:?}", decided.detail);
    assert_eq!(vote(&inbox, &b, &item, "always_allow_scope").await.0, 404, "nothing left to vote on");

    // One deny ends it.
    let other = key(0x73);
    inbox.post_json(&inbox.signed(&other, "support", "And me?")).await;
    let item = waiting(&inbox, &b).await[0].clone();
    let (status, out) = vote(&inbox, &b, &item, "deny").await;
    assert_eq!(status, 200, "{out}");
    assert!(waiting(&inbox, &a).await.is_empty(), "denied by one");
}

#[tokio::test]
async fn a_removed_devices_vote_no_longer_counts_and_all_means_the_enrolled_ones() {
    let inbox = TestInbox::start(&pubhex(&key(0x74)), false).await;
    let (a, b, c) = (joined(&inbox, "Ana").await, joined(&inbox, "Bo").await, joined(&inbox, "Cy").await);
    let rule = RuleInput { scope: Some("support".into()), sender: None, need: 2, approvers: vec![a.id.clone(), b.id.clone(), c.id.clone()], deny_ends: None };
    quorum::rule_add(&crate::common::ctx(&inbox.store), rule).unwrap();
    let stranger = key(0x75);
    inbox.post_json(&inbox.signed(&stranger, "support", "May I reach your AI?")).await;
    let item = waiting(&inbox, &a).await[0].clone();
    assert!(vote(&inbox, &a, &item, "always_allow_scope").await.1["message"].as_str().unwrap().contains("1 of the 2"));
    // Ana's device is removed: her vote goes with it, so Bo's alone is one of two.
    gatehouse_app::approvers::remove(&crate::common::ctx(&inbox.store), &a.id).unwrap();
    let (status, out) = vote(&inbox, &b, &item, "always_allow_scope").await;
    assert_eq!(status, 200, "{out}");
    assert!(out["delivered"].is_null(), "a removed device's vote decided: {out}");
    assert!(out["message"].as_str().unwrap().contains("1 of the 2"), "{out}");
    assert_eq!(waiting(&inbox, &c).await.len(), 1, "still waiting");
    let (_, out) = vote(&inbox, &c, &item, "always_allow_scope").await;
    assert_eq!(out["delivered"]["outcome"], "accepted", "two enrolled devices decide: {out}");
}

/// A vote row written into the database counts for nothing: each vote is kept with the
/// request its device signed and checked again at every count, so a copy of Ana's signed
/// vote put in under Bo's id (or a row with no proof) neither counts nor shows.
#[tokio::test]
async fn a_vote_written_into_the_database_counts_for_nothing() {
    let inbox = TestInbox::start(&pubhex(&key(0x78)), false).await;
    let (a, b, c) = (joined(&inbox, "Ana").await, joined(&inbox, "Bo").await, joined(&inbox, "Cy").await);
    let rule = RuleInput { scope: Some("support".into()), sender: None, need: 3, approvers: vec![a.id.clone(), b.id.clone(), c.id.clone()], deny_ends: None };
    quorum::rule_add(&crate::common::ctx(&inbox.store), rule).unwrap();
    inbox.post_json(&inbox.signed(&key(0x79), "support", "May I reach your AI?")).await;
    let item = waiting(&inbox, &a).await[0].clone();
    assert!(vote(&inbox, &a, &item, "always_allow_scope").await.1["message"].as_str().unwrap().contains("1 of the 3"));
    behind_the_gates_back(
        inbox.dir.path(),
        &format!(
            "INSERT INTO quorum_votes (item, digest, approver_id, n, decision, at, proof)
             SELECT item, digest, '{}', 2, decision, at, proof FROM quorum_votes WHERE approver_id = '{}'",
            b.id, a.id
        ),
    );
    let shown = waiting(&inbox, &c).await[0]["quorum"]["votes"].clone();
    assert_eq!(shown.as_array().map(Vec::len), Some(1), "only Ana's own vote shows: {shown}");
    let (status, out) = vote(&inbox, &c, &item, "always_allow_scope").await;
    assert_eq!(status, 200, "{out}");
    assert!(out["message"].as_str().unwrap().contains("2 of the 3"), "Bo's forged vote did not count: {out}");
    assert!(out["delivered"].is_null(), "{out}");
}

#[tokio::test]
async fn two_votes_at_the_same_moment_cannot_both_decide() {
    let inbox = TestInbox::start(&pubhex(&key(0x74)), false).await;
    let (a, b) = (joined(&inbox, "Ana").await, joined(&inbox, "Bo").await);
    quorum::rule_add(
        &crate::common::ctx(&inbox.store),
        RuleInput { scope: None, sender: None, need: 1, approvers: vec![a.id.clone(), b.id.clone()], deny_ends: Some(false) },
    )
    .unwrap();
    for round in 0..10u8 {
        let stranger = key(0x80 + round);
        inbox.post_json(&inbox.signed(&stranger, "support", &format!("round {round}"))).await;
        let item = waiting(&inbox, &a).await[0].clone();
        let (x, y) = tokio::join!(vote(&inbox, &a, &item, "always_allow_scope"), vote(&inbox, &b, &item, "deny"));
        let decided: Vec<&Value> =
            [&x, &y].into_iter().filter(|(s, v)| *s == 200 && v["message"].as_str().is_some_and(|m| !m.contains("vote is counted"))).map(|(_, v)| v).collect();
        assert_eq!(decided.len(), 1, "round {round}: {x:?} {y:?}");
        let loser = if x.0 == 200 { &y } else { &x };
        assert!(loser.0 == 404 || loser.0 == 409, "round {round}: {loser:?}");
    }
}

#[tokio::test]
async fn two_denies_agree_whatever_duration_each_page_had_selected() {
    let inbox = TestInbox::start(&pubhex(&key(0x75)), false).await;
    let (a, b) = (joined(&inbox, "Ana").await, joined(&inbox, "Bo").await);
    quorum::rule_add(
        &crate::common::ctx(&inbox.store),
        RuleInput { scope: None, sender: None, need: 2, approvers: vec![a.id.clone(), b.id.clone()], deny_ends: Some(false) },
    )
    .unwrap();
    inbox.post_json(&inbox.signed(&key(0x76), "support", "knock")).await;
    let item = waiting(&inbox, &a).await[0].clone();
    let deny = |lasting: &str| json!({"target": item["target"], "digest": item["digest"], "decision": "deny", "lasting": {"for": lasting}}).to_string();
    let (_, first) = call(&inbox, &a, reqwest::Method::POST, "/approve/decide", &deny("hour")).await;
    assert!(first["message"].as_str().unwrap().contains("1 of the 2"), "{first}");
    let (status, second) = call(&inbox, &b, reqwest::Method::POST, "/approve/decide", &deny("always")).await;
    assert_eq!(status, 200, "{second}");
    assert!(!second["message"].as_str().unwrap().contains("vote is counted"), "the second deny decides: {second}");
    assert!(waiting(&inbox, &a).await.is_empty());
}

/// The vote that completes a quorum but cannot be carried out (here: "always allow" for a
/// knock whose scope is not one scope) does not leave the item decided: it still waits,
/// and the same device can decide it otherwise. A duration that has passed is refused
/// before it counts as a vote at all.
#[tokio::test]
async fn a_deciding_vote_that_cannot_be_carried_out_leaves_the_item_waiting() {
    let inbox = TestInbox::start(&pubhex(&key(0x77)), false).await;
    let (a, b) = (joined(&inbox, "Ana").await, joined(&inbox, "Bo").await);
    quorum::rule_add(
        &crate::common::ctx(&inbox.store),
        RuleInput { scope: None, sender: None, need: 1, approvers: vec![a.id.clone(), b.id.clone()], deny_ends: None },
    )
    .unwrap();
    inbox.store.pending_record("epp", &pubhex(&key(0x78)), "*", "x", "2026-11-24T00:00:00Z").unwrap();
    let item = waiting(&inbox, &a).await[0].clone();
    let (status, out) = vote(&inbox, &a, &item, "always_allow_scope").await;
    assert_eq!((status, out["code"].as_str()), (400, Some("INVALID")), "{out}");
    let still = waiting(&inbox, &b).await;
    assert_eq!(still.len(), 1, "it still waits");
    assert!(still[0]["quorum"]["votes"].as_array().unwrap().is_empty(), "the vote that failed is not counted: {}", still[0]);

    let past = json!({"target": item["target"], "digest": item["digest"], "decision": "always_allow_scope", "lasting": {"for": "until", "date": "2020-01-01"}})
        .to_string();
    let (status, out) = call(&inbox, &b, reqwest::Method::POST, "/approve/decide", &past).await;
    assert_eq!((status, out["code"].as_str()), (400, Some("INVALID")), "{out}");
    assert!(waiting(&inbox, &b).await[0]["quorum"]["votes"].as_array().unwrap().is_empty());

    let (status, out) = vote(&inbox, &a, &item, "deny").await;
    assert_eq!(status, 200, "{out}");
    assert!(waiting(&inbox, &a).await.is_empty(), "denied");
}
