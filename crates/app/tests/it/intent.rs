//! IntentWeb conversations against the repo's IntentSite on loopback: the spec's booking
//! flow with incremental resolution, a clarification turn, an error turn, first-contact
//! pinning through the trust registry, and the answers that must be refused — a tampered
//! signature, a replayed nonce, a wrong interaction_id, another key than the pinned one —
//! plus an invalid manifest and a markdown answer carrying script payloads.

use std::sync::Arc;

use ed25519_dalek::SigningKey;
use gatehouse_app::doors::intent;
use gatehouse_intentweb::FlowType;
use gatehouse_intentweb_testsite::{spawn, Site};
use gatehouse_store::Store;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    key: SigningKey,
    site: Site,
    origin: String,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let site = Site::new();
    let origin = spawn(site.clone()).await;
    intent::add_site(store.clone(), &origin).await.unwrap();
    Fixture { _dir: dir, store, key: SigningKey::from_bytes(&[6; 32]), site, origin }
}

#[tokio::test]
async fn a_booking_resolves_step_by_step_to_a_confirmation_with_an_external_id() {
    let f = fixture().await;
    let site = f.store.iw_site(&f.origin).unwrap().unwrap();
    assert_eq!(site.company, "Bella Cucina Restaurant");
    assert!(site.manifest["contact"]["intent_endpoint"].as_str().unwrap().starts_with(&f.origin));

    let t = intent::start(f.store.clone(), &f.key, &f.origin, Some("Book a table for dining"), "Book a table under Jane Smith", Some("en")).await.unwrap();
    assert_eq!(t.received.flow_type, "information_request");
    assert!(t.received.accepted);
    assert!(t.received.message.contains("How many people"), "party size first: {}", t.received.message);
    assert_eq!(t.received.envelope["required_information"].as_array().unwrap().len(), 3, "party, date, time still needed");
    // First contact: unverified until the user pins the key, which knocks meanwhile.
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "new_key");
    assert!(f.store.pending_list().unwrap().iter().any(|p| p.public_key == f.site.did()));
    intent::pin(&f.store, &f.origin, &f.site.did()).unwrap();
    assert_eq!(f.store.trust_get(&f.site.did()).unwrap().unwrap().name, "Bella Cucina Restaurant");

    let id = t.conversation.interaction_id.clone();
    let say = |m: &'static str| {
        let (s, k, id) = (f.store.clone(), f.key.clone(), id.clone());
        async move { intent::reply(s, &k, &id, FlowType::InformationResponse, m, Some("en")).await.unwrap() }
    };
    let t = say("4 people").await;
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "verified");
    assert!(t.received.message.contains("Which date"), "then the date: {}", t.received.message);
    let t = say("tomorrow").await;
    assert!(t.received.html.as_ref().unwrap().contains("<table>"), "then the time, the free ones as a table");
    let t = say("at 7").await;
    assert_eq!(t.received.flow_type, "clarification_request");
    let t = say("7pm please").await;
    assert_eq!(t.received.flow_type, "execution_result");
    assert!(t.received.message.contains("Party: 4") && t.received.message.contains("Jane Smith"), "{}", t.received.message);
    let c = t.conversation;
    assert_eq!((c.state.as_str(), c.status.as_deref()), ("completed", Some("confirmed")));
    assert!(c.external_id.as_deref().unwrap().starts_with("RES-"));
    // Terminal: nothing more may be said in this interaction.
    let e = intent::reply(f.store.clone(), &f.key, &id, FlowType::InformationResponse, "one more thing", None).await.unwrap_err();
    assert_eq!(e.code().name(), "NOT_ALLOWED");
    let view = intent::view(&f.store, &id).unwrap().unwrap();
    assert_eq!(view.messages.len(), 10, "five turns, both ways");
    assert!(view.messages.iter().all(|m| m.accepted));
    assert_eq!(view.pinned_key.as_deref(), Some(f.site.did().as_str()));
    assert!(view.messages[1].envelope["explicability"][0]["interpretation"].is_string());
}

#[tokio::test]
async fn a_site_key_trusted_from_waiting_for_you_is_pinned() {
    use crate::common::shown;
    use gatehouse_app::consent::Decision;
    let f = fixture().await;
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "Book a table for 3", None).await.unwrap();
    let (inbox, _rx) = gatehouse_app::doors::service::build(f.store.clone(), &gatehouse_epp::public_key_hex(&f.key));
    let out = gatehouse_app::consent::decide(&inbox, &shown(&inbox, &f.site.did()), Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert!(out.message.starts_with("Pinned"), "{}", out.message);
    let t = intent::reply(f.store.clone(), &f.key, &t.conversation.interaction_id, FlowType::InformationResponse, "Grace Hopper", None).await.unwrap();
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "verified");
    assert_eq!(f.store.iw_site(&f.origin).unwrap().unwrap().site_key.as_deref(), Some(f.site.did().as_str()));
}

#[tokio::test]
async fn a_pin_for_an_hour_ends_and_the_sites_next_answer_asks_again() {
    use crate::common::shown;
    use gatehouse_app::consent::Decision;
    use gatehouse_app::consent::{decide_with_keys, Lasting};
    let f = fixture().await;
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "Book a table for 3", None).await.unwrap();
    let (inbox, _rx) = gatehouse_app::doors::service::build(f.store.clone(), &gatehouse_epp::public_key_hex(&f.key));
    let target = shown(&inbox, &f.site.did());
    let out = decide_with_keys(&inbox, &target, Decision::AlwaysAllowScope, &Lasting::Hour, chrono::Utc::now(), &[]).unwrap();
    assert!(out.message.starts_with("Pinned until"), "{}", out.message);
    let id = t.conversation.interaction_id.clone();
    let t = intent::reply(f.store.clone(), &f.key, &id, FlowType::InformationResponse, "Grace Hopper", None).await.unwrap();
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "verified");
    // The hour is over: the site's next answer is kept, but as a first contact again, and
    // its key asks to be pinned.
    let mut entry = f.store.trust_get(&f.site.did()).unwrap().unwrap();
    entry.policy.grant_until.insert(intent::SCOPE.into(), "2020-01-01T00:00:00Z".into());
    f.store.trust_update(&entry.public_key, None, &entry.policy, None).unwrap();
    let t = intent::reply(f.store.clone(), &f.key, &id, FlowType::InformationResponse, "7 pm", None).await.unwrap();
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "new_key", "{:?}", t.received.verdict);
    assert!(f.store.pending_list().unwrap().iter().any(|p| p.public_key == f.site.did()), "it asks again");
    // Pinned again, for good: verified from then on.
    let out = gatehouse_app::consent::decide(&inbox, &target, Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert!(out.message.starts_with("Pinned for good"), "{}", out.message);
    assert!(f.store.trust_get(&f.site.did()).unwrap().unwrap().policy.grant_until.is_empty());
}

#[tokio::test]
async fn an_error_turn_ends_the_interaction() {
    let f = fixture().await;
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "A table for 25 people under Smith tomorrow at 8pm", None).await.unwrap();
    assert_eq!(t.received.flow_type, "error");
    assert_eq!((t.conversation.state.as_str(), t.conversation.status.as_deref()), ("failed", Some("invalid_request")));
}

#[tokio::test]
async fn tampered_replayed_misaddressed_and_foreign_answers_are_refused_and_kept() {
    let f = fixture().await;
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "Book a table for 4", None).await.unwrap();
    intent::pin(&f.store, &f.origin, &f.site.did()).unwrap();
    let id = t.conversation.interaction_id.clone();
    let say = |m: &'static str| {
        let (s, k, id) = (f.store.clone(), f.key.clone(), id.clone());
        async move { intent::reply(s, &k, &id, FlowType::InformationResponse, m, None).await.unwrap() }
    };

    f.site.set(|s| s.tamper = true);
    let t = say("Ada Lovelace").await;
    assert!(!t.received.accepted);
    assert!(t.received.warning.as_ref().unwrap().contains("does not check out"), "{:?}", t.received.warning);
    assert_eq!(t.conversation.state, "open", "a refused answer changes nothing");
    f.site.set(|s| s.tamper = false);

    // The site remembers the name from the refused turn; the next answer asks for the date.
    let t = say("Ada Lovelace").await;
    assert!(t.received.accepted, "{:?}", t.received.warning);
    f.site.set(|s| s.replay = true);
    let t = say("tomorrow").await;
    assert!(!t.received.accepted);
    assert!(t.received.warning.as_ref().unwrap().contains("replayed"), "{:?}", t.received.warning);
    f.site.set(|s| {
        s.replay = false;
        s.wrong_interaction = true;
    });
    let t = say("tomorrow").await;
    assert!(!t.received.accepted);
    assert!(t.received.warning.as_ref().unwrap().contains("not \""), "{:?}", t.received.warning);
    f.site.set(|s| s.wrong_interaction = false);

    // Another key than the one pinned.
    let impostor = gatehouse_uamp::did::PublicKey::Ed25519(SigningKey::from_bytes(&[99; 32]).verifying_key()).did_key();
    f.store.iw_site_pin(&f.origin, None).unwrap();
    intent::pin(&f.store, &f.origin, &impostor).unwrap();
    let t = say("tomorrow").await;
    assert!(!t.received.accepted);
    assert!(t.received.warning.as_ref().unwrap().contains("not by the key you pinned"), "{:?}", t.received.warning);
    let view = intent::view(&f.store, &id).unwrap().unwrap();
    assert_eq!(view.messages.iter().filter(|m| !m.accepted).count(), 4, "every refused answer is on record");
}

/// Books a table for 4 under Ada Lovelace tomorrow at 7pm, the site's key pinned; returns
/// the last turn (the site's outcome).
async fn book(f: &Fixture) -> intent::Turn {
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "Book a table for 4 under Ada Lovelace", None).await.unwrap();
    intent::pin(&f.store, &f.origin, &f.site.did()).unwrap();
    let id = t.conversation.interaction_id.clone();
    let mut last = t;
    for m in ["tomorrow", "at 7pm"] {
        last = intent::reply(f.store.clone(), &f.key, &id, FlowType::InformationResponse, m, None).await.unwrap();
        if last.received.flow_type == "execution_result" {
            break;
        }
    }
    last
}

#[tokio::test]
async fn a_booking_reference_changed_after_signing_is_refused_not_kept_as_the_outcome() {
    let f = fixture().await;
    f.site.set(|s| s.forge_external_id = true);
    let t = book(&f).await;
    assert_eq!(t.received.flow_type, "execution_result", "{}", t.received.message);
    assert!(!t.received.accepted, "the signature covers external_id: {:?}", t.received.verdict);
    assert!(t.received.warning.as_ref().unwrap().contains("does not check out"), "{:?}", t.received.warning);
    assert_eq!((t.conversation.state.as_str(), t.conversation.external_id.as_deref()), ("open", None), "nothing forged became the outcome");
}

#[tokio::test]
async fn an_answer_signed_under_the_first_scheme_is_read_but_its_outcome_stays_a_claim() {
    let f = fixture().await;
    f.site.set(|s| {
        s.first_scheme = true;
        s.forge_external_id = true;
    });
    let t = book(&f).await;
    assert_eq!(t.received.flow_type, "execution_result", "{}", t.received.message);
    assert!(t.received.accepted, "the message itself is signed: {:?}", t.received.warning);
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "first_scheme");
    assert!(t.received.warning.as_ref().unwrap().contains("claims"), "{:?}", t.received.warning);
    assert_eq!(t.received.envelope["external_id"], "RES-FORGED", "the claim is kept as it came, to be shown as one");
    assert_eq!((t.conversation.status.as_deref(), t.conversation.external_id.as_deref()), (None, None), "a claim is not the outcome");
}

#[tokio::test]
async fn an_invalid_manifest_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let site = Site::new();
    site.set(|s| s.bad_manifest = true);
    let origin = spawn(site).await;
    let e = intent::add_site(store.clone(), &origin).await.unwrap_err();
    assert_eq!(e.code().name(), "BAD_MANIFEST");
    assert!(e.to_string().contains("/capabilities/0/description"), "{e}");
    assert!(store.iw_sites().unwrap().is_empty());
}

#[tokio::test]
async fn a_markdown_answer_with_script_payloads_is_kept_inert() {
    let f = fixture().await;
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "What is on the menu tonight?", None).await.unwrap();
    let html = t.received.html.unwrap();
    assert!(t.received.message.contains("<script>"), "the payload was really sent");
    assert!(html.contains("<table>"));
    for tag in html.split('<').skip(1).map(|t| t.split('>').next().unwrap_or("").to_lowercase()) {
        let name = tag.trim_start_matches('/').split_whitespace().next().unwrap_or("");
        assert!(!["script", "img"].contains(&name), "<{tag}>");
        assert!(!tag.split_whitespace().skip(1).any(|a| a.starts_with("on")) && !tag.contains("javascript:"), "<{tag}>");
    }
}

#[tokio::test]
async fn a_site_key_the_user_blocked_or_revoked_is_refused_and_never_asks() {
    let f = fixture().await;
    let t = intent::start(f.store.clone(), &f.key, &f.origin, None, "Book a table for 3", None).await.unwrap();
    intent::pin(&f.store, &f.origin, &f.site.did()).unwrap();
    let id = t.conversation.interaction_id.clone();
    let t = intent::reply(f.store.clone(), &f.key, &id, FlowType::InformationResponse, "Grace Hopper", None).await.unwrap();
    assert_eq!(t.received.verdict.as_ref().unwrap()["kind"], "verified");
    for (how, act) in [("revoked", 0), ("blocked", 1)] {
        if act == 0 {
            f.store.revoke(&f.site.did(), "leaked", "2026-11-26T00:00:00Z").unwrap();
        } else {
            f.store.unrevoke(&f.site.did()).unwrap();
            f.store.block(&f.site.did(), "spam", "2026-11-26T00:00:00Z").unwrap();
        }
        let t = intent::reply(f.store.clone(), &f.key, &id, FlowType::InformationResponse, "7 pm", None).await.unwrap();
        assert!(!t.received.accepted, "{how}: {:?}", t.received);
        assert!(t.received.warning.as_deref().unwrap_or_default().contains(&format!("a key you {how}")), "{:?}", t.received.warning);
        assert!(!f.store.pending_list().unwrap().iter().any(|p| p.public_key == f.site.did()), "{how}: it does not ask");
    }
}
