//! A trusted did:web agent's DID document changes: its message signed with a key the user
//! never saw is refused and shown as a key change to that contact (never taken on its
//! own); checking the document again (fetched over real HTTPS from a server on loopback)
//! takes the new keys, and a verified contact stays blocked until verified again.

use chrono::Utc;
use ed25519_dalek::SigningKey;
use gatehouse_app::consent::{self, ConsentItem, ConsentTarget, Decision};
use gatehouse_app::doors::uamp::UampDoor;
use gatehouse_app::{contacts, did_change};
use gatehouse_did_testhost::DidHost;
use gatehouse_store::{Policy, TrustEntry};
use gatehouse_uamp::{sign, Intent};
use serde_json::Value;

use crate::uamp::{cat, Peer, Uamp};

/// The agent's host, and a client that trusts its certificate alone.
struct Host {
    web: DidHost,
    client: reqwest::Client,
}

impl Host {
    fn start() -> Host {
        let web = DidHost::start();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_der(web.ca_der()).unwrap())
            .tls_built_in_root_certs(false)
            .https_only(true)
            .build()
            .unwrap();
        Host { web, client }
    }

    async fn keys(&self) -> Vec<gatehouse_store::UampKey> {
        gatehouse_app::doors::uamp::peer::keys_with(&self.client, self.web.did()).await.unwrap()
    }
}

fn ask(u: &Uamp, host: &Host, key: &SigningKey, frag: &str, text: &str) -> Value {
    let e = sign::draft(host.web.did(), &[u.inbox.did()], Intent::Ask, "text/plain", text);
    sign::sign_as(e, key, &host.web.kid(frag))
}

fn key_changes(u: &Uamp) -> Vec<ConsentItem> {
    consent::pending(&crate::common::ctx(&u.store)).unwrap().into_iter().filter(|i| matches!(i, ConsentItem::KeyChange { .. })).collect()
}

#[tokio::test]
async fn a_changed_did_document_is_a_key_change_the_user_checks_and_a_verified_contact_stays_blocked() {
    let u = Uamp::start(cat()).await;
    let host = Host::start();
    let (old, new, forger) = (SigningKey::from_bytes(&[40; 32]), SigningKey::from_bytes(&[41; 32]), SigningKey::from_bytes(&[42; 32]));
    host.web.publish(&[("key-1", &old)]);
    // Trusted as the user adds it: its keys read from its DID document then.
    let policy = Policy { allowed_scopes: vec!["ask".into()], ..Policy::default() };
    let facts = gatehouse_store::Facts::uamp(host.keys().await);
    u.store
        .trust_add(&TrustEntry {
            door: "uamp".into(),
            facts,
            public_key: host.web.did().to_string(),
            name: "Acme agent".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            policy,
        })
        .unwrap();
    let p = Peer { key: old.clone(), did: host.web.did().to_string(), token: Some(UampDoor::issue_token(&u.store, host.web.did(), Utc::now()).unwrap()) };
    let (s, b, _) = u.post(&p, &ask(&u, &host, &old, "key-1", "hello from the first key")).await;
    assert_eq!(s, 202, "{b}");
    contacts::verify(&crate::common::ctx(&u.store), host.web.did(), None, Utc::now()).unwrap();
    let code_before = contacts::list(&crate::common::ctx(&u.store)).unwrap()[0].keys[0].safety_code.clone();

    // The agent signs with a key its document did not hold: refused, and a key change waits.
    let (s, b, _) = u.post(&p, &ask(&u, &host, &new, "key-2", "from a key you never saw")).await;
    assert_eq!((s, b["reason"].as_str()), (401, Some("unknown_key")), "{b}");
    assert!(b["message"].as_str().unwrap().contains("check its DID document again"), "{b}");
    u.post(&p, &ask(&u, &host, &new, "key-2", "and again")).await;
    let kid = host.web.kid("key-2");
    match &key_changes(&u)[..] {
        [ConsentItem::KeyChange { sender, sender_name, key_id, reason, count: 2, verified: true, .. }] => {
            assert_eq!((sender.as_str(), sender_name.as_deref(), key_id, reason.as_str()), (host.web.did(), Some("Acme agent"), &kid, "unknown_key"));
        }
        other => panic!("one key change, counted twice, for a verified contact: {other:?}"),
    }
    assert_eq!(consent::waiting_count(&crate::common::ctx(&u.store)).unwrap(), 1);
    // A message cannot make it allowed: only the document can.
    let inbox = u.inbox.inbox().clone();
    let target = ConsentTarget::KeyChange { sender: host.web.did().to_string() };
    assert!(gatehouse_app::consent::decide(&inbox, &target, Decision::AlwaysAllowScope, Utc::now()).is_err());

    // Checked while the document is unchanged: nothing changes, the messages stay refused.
    let out = did_change::apply(&u.store, host.web.did(), &host.keys().await, Utc::now()).unwrap();
    assert!(out.added.is_empty() && !out.blocked, "{out:?}");
    assert!(out.message.contains("not signed by Acme agent"), "{}", out.message);
    assert!(key_changes(&u).is_empty());

    // The owner rotates its key; the agent writes again and the user checks the document.
    host.web.publish(&[("key-2", &new)]);
    assert_eq!(u.post(&p, &ask(&u, &host, &new, "key-2", "after the rotation")).await.0, 401, "nothing is fetched on arrival");
    assert_eq!(key_changes(&u).len(), 1);
    let out = did_change::apply(&u.store, host.web.did(), &host.keys().await, Utc::now()).unwrap();
    assert_eq!((out.added.len(), out.removed.len(), out.blocked), (1, 1, true), "{out:?}");
    assert!(out.message.contains("verify it again"), "{}", out.message);
    assert!(key_changes(&u).is_empty());
    let c = &contacts::list(&crate::common::ctx(&u.store)).unwrap()[0];
    assert!(c.key_changed && !c.verified, "{c:?}");
    assert_ne!(c.keys[0].safety_code, code_before, "the code follows the keys in the document");

    // Signed with the new key it arrives, but is held and cannot be allowed until verified.
    let (s, b, _) = u.post(&p, &ask(&u, &host, &new, "key-2", "held until verified")).await;
    assert_eq!((s, b["held_for_consent"].as_bool()), (202, Some(true)), "{b}");
    let sid = b["stream_id"].as_str().unwrap().to_string();
    let held = ConsentTarget::HeldAsk { stream_id: sid };
    let e = gatehouse_app::consent::decide(&inbox, &held, Decision::AllowOnce, Utc::now()).unwrap_err();
    assert!(e.to_string().contains("verify it first"), "{e}");
    // Its DID names no key and anyone can read it: pasting it verifies nothing; nor does
    // the key the document no longer holds. One of the keys it holds now does.
    let did_key = |k: &SigningKey| gatehouse_uamp::did::PublicKey::Ed25519(k.verifying_key()).did_key();
    for wrong in [host.web.did().to_string(), did_key(&old)] {
        assert!(contacts::verify(&crate::common::ctx(&u.store), host.web.did(), Some(&wrong), Utc::now()).is_err(), "{wrong} verifies nothing");
        assert!(contacts::list(&crate::common::ctx(&u.store)).unwrap()[0].key_changed, "still blocked after pasting {wrong}");
    }
    contacts::verify(&crate::common::ctx(&u.store), host.web.did(), Some(&did_key(&new)), Utc::now()).unwrap();
    gatehouse_app::consent::decide(&inbox, &held, Decision::AllowOnce, Utc::now()).unwrap();

    // A signature by another key under a kept key id: a key change too; kept as it is.
    let (s, b, _) = u.post(&p, &ask(&u, &host, &forger, "key-2", "not really Acme")).await;
    assert_eq!((s, b["reason"].as_str()), (401, Some("invalid_signature")), "{b}");
    assert!(matches!(&key_changes(&u)[..], [ConsentItem::KeyChange { reason, .. }] if reason == "invalid_signature"));
    let out = gatehouse_app::consent::decide(&inbox, &target, Decision::Deny, Utc::now()).unwrap();
    assert!(out.message.contains("Kept Acme agent's keys"), "{}", out.message);
    assert!(key_changes(&u).is_empty());
    assert!(matches!(gatehouse_app::consent::decide(&inbox, &target, Decision::Deny, Utc::now()), Err(consent::ConsentError::Gone)));
}

#[tokio::test]
async fn an_untrusted_or_did_key_sender_with_a_bad_signature_is_no_key_change() {
    let u = Uamp::start(cat()).await;
    let p = u.trusted(43, &["ask"], Default::default());
    // A did:key carries its key: a bad signature there is just a bad signature.
    let forged =
        sign::sign_as(sign::draft(&p.did, &[u.inbox.did()], Intent::Ask, "text/plain", "x"), &SigningKey::from_bytes(&[44; 32]), &sign::kid_of(&p.key));
    let (s, b, _) = u.post(&p, &forged).await;
    assert_eq!(s, 401, "{b}");
    assert!(key_changes(&u).is_empty());
}
