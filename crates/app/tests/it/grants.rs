//! Grants that last as long as the user meant, prompts put off, and what a grant for good
//! would have let in: over a real store and HTTP inbox.

use crate::common::*;
use chrono::{Duration, Utc};
use gatehouse_app::consent::{self, ConsentError, ConsentItem, ConsentTarget, Decision};
use gatehouse_app::consent::{decide_with_keys, Lasting};
use gatehouse_store::ExecStatus;

#[tokio::test]
async fn an_hour_long_grant_lets_messages_in_for_the_hour_then_holds_them_and_asks_again() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "first")).await.0, 401);
    let target = shown(&i, &pubhex(&stranger));
    let out = decide_with_keys(&i, &target, Decision::AlwaysAllowScope, &Lasting::Hour, Utc::now(), &[]).unwrap();
    assert!(out.message.contains("Allowed for \"support\" until"), "{}", out.message);
    assert!(out.delivered.unwrap().let_in(), "the waiting message is delivered");
    let (status, _, r) = inbox.post_json(&inbox.signed(&stranger, "support", "within the hour")).await;
    assert_eq!((status, r["x-held-for-consent"].as_bool().unwrap_or(false)), (200, false), "{r}");
    // The hour passes (the window's test moves the clock itself).
    let mut entry = inbox.store.trust_get(&pubhex(&stranger)).unwrap().unwrap();
    let end = chrono::DateTime::parse_from_rfc3339(&entry.policy.grant_until["support"]).unwrap();
    assert!((end.with_timezone(&Utc) - Utc::now() - Duration::hours(1)).num_seconds().abs() < 60, "{end}");
    entry.policy.grant_until.insert("support".into(), gatehouse_epp::utc_string(Utc::now() - Duration::seconds(1)));
    inbox.store.trust_update(&entry.public_key, None, &entry.policy, None).unwrap();

    // The next message is not refused and does not run: it is kept, held, and the
    // receipt says so; the prompt says the permission ended.
    let (status, _, r) = inbox.post_json(&inbox.signed(&stranger, "support", "after the hour")).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["x-held-for-consent"].as_bool(), Some(true), "{r}");
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    let (row_id, ended) = match &items[..] {
        [ConsentItem::Held { row_id, grant_ended: Some(until), prompt, .. }] if prompt == "after the hour" => (*row_id, until.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(Some(&ended), entry.policy.grant_until.get("support"));
    let listed = gatehouse_app::trust::timed_grants(&crate::common::ctx(&inbox.store), Utc::now()).unwrap();
    assert!(listed.len() == 1 && listed[0].ended && listed[0].scope == "support", "{listed:?}");

    // Allowed again for an hour from now: released, and the next one goes through.
    let out = decide_with_keys(&i, &ConsentTarget::Held { row_id }, Decision::AlwaysAllowScope, &Lasting::Hour, Utc::now(), &[]).unwrap();
    assert!(out.message.contains("without asking until"), "{}", out.message);
    let (status, _, r) = inbox.post_json(&inbox.signed(&stranger, "support", "within the new hour")).await;
    assert_eq!((status, r["x-held-for-consent"].as_bool().unwrap_or(false)), (200, false), "{r}");
    assert!(!gatehouse_app::trust::timed_grants(&crate::common::ctx(&inbox.store), Utc::now()).unwrap()[0].ended);
    let audit = inbox.store.audit_list(5).unwrap();
    assert!(audit.iter().any(|a| a.action == "consent.always_allow_scope" && a.detail["until"].is_string()), "the end is audited");
    inbox.stop().await;
}

#[tokio::test]
async fn a_grant_for_good_after_a_timed_one_lasts_and_a_past_date_is_refused() {
    let bob = key(3);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.trust(&pubhex(&bob), "Bob", gatehouse_store::Policy { hold_for_consent: true, ..policy(&["support"]) });
    inbox.post_json(&inbox.signed(&bob, "support", "one")).await;
    let row = inbox.store.envelopes_with_status(ExecStatus::Held).unwrap()[0].id;
    let past = Lasting::Until { date: "2020-01-01".into() };
    let e = decide_with_keys(&i, &ConsentTarget::Held { row_id: row }, Decision::AlwaysAllowScope, &past, Utc::now(), &[]).unwrap_err();
    assert!(matches!(&e, ConsentError::Invalid(m) if m.contains("already passed")), "{e}");
    assert_eq!(inbox.store.envelope(row).unwrap().unwrap().exec_status, ExecStatus::Held, "nothing changed");
    decide_with_keys(&i, &ConsentTarget::Held { row_id: row }, Decision::AlwaysAllowScope, &Lasting::Tonight, Utc::now(), &[]).unwrap();
    let until = inbox.store.trust_get(&pubhex(&bob)).unwrap().unwrap().policy.grant_until["support"].clone();
    let end = chrono::DateTime::parse_from_rfc3339(&until).unwrap();
    assert!(end > Utc::now() && end <= Utc::now() + Duration::hours(24) + Duration::minutes(1), "{until}");
    inbox.post_json(&inbox.signed(&bob, "support", "two")).await;
    let held = inbox.store.envelopes_with_status(ExecStatus::Held).unwrap();
    assert!(held.is_empty(), "until tonight, nothing in the scope is held");
    // Held again (the grant ended), then "always": no end is kept and nothing is held.
    let mut p = inbox.store.trust_get(&pubhex(&bob)).unwrap().unwrap().policy;
    p.grant_until.insert("support".into(), "2020-01-01T00:00:00Z".into());
    inbox.store.trust_update(&pubhex(&bob), None, &p, None).unwrap();
    inbox.post_json(&inbox.signed(&bob, "support", "three")).await;
    let row = inbox.store.envelopes_with_status(ExecStatus::Held).unwrap()[0].id;
    gatehouse_app::consent::decide(&i, &ConsentTarget::Held { row_id: row }, Decision::AlwaysAllowScope, Utc::now()).unwrap();
    assert!(inbox.store.trust_get(&pubhex(&bob)).unwrap().unwrap().policy.grant_until.is_empty());
    inbox.post_json(&inbox.signed(&bob, "support", "four")).await;
    assert!(inbox.store.envelopes_with_status(ExecStatus::Held).unwrap().is_empty());
    inbox.stop().await;
}

#[tokio::test]
async fn ask_me_later_puts_a_prompt_off_without_deciding_it_and_it_comes_back() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.post_json(&inbox.signed(&stranger, "support", "can you help")).await;
    let target = shown(&i, &pubhex(&stranger));
    let now = Utc::now();
    let out = gatehouse_app::consent::decide(&i, &target, Decision::AskLater, now).unwrap();
    assert!(out.message.starts_with("Put off until"), "{}", out.message);
    let later = |at| match &consent::pending_at(&inbox.store, at).unwrap()[..] {
        [ConsentItem::UnknownSender { later, .. }] => later.clone(),
        other => panic!("still waiting, exactly once: {other:?}"),
    };
    assert!(later(now).is_some(), "put off, not gone");
    assert!(later(now + Duration::minutes(61)).is_none(), "back after the hour");
    // Nothing was decided: the sender is not trusted, and can still be let in.
    assert!(inbox.store.trust_get(&pubhex(&stranger)).unwrap().is_none());
    gatehouse_app::consent::decide(&i, &target, Decision::AllowOnce, now).unwrap();
    assert!(inbox.store.later_list().unwrap().is_empty(), "a decided prompt is no longer put off");
    assert!(matches!(gatehouse_app::consent::decide(&i, &target, Decision::AskLater, now), Err(ConsentError::Gone)));
    inbox.stop().await;
}

#[tokio::test]
async fn before_always_the_prompt_lists_what_it_would_have_let_in() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    for text in ["first try", "second try", "newest"] {
        inbox.post_json(&inbox.signed(&stranger, "support", text)).await;
    }
    inbox.post_json(&inbox.signed(&stranger, "billing", "another scope")).await;
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    let ConsentItem::UnknownSender { covered_total, scope, prompt, .. } = &items[0] else { panic!("{items:?}") };
    // The newest knock is the one the prompt shows (billing); its scope's history is empty.
    assert_eq!((scope.as_deref(), prompt.as_deref(), *covered_total), (Some("billing"), Some("another scope"), 0));
    let (covered, total) = inbox.store.covered_by_grant(&pubhex(&stranger), "support", None, 2).unwrap();
    assert_eq!(total, 3);
    assert_eq!(covered.iter().map(|c| c.excerpt.as_deref().unwrap()).collect::<Vec<_>>(), ["newest", "second try"]);
    assert!(covered.iter().all(|c| c.outcome == "refused"));
    inbox.stop().await;
}

// EPP says UNTRUSTED_SENDER both to a stranger that knocks and to a sender the user
// blocked: the receipt keeps which it was, and only a knock is what "always" would have
// let in.
#[tokio::test]
async fn what_was_refused_while_blocked_is_not_counted_as_a_knock() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.post_json(&inbox.signed(&stranger, "support", "knocking")).await;
    inbox.store.block(&pubhex(&stranger), "test", "2026-11-28T00:00:00Z").unwrap();
    inbox.post_json(&inbox.signed(&stranger, "support", "while blocked")).await;
    inbox.store.unblock(&pubhex(&stranger)).unwrap();
    inbox.post_json(&inbox.signed(&stranger, "support", "knocking again")).await;

    let receipts = inbox.store.receipts(10, 0).unwrap();
    let outcomes: Vec<(Option<&str>, Option<gatehouse_code::Outcome>)> = receipts.iter().map(|r| (r.prompt.as_deref(), r.outcome)).collect();
    use gatehouse_code::Outcome::{Blocked, Knock};
    assert_eq!(outcomes, [(Some("knocking again"), Some(Knock)), (Some("while blocked"), Some(Blocked)), (Some("knocking"), Some(Knock))]);
    assert!(receipts.iter().all(|r| r.code.as_deref() == Some("UNTRUSTED_SENDER")), "EPP's own words are unchanged");
    let (covered, total) = inbox.store.covered_by_grant(&pubhex(&stranger), "support", receipts[0].envelope_id.as_deref(), 5).unwrap();
    assert_eq!((total, covered.iter().map(|c| c.excerpt.as_deref().unwrap()).collect::<Vec<_>>()), (1, vec!["knocking"]));
    inbox.stop().await;
}

#[tokio::test]
async fn a_uamp_agents_grant_for_an_hour_runs_its_asks_for_the_hour_then_holds_them_and_asks_again() {
    use crate::uamp::{cat, Uamp};
    use gatehouse_uamp::Intent;
    let u = Uamp::start(cat()).await;
    let p = u.trusted(45, &["ask"], Default::default());
    let mut t = u.store.trust_get(&p.did).unwrap().unwrap();
    t.policy.hold_for_consent = true;
    u.store.trust_update(&p.did, None, &t.policy, None).unwrap();
    let inbox = u.inbox.inbox().clone();
    let ask = |text: &str| u.envelope(&p, Intent::Ask, text, serde_json::json!({}));

    // Held, then allowed for an hour from the prompt.
    let (s, b, _) = u.post(&p, &ask("first")).await;
    assert_eq!((s, b["held_for_consent"].as_bool()), (202, Some(true)), "{b}");
    let held = ConsentTarget::HeldAsk { stream_id: b["stream_id"].as_str().unwrap().into() };
    let out = decide_with_keys(&inbox, &held, Decision::AlwaysAllowScope, &Lasting::Hour, Utc::now(), &[]).unwrap();
    assert!(out.message.contains("then you are asked again"), "{}", out.message);
    let until = u.store.trust_get(&p.did).unwrap().unwrap().policy.grant_until["ask"].clone();
    let end = chrono::DateTime::parse_from_rfc3339(&until).unwrap().with_timezone(&Utc);
    assert!((end - Utc::now() - Duration::hours(1)).num_seconds().abs() < 60, "{until}");

    // Within the hour its asks run without asking.
    let (s, b, _) = u.post(&p, &ask("within the hour")).await;
    assert_eq!((s, b.get("held_for_consent")), (202, None), "{b}");

    // The hour is over (its end moved into the past): the next ask is kept and held, and
    // the prompt says the permission ended.
    let mut t = u.store.trust_get(&p.did).unwrap().unwrap();
    t.policy.grant_until.insert("ask".into(), "2020-01-01T00:00:00Z".into());
    u.store.trust_update(&p.did, None, &t.policy, None).unwrap();
    let (s, b, _) = u.post(&p, &ask("after the hour")).await;
    assert_eq!((s, b["held_for_consent"].as_bool()), (202, Some(true)), "{b}");
    let items = consent::pending(&crate::common::ctx(&u.store)).unwrap();
    assert!(
        matches!(&items[..], [ConsentItem::HeldAsk { prompt, grant_ended: Some(e), .. }] if prompt == "after the hour" && e == "2020-01-01T00:00:00Z"),
        "{items:?}"
    );
}
