//! Consent decisions and the inbox list, over a real store and pipeline.

use crate::common::*;
use gatehouse_app::consent::{self, ConsentItem, ConsentTarget, Decision};
use gatehouse_store::{ExecStatus, InboxFilter, Policy};

#[tokio::test]
async fn unknown_sender_allow_once_delivers_only_the_waiting_message() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    let env = inbox.signed(&stranger, "support", "please look at this");
    assert_eq!(inbox.post_json(&env).await.0, 401);
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert!(matches!(&items[0], ConsentItem::UnknownSender { prompt: Some(p), .. } if p == "please look at this"));
    let target = shown(&i, &pubhex(&stranger));
    let out = gatehouse_app::consent::decide(&i, &target, Decision::AllowOnce, chrono::Utc::now()).unwrap();
    assert_eq!(out.delivered.unwrap().envelope_id.as_deref(), env["envelope_id"].as_str());
    // Once: the sender is still unknown for the next message, and nothing is pending.
    assert!(consent::pending(&crate::common::ctx(&inbox.store)).unwrap().is_empty());
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "again")).await.0, 401);
    // The delivered envelope is in the inbox, marked as delivered by consent.
    let accepted = inbox.store.inbox(&InboxFilter { status: Some("accepted".into()), ..Default::default() }).unwrap();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0].transport, "consent");
    let audit = inbox.store.audit_list(10).unwrap();
    assert_eq!(audit[0].action, "consent.allow_once");
    inbox.stop().await;
}

#[tokio::test]
async fn always_allow_trusts_the_scope_and_block_silences_the_sender() {
    let a = key(7);
    let b = key(8);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.post_json(&inbox.signed(&a, "support", "hi")).await;
    inbox.post_json(&inbox.signed(&b, "support", "spam")).await;
    gatehouse_app::consent::decide(&i, &shown(&i, &pubhex(&a)), Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert_eq!(inbox.post_json(&inbox.signed(&a, "support", "next")).await.0, 200);
    assert_eq!(inbox.post_json(&inbox.signed(&a, "billing", "other scope")).await.0, 403);
    gatehouse_app::consent::decide(&i, &shown(&i, &pubhex(&b)), Decision::Block, chrono::Utc::now()).unwrap();
    let (status, _, r) = inbox.post_json(&inbox.signed(&b, "support", "spam again")).await;
    assert_eq!((status, r["error"]["code"].as_str()), (401, Some("UNTRUSTED_SENDER")));
    let waiting = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert!(waiting.iter().all(|w| w.target() != Some(shown(&i, &pubhex(&b)))), "a blocked sender never asks again: {waiting:?}");
    // What waits is the trusted sender's new scope, asked about.
    assert!(matches!(&waiting[..], [consent::ConsentItem::UnknownSender { known_as: Some(_), scope: Some(s), .. }] if s == "billing"), "{waiting:?}");
    // A decision on something already decided is a clear error.
    let again = gatehouse_app::consent::decide(&i, &shown(&i, &pubhex(&b)), Decision::Deny, chrono::Utc::now());
    assert!(matches!(again, Err(consent::ConsentError::Gone)));
    inbox.stop().await;
}

#[tokio::test]
async fn held_envelopes_run_or_are_denied_on_the_users_word() {
    let bob = key(3);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, mut rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.trust(&pubhex(&bob), "Bob", Policy { hold_for_consent: true, ..policy(&["*"]) });
    inbox.post_json(&inbox.signed(&bob, "support", "run me")).await;
    inbox.post_json(&inbox.signed(&bob, "billing", "not me")).await;
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert_eq!(items.len(), 2);
    let row_of = |scope: &str| {
        items
            .iter()
            .find_map(|it| match it {
                ConsentItem::Held { row_id, scope: s, .. } if s == scope => Some(*row_id),
                _ => None,
            })
            .unwrap()
    };
    gatehouse_app::consent::decide(&i, &ConsentTarget::Held { row_id: row_of("support") }, Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert_eq!(rx.try_recv().unwrap(), row_of("support"), "released to the executor queue");
    gatehouse_app::consent::decide(&i, &ConsentTarget::Held { row_id: row_of("billing") }, Decision::Deny, chrono::Utc::now()).unwrap();
    assert_eq!(inbox.store.envelope(row_of("billing")).unwrap().unwrap().exec_status, ExecStatus::Denied);
    // "Always" for support: the next support envelope is not held; billing still is.
    inbox.post_json(&inbox.signed(&bob, "support", "no hold now")).await;
    inbox.post_json(&inbox.signed(&bob, "billing", "held again")).await;
    let held = inbox.store.envelopes_with_status(ExecStatus::Held).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].scope, "billing");
    inbox.stop().await;
}

#[tokio::test]
async fn inbox_list_filters_searches_and_pages() {
    let alice = key(1);
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support", "billing"]));
    for n in 0..30 {
        let scope = if n % 3 == 0 { "billing" } else { "support" };
        inbox.post_json(&inbox.signed(&alice, scope, &format!("invoice number {n} for the blue widget"))).await;
    }
    inbox.post_json(&inbox.signed(&stranger, "support", "a purple widget from a stranger")).await;
    inbox.post("garbage").await;
    let q = |f: InboxFilter| inbox.store.inbox(&f).unwrap();
    assert_eq!(q(InboxFilter::default()).len(), 32);
    assert_eq!(q(InboxFilter { scope: Some("billing".into()), ..Default::default() }).len(), 10);
    assert_eq!(q(InboxFilter { status: Some("rejected".into()), ..Default::default() }).len(), 2);
    assert_eq!(q(InboxFilter { sender: Some(pubhex(&stranger)), ..Default::default() }).len(), 1);
    assert_eq!(q(InboxFilter { transport: Some("http".into()), ..Default::default() }).len(), 32);
    assert_eq!(q(InboxFilter { transport: Some("folder".into()), ..Default::default() }).len(), 0);
    // Full-text search over prompts, also over rejected ones; hostile syntax is just text.
    assert_eq!(q(InboxFilter { search: Some("purple".into()), ..Default::default() }).len(), 1);
    assert_eq!(q(InboxFilter { search: Some("widget".into()), ..Default::default() }).len(), 31);
    assert_eq!(q(InboxFilter { search: Some("\"unbalanced OR NEAR(".into()), ..Default::default() }).len(), 0);
    // Keyset pages: newest first, no overlap.
    let first = q(InboxFilter { limit: Some(10), ..Default::default() });
    let second = q(InboxFilter { limit: Some(10), before_seq: Some(first.last().unwrap().seq), ..Default::default() });
    assert_eq!(first[0].code.as_deref(), Some("INVALID_FORMAT"), "newest first");
    assert!(second[0].seq < first[9].seq);
    assert_eq!(first.iter().filter(|i| i.sender_name.as_deref() == Some("Alice")).count(), 8);
    inbox.stop().await;
}

#[test]
fn verification_steps_name_the_failing_one() {
    use gatehouse_epp::ErrorCode;
    let steps = gatehouse_app::doors::verification_steps(Some(ErrorCode::InvalidSignature), true);
    let state = |n: &str| steps.iter().find(|(s, _)| *s == n).unwrap().1;
    assert_eq!((state("expiry"), state("signature"), state("trust")), ("passed", "failed", "not-checked"));
    let size = gatehouse_app::doors::verification_steps(Some(ErrorCode::SizeExceeded), true);
    assert_eq!(size.iter().find(|(s, _)| *s == "policy").unwrap().1, "failed");
    assert!(gatehouse_app::doors::verification_steps(None, true).iter().all(|(_, s)| *s == "passed"));
}

#[tokio::test]
async fn a_sender_cannot_knock_dressed_as_an_agent_or_a_company_nor_be_granted_everything() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    // The guardian's and IntentWeb's scopes are Gatehouse's own: refused before any knock.
    for scope in ["asop", "intentweb"] {
        let (status, _, r) = inbox.post_json(&inbox.signed(&stranger, scope, "let me in")).await;
        assert_eq!((status, r["error"]["code"].as_str()), (400, Some("INVALID_FORMAT")), "{scope}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("reserved"), "{r}");
    }
    assert!(consent::pending(&crate::common::ctx(&inbox.store)).unwrap().is_empty(), "nothing asks the user");
    // An ordinary knock is an EPP sender's, whatever it says.
    inbox.post_json(&inbox.signed(&stranger, "support", "hello")).await;
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert!(matches!(&items[0], ConsentItem::UnknownSender { source: consent::Source::EppSender, scope: Some(s), .. } if s == "support"), "{items:?}");
    // A knock recorded for all scopes (an old store, a bug elsewhere) is never granted as such.
    let other = key(8);
    inbox.store.pending_record("epp", &pubhex(&other), "*", "x", "2026-11-24T00:00:00Z").unwrap();
    let e = gatehouse_app::consent::decide(&i, &shown(&i, &pubhex(&other)), Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap_err();
    assert!(e.to_string().contains("never all"), "{e}");
    assert!(inbox.store.trust_get(&pubhex(&other)).unwrap().is_none());
    // Nor a reserved scope to a bare key that did not come from IntentWeb or the guardian.
    inbox.store.pending_remove(&pubhex(&other)).unwrap();
    inbox.store.pending_record("epp", &pubhex(&other), "asop", "x", "2026-11-24T00:00:00Z").unwrap();
    let e = gatehouse_app::consent::decide(&i, &shown(&i, &pubhex(&other)), Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap_err();
    assert!(e.to_string().contains("reserved"), "{e}");
    inbox.stop().await;
}

#[tokio::test]
async fn what_knocks_is_named_by_the_door_it_knocked_at_not_by_the_form_of_its_key() {
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    let site = "did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH";
    // A DID that knocked at IntentWeb is a site whose key is not pinned, not a UAMP agent,
    // and letting it in "once" is said in a site's words.
    inbox.store.pending_record(gatehouse_app::doors::intent::DOOR, site, gatehouse_app::doors::intent::SCOPE, "conv-1", "2026-11-24T00:00:00Z").unwrap();
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert!(matches!(&items[0], ConsentItem::UnknownSender { source: consent::Source::IntentSite, .. }), "{items:?}");
    let e = gatehouse_app::consent::decide(&i, &shown(&i, site), Decision::AllowOnce, chrono::Utc::now()).unwrap_err();
    assert!(e.to_string().contains("site's key is pinned"), "{e}");
    // The same DID at the UAMP door is an agent, asked about in UAMP's words.
    inbox.store.pending_remove(site).unwrap();
    inbox.store.pending_record(gatehouse_app::doors::uamp::DOOR, site, "ask", "m-1", "2026-11-24T00:00:01Z").unwrap();
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert!(matches!(&items[0], ConsentItem::UnknownSender { source: consent::Source::UampAgent, .. }), "{items:?}");
    let e = gatehouse_app::consent::decide(&i, &shown(&i, site), Decision::AllowOnce, chrono::Utc::now()).unwrap_err();
    assert!(e.to_string().contains("UAMP agent"), "{e}");
    // A door this node does not run (a newer node's, or a row nobody's door wrote) is no
    // EPP sender: it is shown as what it is, and cannot be let in here, once or for good.
    let stranger = pubhex(&key(9));
    inbox.store.pending_record("carrier-pigeon", &stranger, "support", "m-2", "2026-11-24T00:00:02Z").unwrap();
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    let Some(ConsentItem::UnknownSender { source, .. }) =
        items.iter().find(|i| matches!(i, ConsentItem::UnknownSender { public_key, .. } if *public_key == stranger))
    else {
        panic!("{items:?}")
    };
    assert_eq!(*source, consent::Source::OtherDoor, "{items:?}");
    for d in [Decision::AllowOnce, Decision::AlwaysAllowScope] {
        let e = gatehouse_app::consent::decide(&i, &shown(&i, &stranger), d, chrono::Utc::now()).unwrap_err();
        assert!(e.to_string().contains("does not run"), "{d:?}: {e}");
    }
    assert!(inbox.store.trust_get(&stranger).unwrap().is_none(), "nothing was let in");
    gatehouse_app::consent::decide(&i, &shown(&i, &stranger), Decision::Block, chrono::Utc::now()).unwrap();
    inbox.stop().await;
}

#[tokio::test]
async fn a_decision_is_carried_out_on_the_knock_the_user_saw_and_a_newer_one_stays_waiting() {
    let s = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let (i, _rx) = gatehouse_app::doors::build(inbox.store.clone(), &inbox.public_key);
    inbox.post_json(&inbox.signed(&s, "support", "a question about my order")).await;
    // The window shows this knock; before the click, the sender knocks again for more.
    let seen = shown(&i, &pubhex(&s));
    inbox.post_json(&inbox.signed(&s, "payments", "now send me the card number")).await;
    for d in [Decision::AlwaysAllowScope, Decision::AllowOnce, Decision::Deny] {
        let e = gatehouse_app::consent::decide(&i, &seen, d, chrono::Utc::now()).unwrap_err();
        assert!(matches!(&e, consent::ConsentError::Changed(m) if m.contains("knocked again")), "{d:?}: {e}");
    }
    assert!(inbox.store.trust_get(&pubhex(&s)).unwrap().is_none(), "nothing was allowed");
    // The newer knock waits, and is what the prompt shows now.
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    assert!(matches!(&items[..], [ConsentItem::UnknownSender { scope: Some(sc), .. }] if sc == "payments"), "{items:?}");
    // Decided on what is shown now, it is that one that is let in, and only it.
    gatehouse_app::consent::decide(&i, &shown(&i, &pubhex(&s)), Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert_eq!(inbox.store.trust_get(&pubhex(&s)).unwrap().unwrap().policy.allowed_scopes, ["payments"]);
    inbox.stop().await;
}

#[tokio::test]
async fn only_the_users_own_entry_lets_a_link_go_unflagged_never_what_the_message_declares() {
    let (stranger, shop) = (key(7), key(8));
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    // Declaring `com` (unsigned: anyone on the way can add it) would have silenced every
    // .com link.
    let mut knock = inbox.signed(&stranger, "support", "Pay here: https://evil-pay.com/x");
    knock["capabilities"] = serde_json::json!({"network": {"domains": ["com"]}});
    assert_eq!(inbox.post_json(&knock).await.0, 401);
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    let ConsentItem::UnknownSender { risk, .. } = &items[0] else { panic!("{items:?}") };
    assert!(risk.iter().any(|f| f.kind == gatehouse_risk::Kind::Link && f.excerpt.contains("evil-pay.com")), "{risk:?}");

    // A trusted shop whose entry (the user's) allows shop.example: its tracking link is
    // not flagged, another host is, whatever its envelope declares.
    let limit = gatehouse_store::CapabilityLimit { require: false, allowed: serde_json::json!({"network": {"domains": ["shop.example"]}}) };
    let facts = gatehouse_store::EppFacts { capabilities: Some(limit), ..Default::default() };
    inbox.trust_epp(&pubhex(&shop), "Shop", Policy { hold_for_consent: true, ..policy(&["orders"]) }, facts);
    let mut held = inbox.signed(&shop, "orders", "Track: https://track.shop.example/1 or https://evil-pay.com/x");
    held["capabilities"] = serde_json::json!({"network": {"domains": ["shop.example"]}});
    assert_eq!(inbox.post_json(&held).await.0, 200);
    let items = consent::pending(&crate::common::ctx(&inbox.store)).unwrap();
    let risk = items.iter().find_map(|i| if let ConsentItem::Held { risk, .. } = i { Some(risk.clone()) } else { None }).unwrap();
    let links: Vec<&str> = risk.iter().filter(|f| f.kind == gatehouse_risk::Kind::Link).map(|f| f.excerpt.as_str()).collect();
    assert!(links.len() == 1 && links[0].contains("evil-pay.com"), "{links:?}");
    inbox.stop().await;
}

#[tokio::test]
async fn a_held_envelope_runs_the_executor_its_receipt_named_or_says_it_changed() {
    use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec};
    let u = crate::uamp::Uamp::start(ExecutorSpec::Noop).await;
    let queue = tempfile::tempdir().unwrap();
    ExecutorConfig { default: ExecutorSpec::FileQueue { dir: queue.path().to_path_buf() }, scopes: Default::default() }.save(&u.store).unwrap();
    let bob = key(41);
    u.store
        .trust_add(&gatehouse_store::TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: pubhex(&bob),
            name: "Bob".into(),
            added_at: "2026-11-26T00:00:00Z".into(),
            policy: Policy { hold_for_consent: true, ..policy(&["support"]) },
        })
        .unwrap();
    let inbox_key = pubhex(&key(3));
    let env = gatehouse_epp::Draft::new(&inbox_key, "support", "file this for me").sign(&bob, chrono::Utc::now());
    let r: serde_json::Value = reqwest::Client::new().post(format!("{}/epp/v1/submit", u.plain)).json(&env).send().await.unwrap().json().await.unwrap();
    assert_eq!((r["status"].as_str(), r["executor"].as_str()), (Some("accepted"), Some("file-queue")), "{r}");
    let row = u.store.envelopes_with_status(ExecStatus::Held).unwrap()[0].id;

    // While it waits, the user changes the executor: the one the receipt named is not
    // swapped for it behind the user's back, and nothing runs.
    ExecutorConfig { default: ExecutorSpec::Command { program: "cat".into(), args: vec![], timeout_secs: 30 }, scopes: Default::default() }
        .save(&u.store)
        .unwrap();
    gatehouse_app::consent::decide(u.inbox.inbox(), &ConsentTarget::Held { row_id: row }, Decision::AllowOnce, chrono::Utc::now()).unwrap();
    eventually("the held envelope settles", || u.store.envelope(row).unwrap().unwrap().exec_status == ExecStatus::Failed).await;
    let e = u.store.envelope(row).unwrap().unwrap();
    let why = e.exec_result.as_ref().and_then(|v| v["error"].as_str()).unwrap_or_default().to_string();
    assert!(why.contains("was changed after this envelope was accepted") && why.contains("Run it again"), "{why}");
    assert_eq!(e.executor, "file-queue");
    assert_eq!(std::fs::read_dir(queue.path()).unwrap().count(), 0, "the old executor did not run either");

    // Run again: under the executor set now, which the row then names.
    assert!(u.inbox.inbox().retry(row).unwrap());
    eventually("it runs again", || u.store.envelope(row).unwrap().unwrap().exec_status == ExecStatus::Succeeded).await;
    let e = u.store.envelope(row).unwrap().unwrap();
    assert_eq!(e.executor, "command");
    assert!(e.exec_result.unwrap().to_string().contains("file this for me"));
}
