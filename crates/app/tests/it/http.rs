//! The inbox over loopback HTTP: every row of spec 5.2 and 7.3, the check order of 5.1,
//! the shared vectors, pending senders, policy, the concurrent-replay race.

use crate::common::*;
use gatehouse_store::{ExecStatus, Policy, RateLimit};

fn code(receipt: &serde_json::Value) -> &str {
    receipt["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn shared_vectors_over_http_reach_their_verdicts_and_statuses() {
    let v = vectors("envelopes.json");
    let inbox = TestInbox::start_for_vectors(v["inbox_public_key"].as_str().unwrap()).await;
    inbox.trust(v["sender_public_key"].as_str().unwrap(), "ALICE", policy(&["support", "notifications"]));
    for case in v["vectors"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let expected = case["expected"].as_str().unwrap();
        let (status, _, receipt) = inbox.post_json(&case["envelope"]).await;
        // Every receipt echoes the envelope_id it could read.
        assert_eq!(receipt["envelope_id"], case["envelope"]["envelope_id"], "{name}");
        if expected == "accepted" {
            assert_eq!((status, receipt["status"].as_str()), (200, Some("accepted")), "{name}: {receipt}");
            assert_eq!(receipt["executor"], "noop");
        } else {
            assert_eq!(code(&receipt), expected, "{name}: {receipt}");
            let want = match expected {
                "INVALID_SIGNATURE" | "UNTRUSTED_SENDER" => 401,
                "POLICY_DENIED" => 403,
                _ => 400,
            };
            assert_eq!(status, want, "{name}");
        }
    }
    assert_eq!(inbox.store.count_envelopes().unwrap(), 11);
    // The untrusted sender knocked, so the user can approve it (and the trusted sender
    // that wrote about a scope it is not allowed asks about that scope).
    let pending: Vec<_> = inbox.store.pending_list().unwrap().into_iter().filter(|p| inbox.store.trust_get(&p.public_key).unwrap().is_none()).collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].public_key, v["untrusted_public_key"]);
    assert_eq!(pending[0].scopes_tried, vec!["support".to_string()]);
    // Replaying every accepted vector is REPLAY_DETECTED with 409.
    for case in v["vectors"].as_array().unwrap().iter().filter(|c| c["expected"] == "accepted") {
        let (status, _, receipt) = inbox.post_json(&case["envelope"]).await;
        assert_eq!((status, code(&receipt)), (409, "REPLAY_DETECTED"));
    }
    inbox.stop().await;
}

#[tokio::test]
async fn rfc8032_vectors_are_accepted_by_a_star_policy() {
    let v = vectors("rfc8032_vectors.json");
    for case in v["cases"].as_array().unwrap() {
        // These cases share one nonce, so each gets a fresh inbox.
        let inbox = TestInbox::start_for_vectors(v["keys"]["recipient_pub_hex"].as_str().unwrap()).await;
        inbox.trust(v["keys"]["sender_pub_hex"].as_str().unwrap(), "RFC8032", policy(&["*"]));
        let (status, _, receipt) = inbox.post_json(&case["envelope"]).await;
        if case["expected_valid"].as_bool().unwrap() && case["envelope"].get("integrity").is_some() {
            // The signature verifies (the vector's point: v1.1 fields are unsigned), and the
            // made-up integrity hash is then checked on its own and found wrong.
            assert_eq!((status, code(&receipt)), (400, "INTEGRITY_MISMATCH"), "{}: {receipt}", case["name"]);
        } else if case["expected_valid"].as_bool().unwrap() {
            assert_eq!(status, 200, "{}: {receipt}", case["name"]);
        } else {
            assert_eq!((status, code(&receipt)), (401, "INVALID_SIGNATURE"), "{}", case["name"]);
        }
        inbox.stop().await;
    }
}

#[tokio::test]
async fn malformed_input_gets_an_invalid_format_receipt() {
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    for body in ["", "not json", "[1,2]", "{\"version\":\"1\"", "\u{feff}{}"] {
        let (status, _, receipt) = inbox.post(body.to_string()).await;
        assert_eq!((status, code(&receipt)), (400, "INVALID_FORMAT"), "{body:?}");
        assert_eq!(receipt["status"], "rejected");
        assert!(receipt["envelope_id"].is_null());
        assert!(!receipt["error"]["message"].as_str().unwrap().is_empty());
    }
    // Duplicate keys: one signed field must have one meaning.
    let env = inbox.signed(&key(1), "support", "hi").to_string();
    let dup = env.replacen("\"scope\":\"support\"", "\"scope\":\"support\",\"scope\":\"admin\"", 1);
    let (status, _, receipt) = inbox.post(dup).await;
    assert_eq!((status, code(&receipt)), (400, "INVALID_FORMAT"));
    assert!(receipt["error"]["message"].as_str().unwrap().contains("duplicate"));
    // Every rejection is kept for the user, with what arrived.
    let receipts = inbox.store.receipts(100, 0).unwrap();
    assert_eq!(receipts.len(), 6);
    assert_eq!(receipts[1].body.as_deref(), Some("\u{feff}{}"));
    inbox.stop().await;
}

#[tokio::test]
async fn size_limits_inbox_wide_and_per_sender() {
    let sender = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&sender), "Alice", Policy { max_envelope_size: 2000, ..policy(&["*"]) });
    // Over 10 MB: refused before parsing, still a receipt.
    let huge = vec![b' '; 10 * 1024 * 1024 + 1];
    let (status, _, receipt) = inbox.post(huge).await;
    assert_eq!((status, code(&receipt)), (413, "SIZE_EXCEEDED"));
    // Over this sender's limit.
    let big = inbox.signed(&sender, "support", &"x".repeat(3000));
    let (status, _, receipt) = inbox.post_json(&big).await;
    assert_eq!((status, code(&receipt)), (413, "SIZE_EXCEEDED"));
    assert_eq!(receipt["envelope_id"], big["envelope_id"]);
    let small = inbox.signed(&sender, "support", "fits");
    assert_eq!(inbox.post_json(&small).await.0, 200);
    inbox.stop().await;
}

#[tokio::test]
async fn rate_limits_count_accepted_envelopes_and_say_when_to_retry() {
    let sender = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let limits = RateLimit { max_per_hour: Some(2), max_per_day: Some(10) };
    inbox.trust(&pubhex(&sender), "Alice", Policy { rate_limit: limits, ..policy(&["support"]) });
    // Rejections do not count against the limit.
    let denied = inbox.signed(&sender, "other", "x");
    assert_eq!(code(&inbox.post_json(&denied).await.2), "POLICY_DENIED");
    for _ in 0..2 {
        assert_eq!(inbox.post_json(&inbox.signed(&sender, "support", "x")).await.0, 200);
    }
    let (status, retry, receipt) = inbox.post_json(&inbox.signed(&sender, "support", "x")).await;
    assert_eq!((status, code(&receipt)), (429, "RATE_LIMITED"));
    // Counted in whole minutes: free again an hour after the end of the minute the two
    // acceptances fell in.
    let secs: u64 = retry.expect("Retry-After header").parse().unwrap();
    assert!((3600..=3660).contains(&secs), "{secs}");
    inbox.stop().await;
}

#[tokio::test]
async fn policy_scopes_delegation_and_consent_hold() {
    let alice = key(1);
    let bob = key(3);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", Policy { allow_delegation: false, ..policy(&["support", "billing"]) });
    inbox.trust(&pubhex(&bob), "Bob", Policy { hold_for_consent: true, ..policy(&["*"]) });

    let (status, _, r) = inbox.post_json(&inbox.signed(&alice, "admin", "x")).await;
    assert_eq!((status, code(&r)), (403, "POLICY_DENIED"));
    assert!(r["error"]["message"].as_str().unwrap().contains("admin"));

    let mut d = inbox.draft("support", "for my patient");
    d.on_behalf_of = Some(pubhex(&key(9)));
    let (status, _, r) = inbox.post_json(&d.sign(&alice, chrono::Utc::now())).await;
    assert_eq!((status, code(&r)), (403, "POLICY_DENIED"));
    // Bob's policy allows delegation (the default) but holds for consent.
    let (status, _, r) = inbox.post_json(&d.sign(&bob, chrono::Utc::now())).await;
    assert_eq!(status, 200);
    assert_eq!(r["x-held-for-consent"], true);
    let stored = inbox.store.envelopes(10, 0).unwrap();
    assert_eq!(stored[0].exec_status, ExecStatus::Held);
    assert_eq!(stored[0].on_behalf_of.as_deref(), Some(pubhex(&key(9)).as_str()));
    inbox.stop().await;
}

#[tokio::test]
async fn check_order_follows_spec_5_1_over_http() {
    let alice = key(1);
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));
    let now = chrono::Utc::now();
    // Expired and badly signed: EXPIRED.
    let mut d = inbox.draft("support", "late");
    d.ttl = chrono::Duration::seconds(1);
    let mut e = d.sign(&alice, now - chrono::Duration::hours(1));
    e["payload"]["prompt"] = "changed".into();
    assert_eq!(code(&inbox.post_json(&e).await.2), "EXPIRED");
    // Wrong recipient from an untrusted sender: WRONG_RECIPIENT, and no pending request.
    let w = gatehouse_epp::Draft::new(&pubhex(&key(8)), "support", "hi").sign(&stranger, now);
    let (status, _, r) = inbox.post_json(&w).await;
    assert_eq!((status, code(&r)), (400, "WRONG_RECIPIENT"));
    assert!(inbox.store.pending_list().unwrap().is_empty());
    // Untrusted with a bad signature: INVALID_SIGNATURE (verified before trust lookup),
    // and a forged knock leaves no pending request.
    let mut u = inbox.signed(&stranger, "support", "hi");
    u["scope"] = "other".into();
    assert_eq!(code(&inbox.post_json(&u).await.2), "INVALID_SIGNATURE");
    assert!(inbox.store.pending_list().unwrap().is_empty());
    // Replay is checked before trust: a replayed accepted envelope is REPLAY even after
    // the sender is removed.
    let ok = inbox.signed(&alice, "support", "once");
    assert_eq!(inbox.post_json(&ok).await.0, 200);
    inbox.store.trust_remove(&pubhex(&alice)).unwrap();
    assert_eq!(code(&inbox.post_json(&ok).await.2), "REPLAY_DETECTED");
    // Unsupported version with otherwise valid fields.
    let mut v2 = inbox.signed(&alice, "support", "v2");
    v2["version"] = "2".into();
    let (status, _, r) = inbox.post_json(&v2).await;
    assert_eq!((status, code(&r)), (400, "UNSUPPORTED_VERSION"));
    inbox.stop().await;
}

#[tokio::test]
async fn pending_sender_is_approved_and_then_accepted() {
    let stranger = key(7);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    for scope in ["support", "billing", "support"] {
        let (status, _, r) = inbox.post_json(&inbox.signed(&stranger, scope, "hello?")).await;
        assert_eq!((status, code(&r)), (401, "UNTRUSTED_SENDER"));
    }
    let p = &inbox.store.pending_list().unwrap()[0];
    assert_eq!(p.count, 3);
    assert_eq!(p.scopes_tried, vec!["support", "billing"]);
    // Approving turns the request into a trust entry (keys compare case-insensitively).
    inbox.trust(&p.public_key.to_ascii_uppercase(), "Stranger", policy(&["support"]));
    assert!(inbox.store.pending_list().unwrap().is_empty());
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "now?")).await.0, 200);
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replays_accept_exactly_once() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", policy(&["*"]));
    for round in 0..5 {
        let env = inbox.signed(&alice, "support", &format!("race {round}")).to_string();
        let client = reqwest::Client::new();
        let url = inbox.submit_url();
        let posts = (0..24).map(|_| {
            let (client, url, env) = (client.clone(), url.clone(), env.clone());
            tokio::spawn(async move { client.post(url).body(env).send().await.unwrap().status().as_u16() })
        });
        let mut statuses = Vec::new();
        for p in posts {
            statuses.push(p.await.unwrap());
        }
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 23, "{statuses:?}");
    }
    assert_eq!(inbox.store.count_envelopes().unwrap(), 5);
    inbox.stop().await;
}

#[tokio::test]
async fn health_and_inbox_info() {
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    let h: serde_json::Value = reqwest::get(format!("{}/health", inbox.url)).await.unwrap().json().await.unwrap();
    assert_eq!(h["status"], "ok");
    let i: serde_json::Value = reqwest::get(format!("{}/epp/v1/inbox", inbox.url)).await.unwrap().json().await.unwrap();
    assert_eq!(i["public_key"], pubhex(&key(2)));
    inbox.stop().await;
}

#[tokio::test]
async fn a_corpus_of_hostile_input_gets_clear_receipts_and_nothing_is_accepted() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", policy(&["*"]));
    let good = inbox.signed(&alice, "support", "fine").to_string();
    let mut corpus: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good.as_bytes()[..good.len() / 2].to_vec(), "INVALID_FORMAT"),
        ("deep nesting", format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(), "INVALID_FORMAT"),
        ("NUL byte in JSON", good.replacen("\"fine\"", "\"fi\u{0}ne\"", 1).into_bytes(), "INVALID_FORMAT"),
        (
            "invalid UTF-8",
            {
                let mut b = good.clone().into_bytes();
                let i = b.len() / 2;
                b[i] = 0xff;
                b
            },
            "INVALID_FORMAT",
        ),
        ("duplicate keys", good.replacen("\"version\":\"1\"", "\"version\":\"1\",\"version\":\"1\"", 1).into_bytes(), "INVALID_FORMAT"),
        (
            "wrong type: payload",
            good.replacen("\"payload\":{", "\"payload\":[{", 1).replacen("},\"recipient\"", "}],\"recipient\"", 1).into_bytes(),
            "INVALID_FORMAT",
        ),
        ("number as version", good.replacen("\"version\":\"1\"", "\"version\":1", 1).into_bytes(), "INVALID_FORMAT"),
        ("huge string", format!("{{\"version\":\"1\",\"x\":\"{}\"}}", "a".repeat(9 * 1024 * 1024)).into_bytes(), "INVALID_FORMAT"),
        ("over the limit", vec![b'['; 10 * 1024 * 1024 + 10], "SIZE_EXCEEDED"),
        ("lone surrogate", good.replacen("\"fine\"", "\"\\ud800\"", 1).into_bytes(), "INVALID_FORMAT"),
        ("empty object", b"{}".to_vec(), "INVALID_FORMAT"),
        ("null", b"null".to_vec(), "INVALID_FORMAT"),
    ];
    // The escaped NUL is valid JSON and a valid prompt; the raw one is not.
    corpus.push(("escaped NUL is fine text", good.replacen("\"fine\"", "\"fi\\u0000ne\"", 1).into_bytes(), "INVALID_SIGNATURE"));
    for (name, body, want) in corpus {
        let (status, _, receipt) = inbox.post(body).await;
        assert_eq!(code(&receipt), want, "{name}: {receipt}");
        assert_eq!(receipt["status"], "rejected", "{name}");
        assert!(status >= 400, "{name}");
        assert!(!receipt["error"]["message"].as_str().unwrap_or("").is_empty(), "{name}");
    }
    assert_eq!(inbox.store.count_envelopes().unwrap(), 0, "nothing was accepted");
    // And the inbox still works.
    assert_eq!(inbox.post(good).await.0, 200);
    inbox.stop().await;
}

/// The running inbox decides on the registry as it last read it, and every commit checks
/// that nothing changed since: what another process (the CLI while `gatehouse serve` runs)
/// changes applies to the very next envelope, in both directions.
#[tokio::test]
async fn registry_changes_from_another_process_apply_to_the_next_envelope() {
    let (me, bob, eve) = (key(1), key(2), key(3));
    let inbox = TestInbox::start(&pubhex(&me), false).await;
    let cli = crate::common::another_store(inbox.dir.path());
    let trust = |k: &ed25519_dalek::SigningKey, scopes: &[&str]| {
        cli.trust_add(&gatehouse_store::TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: pubhex(k),
            name: "from the CLI".into(),
            added_at: "2026-11-23T09:00:00Z".into(),
            policy: policy(scopes),
        })
        .unwrap()
    };
    let send = |k: &ed25519_dalek::SigningKey, scope: &str, prompt: &str| inbox.signed(k, scope, prompt);

    trust(&bob, &["support"]);
    for i in 0..3 {
        let (status, _, r) = inbox.post_json(&send(&bob, "support", &format!("hello {i}"))).await;
        assert_eq!(status, 200, "{r}");
    }
    // Narrowed, blocked, removed: each refuses the next envelope.
    cli.trust_update(&pubhex(&bob), None, &policy(&["billing"]), None).unwrap();
    let (status, _, r) = inbox.post_json(&send(&bob, "support", "after the narrowing")).await;
    assert_eq!((status, code(&r)), (403, "POLICY_DENIED"), "{r}");
    cli.trust_update(&pubhex(&bob), None, &policy(&["support"]), None).unwrap();
    assert_eq!(inbox.post_json(&send(&bob, "support", "widened again")).await.0, 200);
    cli.block(&pubhex(&bob), "changed my mind", "2026-11-23T09:05:00Z").unwrap();
    let (status, _, r) = inbox.post_json(&send(&bob, "support", "after the block")).await;
    assert_eq!((status, code(&r)), (401, "UNTRUSTED_SENDER"), "{r}");
    // A block also took bob out of the registry: unblocked and trusted again, he is let in.
    cli.unblock(&pubhex(&bob)).unwrap();
    trust(&bob, &["support"]);
    assert_eq!(inbox.post_json(&send(&bob, "support", "unblocked")).await.0, 200);
    cli.trust_remove(&pubhex(&bob)).unwrap();
    let (status, _, r) = inbox.post_json(&send(&bob, "support", "after the removal")).await;
    assert_eq!((status, code(&r)), (401, "UNTRUSTED_SENDER"), "{r}");

    // An unknown sender refused once, then trusted from the CLI: the next one is accepted.
    let (status, _, r) = inbox.post_json(&send(&eve, "support", "knock knock")).await;
    assert_eq!((status, code(&r)), (401, "UNTRUSTED_SENDER"), "{r}");
    trust(&eve, &["support"]);
    let (status, _, r) = inbox.post_json(&send(&eve, "support", "let in")).await;
    assert_eq!(status, 200, "{r}");

    // Exactly the six accepted envelopes are stored, none of the refused ones.
    assert_eq!(inbox.store.count_envelopes().unwrap(), 6);
    inbox.stop().await;
}
