//! EPP v1.1 over loopback HTTP, with the envelopes the reference library made
//! (tests/data/epp-reference-1.1): integrity and provenance checked, each failure its own
//! code and verification step; a revoked sender refused; a trust entry's capability
//! limit applied; the fields shown in plain words in the receipt's detail.

use crate::common::*;
use gatehouse_store::CapabilityLimit;

fn data() -> serde_json::Value {
    let path = format!("{}/../../tests/data/epp-reference-1.1/envelopes.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn envelope<'a>(d: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    &d["envelopes"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap()["envelope"]
}

fn code(receipt: &serde_json::Value) -> &str {
    receipt["error"]["code"].as_str().unwrap_or("")
}

async fn inbox(d: &serde_json::Value) -> TestInbox {
    let inbox = TestInbox::start_for_vectors(d["keys"]["recipient"]["public_hex"].as_str().unwrap()).await;
    inbox.trust(d["keys"]["sender"]["public_hex"].as_str().unwrap(), "Shop", policy(&["orders"]));
    inbox
}

/// The steps the detail shows for the receipt with this id.
fn steps(inbox: &TestInbox, receipt_id: &str) -> Vec<(String, String)> {
    let detail = gatehouse_app::replies::detail(&crate::common::ctx(&inbox.store), receipt_id).unwrap();
    detail.steps.iter().map(|s| (s.name.to_string(), s.state.to_string())).collect()
}

fn state<'a>(steps: &'a [(String, String)], name: &str) -> &'a str {
    &steps.iter().find(|(n, _)| n == name).unwrap().1
}

#[tokio::test]
async fn integrity_and_provenance_are_checked_each_with_its_own_code_and_step() {
    let d = data();
    let inbox = inbox(&d).await;
    for (name, status, expected) in [
        ("eppctl", 200, ""),
        ("plain", 200, ""),
        ("integrity", 200, ""),
        ("integrity-sha512", 200, ""),
        ("unicode-integrity", 200, ""),
        ("capabilities", 200, ""),
        ("provenance", 200, ""),
        ("payment-stake", 200, ""),
        ("integrity-mismatch", 400, "INTEGRITY_MISMATCH"),
        ("provenance-broken", 400, "PROVENANCE_INVALID"),
    ] {
        let (got, _, receipt) = inbox.post_json(envelope(&d, name)).await;
        assert_eq!((got, code(&receipt)), (status, expected), "{name}: {receipt}");
    }
    let receipts = inbox.store.receipts(50, 0).unwrap();
    let id_of = |code: &str| receipts.iter().find(|r| r.code.as_deref() == Some(code)).unwrap().receipt_id.clone();
    let s = steps(&inbox, &id_of("INTEGRITY_MISMATCH"));
    assert_eq!((state(&s, "signature"), state(&s, "integrity"), state(&s, "provenance")), ("passed", "failed", "not-checked"));
    let s = steps(&inbox, &id_of("PROVENANCE_INVALID"));
    assert_eq!((state(&s, "integrity"), state(&s, "provenance"), state(&s, "trust")), ("absent", "failed", "not-checked"));
    let rejected = inbox.store.receipts(50, 0).unwrap();
    let msg = rejected.iter().find(|r| r.code.as_deref() == Some("PROVENANCE_INVALID")).unwrap().message.clone().unwrap_or_default();
    assert!(msg.contains("attestation 2 (auditor"), "{msg}");
    inbox.stop().await;
}

#[tokio::test]
async fn the_detail_says_what_the_v11_fields_mean() {
    let d = data();
    let inbox = inbox(&d).await;
    for name in ["provenance", "capabilities", "payment-stake", "plain"] {
        let (status, _, r) = inbox.post_json(envelope(&d, name)).await;
        assert_eq!(status, 200, "{name}: {r}");
    }
    let receipts = inbox.store.receipts(50, 0).unwrap();
    let detail_of = |id: &str| {
        let r = receipts.iter().find(|r| r.envelope_id.as_deref() == Some(id)).unwrap();
        gatehouse_app::replies::detail(&crate::common::ctx(&inbox.store), &r.receipt_id).unwrap()
    };
    let p = detail_of(envelope(&d, "provenance")["envelope_id"].as_str().unwrap());
    let x = p.extras.unwrap();
    assert_eq!(x.integrity.as_deref(), Some("sha256"));
    assert_eq!(x.provenance.iter().map(|a| a.role.as_str()).collect::<Vec<_>>(), ["author", "auditor"]);
    assert_eq!(x.provenance[1].statement.as_deref(), Some("Reviewed: no instructions to the assistant"));
    assert!(p.steps.iter().all(|s| s.state == "passed"), "{:?}", p.steps);
    let c = detail_of(envelope(&d, "capabilities")["envelope_id"].as_str().unwrap()).extras.unwrap();
    assert!(c.capabilities.contains(&"read files in ~/Documents/orders".to_string()), "{:?}", c.capabilities);
    let m = detail_of(envelope(&d, "payment-stake")["envelope_id"].as_str().unwrap()).extras.unwrap();
    assert_eq!(
        m.inert.iter().map(|i| (i.field.as_str(), i.summary.as_str())).collect::<Vec<_>>(),
        [("payment", "0.50 USDC on solana"), ("stake", "100 USDC on solana")]
    );
    let plain = detail_of(envelope(&d, "plain")["envelope_id"].as_str().unwrap());
    assert!(plain.extras.is_none());
    assert_eq!(state(&plain.steps.iter().map(|s| (s.name.to_string(), s.state.to_string())).collect::<Vec<_>>(), "integrity"), "absent");
    inbox.stop().await;
}

#[tokio::test]
async fn a_revoked_sender_is_refused_and_never_asks_again() {
    let d = data();
    let inbox = inbox(&d).await;
    let sender = d["keys"]["sender"]["public_hex"].as_str().unwrap();
    assert!(gatehouse_app::trust::revoke(&crate::common::ctx(&inbox.store), sender, "key leaked", chrono::Utc::now()).unwrap());
    let (status, _, r) = inbox.post_json(envelope(&d, "plain")).await;
    assert_eq!((status, code(&r)), (403, "SENDER_REVOKED"), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("key leaked"), "{r}");
    assert!(inbox.store.trust_get(sender).unwrap().is_some(), "its entry (and history) stays");
    assert!(inbox.store.pending_list().unwrap().is_empty(), "a revoked key does not knock");
    assert!(inbox.store.audit_list(10).unwrap().iter().any(|a| a.action == "trust.revoke"));
    // Taken back: the next envelope is accepted.
    assert!(gatehouse_app::trust::unrevoke(&crate::common::ctx(&inbox.store), sender, chrono::Utc::now()).unwrap());
    let (status, _, r) = inbox.post_json(envelope(&d, "integrity")).await;
    assert_eq!(status, 200, "{r}");
    inbox.stop().await;
}

#[tokio::test]
async fn a_trust_entry_limits_or_requires_capabilities() {
    let d = data();
    let inbox = inbox(&d).await;
    let sender = d["keys"]["sender"]["public_hex"].as_str().unwrap();
    let limited = |allowed: serde_json::Value, require: bool| {
        let facts = gatehouse_store::Facts::epp(gatehouse_store::EppFacts { capabilities: Some(CapabilityLimit { require, allowed }), ..Default::default() });
        inbox.store.trust_update(sender, None, &policy(&["orders"]), Some(&facts)).unwrap();
    };
    // More than it may: refused, naming what is beyond.
    limited(serde_json::json!({"actions": ["notify"]}), false);
    let (status, _, r) = inbox.post_json(envelope(&d, "capabilities")).await;
    assert_eq!((status, code(&r)), (403, "POLICY_DENIED"), "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("create_calendar_event") && msg.contains("read files in ~/Documents/orders") && !msg.contains("notify,"), "{msg}");
    // Declaring nothing is fine unless required.
    let (status, _, _) = inbox.post_json(envelope(&d, "plain")).await;
    assert_eq!(status, 200);
    limited(serde_json::json!({}), true);
    let (status, _, r) = inbox.post_json(envelope(&d, "integrity")).await;
    assert_eq!((status, code(&r)), (403, "POLICY_DENIED"), "{r}");
    // Within the limit: accepted.
    let all = envelope(&d, "capabilities").get("capabilities").unwrap().clone();
    limited(all, true);
    let (status, _, r) = inbox.post_json(envelope(&d, "capabilities")).await;
    assert_eq!(status, 200, "{r}");
    inbox.stop().await;
}

/// The envelope with one field no signature covers set to `v`.
fn with(env: &serde_json::Value, field: &str, v: serde_json::Value) -> serde_json::Value {
    let mut e = env.clone();
    e[field] = v;
    e
}

#[tokio::test]
async fn a_copy_with_unsigned_fields_changed_is_judged_by_what_was_signed_first() {
    let d = data();
    let inbox = inbox(&d).await;
    let plain = envelope(&d, "plain");
    let (status, _, r) = inbox.post_json(plain).await;
    assert_eq!(status, 200, "{r}");
    // Captured and posted again with a made-up hash, or an attestation that verifies
    // nothing, or a malformed field: still the same signed envelope, so a replay.
    let bogus_integrity = serde_json::json!({"alg": "sha256", "hash": "00".repeat(32)});
    let bogus_provenance = serde_json::json!({"content_hash": "00", "entries": [{"role": "author", "identity": "ab".repeat(32), "timestamp": "2026-01-01T00:00:00Z", "signature": "AAAA"}]});
    for (field, v) in
        [("integrity", bogus_integrity.clone()), ("provenance", bogus_provenance), ("capabilities", serde_json::json!({"network": {"protocols": ["gopher"]}}))]
    {
        let (status, _, r) = inbox.post_json(&with(plain, field, v)).await;
        assert_eq!((status, code(&r)), (409, "REPLAY_DETECTED"), "{field}: {r}");
    }
    // A revoked key is refused as revoked, whatever was added to its envelope.
    let sender = d["keys"]["sender"]["public_hex"].as_str().unwrap();
    assert!(gatehouse_app::trust::revoke(&crate::common::ctx(&inbox.store), sender, "key leaked", chrono::Utc::now()).unwrap());
    let (status, _, r) = inbox.post_json(&with(envelope(&d, "integrity"), "integrity", bogus_integrity)).await;
    assert_eq!((status, code(&r)), (403, "SENDER_REVOKED"), "{r}");
    inbox.stop().await;
}

#[tokio::test]
async fn malformed_v11_fields_are_invalid_format_as_the_reference_model_says() {
    let d = data();
    let inbox = inbox(&d).await;
    let plain = envelope(&d, "plain");
    for (field, v, part) in [
        ("capabilities", serde_json::json!({"network": {"protocols": ["gopher"]}}), "capabilities.network.protocols[0]"),
        ("payment", serde_json::json!({"amount": "-5", "currency": "USDC", "recipient": "0xabc", "chain": "base"}), "payment.amount"),
        ("stake", serde_json::json!({"contract": "c1", "chain": "base", "amount": "1", "currency": "ETH", "staker": "not-hex"}), "stake.staker"),
        ("integrity", serde_json::json!({"alg": "sha256", "hash": "zz"}), "integrity.hash"),
        (
            "provenance",
            serde_json::json!({"content_hash": "ab", "entries": [{"role": "author", "identity": "nothex", "timestamp": "2026-01-01T00:00:00Z", "signature": "AAAA"}]}),
            "provenance.entries[0].identity",
        ),
    ] {
        let (status, _, r) = inbox.post_json(&with(plain, field, v)).await;
        assert_eq!((status, code(&r)), (400, "INVALID_FORMAT"), "{field}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(part), "names the part: {r}");
    }
    // None of them used the envelope up: the envelope as signed is accepted afterwards.
    let (status, _, r) = inbox.post_json(plain).await;
    assert_eq!(status, 200, "{r}");
    inbox.stop().await;
}
