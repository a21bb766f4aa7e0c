//! EPP by email against a real Dovecot (Debian's dovecot-imapd, started here on loopback
//! in a temp dir, no TLS: loopback only): a backlog at start-up is read in order, envelope
//! mails are accepted or rejected by the same pipeline as HTTP and filed, ordinary mail is
//! left where it is, a mail arriving while Gatehouse waits in IDLE is picked up, the same
//! envelope mailed twice is a replay, and a wrong password is an error shown once, not a
//! retry loop. Receipts go back by mail through a real Exim, to known senders only unless
//! the user allows strangers, and never to the From of a mail whose envelope did not verify.

use std::time::Duration;

use crate::common::*;
use gatehouse_app::doors::email::Follow;
use gatehouse_email::imap::{self, Security};
use gatehouse_email::smtp::{MailReceipts, SmtpSecurity, Submission};
use gatehouse_email::Account;
use gatehouse_email_testservers::{Dovecot, Exim};

pub(crate) fn dovecot() -> Option<Dovecot> {
    Dovecot::start()
}

/// Waits (at most 20 s) until the account's row satisfies `ok`; says what it was if not.
pub(crate) async fn wait_account(store: &gatehouse_store::Store, what: &str, ok: impl Fn(&gatehouse_store::email::EmailAccountRow) -> bool) {
    for _ in 0..200 {
        if store.email_account("personal").unwrap().is_some_and(|a| ok(&a)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}: {:?}", store.email_account("personal").unwrap());
}

/// An inbox (key 1) following the account `personal`, with `trusted` in its registry.
pub(crate) async fn following(f: Follow, trusted: Option<&ed25519_dalek::SigningKey>) -> TestInbox {
    let acct = serde_json::to_value(&f.account).unwrap();
    let trusted = trusted.map(pubhex);
    TestInbox::start_email(
        &pubhex(&key(1)),
        |s| {
            s.email_account_put("personal", &acct, "2026-11-25T00:00:00Z").unwrap();
            if let Some(k) = trusted {
                // Let in from the clinic's mail: receipts go to that address.
                let policy = policy(&["support"]);
                let facts = gatehouse_store::Facts::epp(gatehouse_store::EppFacts { mail_address: Some("agent@clinic.example".into()), ..Default::default() });
                let entry = gatehouse_store::TrustEntry {
                    door: "epp".into(),
                    facts,
                    public_key: k,
                    name: "Alice".into(),
                    added_at: "2026-01-01T00:00:00Z".into(),
                    policy,
                };
                s.trust_add(&entry).unwrap();
            }
        },
        vec![f],
    )
    .await
}

pub(crate) fn account(port: u16) -> Account {
    Account {
        host: "127.0.0.1".into(),
        port,
        security: Security::Plain,
        user: "alice".into(),
        folder: "INBOX".into(),
        smtp: None,
        receipts: Default::default(),
        receipt_rate: Default::default(),
        certificate: None,
    }
}

/// Puts a mail in alice's INBOX, as delivery would.
pub(crate) async fn deliver(port: u16, mail: &str) {
    let mut s = imap::connect(&account(port), "secret").await.unwrap();
    s.append("INBOX", None, None, mail.replace('\n', "\r\n").as_bytes()).await.unwrap();
    s.logout().await.unwrap();
}

/// How many mails a folder holds.
pub(crate) async fn count(port: u16, folder: &str) -> u32 {
    let mut s = imap::connect(&account(port), "secret").await.unwrap();
    let n = s.examine(folder).await.map(|m| m.exists).unwrap_or(0);
    s.logout().await.unwrap();
    n
}

pub(crate) fn envelope_mail(env: &serde_json::Value, n: u32) -> String {
    format!(
        "From: Clinic <agent@clinic.example>\nTo: alice+gatehouse@example.com\nMessage-ID: <env{n}@clinic.example>\nSubject: results {n}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nAttached.\n--b\nContent-Type: application/epp+json\nContent-Disposition: attachment; filename=\"e.epp.json\"\n\n{env}\n--b--\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_by_mail_are_received_filed_and_never_accepted_twice() {
    let Some(dv) = dovecot() else { return };
    let port = dv.port;
    let alice = key(7);
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let first = probe.signed(&alice, "support", "lab results are in");
    let second = probe.signed(&alice, "support", "order confirmed");
    probe.stop().await;

    // A backlog before Gatehouse starts: two envelopes, a mail that is none of ours, and
    // an envelope attachment that is not an envelope.
    deliver(port, &envelope_mail(&first, 1)).await;
    deliver(port, "From: friend@example.com\nSubject: lunch?\n\nAre you free at noon?\n").await;
    deliver(port, &envelope_mail(&second, 2)).await;
    deliver(port, &envelope_mail(&serde_json::json!({"version": "1", "sender": "x", "signature": "y"}), 3)).await;

    let follow = Follow::new("personal".into(), account(port), "secret".into(), None);
    let inbox = following(follow, Some(&alice)).await;
    let store = inbox.store.clone();
    wait_account(&store, "the backlog handled", |a| a.last_uid == 4).await;
    let receipts = store.receipts(20, 0).unwrap();
    let accepted = receipts.iter().filter(|r| r.status == "accepted" && r.transport == "email").count();
    let rejected = receipts.iter().filter(|r| r.status != "accepted" && r.transport == "email").count();
    assert_eq!((accepted, rejected), (2, 1), "{receipts:?}");
    assert_eq!(count(port, "INBOX").await, 1, "the ordinary mail stays where it was");
    assert_eq!(count(port, "Gatehouse.Accepted").await, 2);
    assert_eq!(count(port, "Gatehouse.Rejected").await, 1);

    // While Gatehouse waits (IDLE), a new envelope arrives and is picked up; the same one
    // mailed again is a replay.
    wait_account(&store, "waiting in IDLE", |a| a.state == "idle").await;
    let third = inbox.signed(&alice, "support", "a third one");
    deliver(port, &envelope_mail(&third, 4)).await;
    deliver(port, &envelope_mail(&first, 5)).await;
    wait_account(&store, "the new mail handled", |a| a.last_uid == 6).await;
    let receipts = store.receipts(20, 0).unwrap();
    assert_eq!(receipts.iter().filter(|r| r.status == "accepted").count(), 3);
    assert!(receipts.iter().any(|r| r.code.as_deref() == Some("REPLAY_DETECTED")), "{receipts:?}");
    assert_eq!(count(port, "Gatehouse.Accepted").await, 3);
    assert_eq!(count(port, "Gatehouse.Rejected").await, 2);
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_too_large_to_read_is_left_where_it_is_and_an_oversize_envelope_is_refused() {
    let Some(dv) = dovecot() else { return };
    let alice = key(7);
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let fine = probe.signed(&alice, "support", "a normal one");
    // An envelope attachment larger than an envelope may be, in a mail the door reads.
    let big = probe.signed(&alice, "support", &"x".repeat(gatehouse_email::extract::MAX_ENVELOPE_BYTES + 1024));
    probe.stop().await;
    // Mails larger than the door reads at all (4 MiB): the user's holiday photos (no
    // envelope part), and one with an envelope part. Neither is downloaded or moved.
    let padding = "padding ".repeat(imap::MAX_MAIL_BYTES as usize / 8 + 1024);
    let photos = format!(
        "From: Mum <mum@family.example>\nTo: alice@example.com\nMessage-ID: <photos@family.example>\nSubject: photos\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nLook!\n--b\nContent-Type: image/jpeg\nContent-Disposition: attachment; filename=\"beach.jpg\"\n\n{padding}\n--b--\n"
    );
    deliver(dv.port, &photos).await;
    deliver(dv.port, &envelope_mail(&fine, 2).replace("Attached.", &padding)).await;
    deliver(dv.port, &envelope_mail(&big, 3)).await;
    deliver(dv.port, &envelope_mail(&fine, 4)).await;

    let inbox = following(Follow::new("personal".into(), account(dv.port), "secret".into(), None), Some(&alice)).await;
    let store = inbox.store.clone();
    wait_account(&store, "the four mails handled", |a| a.last_uid == 4).await;
    let receipts = email_receipts(&store);
    let mut codes: Vec<_> = receipts.iter().map(|r| (r.status.clone(), r.code.clone())).collect();
    codes.sort();
    assert_eq!(codes, [("accepted".to_string(), None), ("rejected".to_string(), Some("SIZE_EXCEEDED".to_string()))], "{receipts:?}");
    let why: Vec<&str> = receipts.iter().filter_map(|r| r.message.as_deref()).collect();
    assert!(why.iter().any(|m| m.starts_with("the envelope attachment is ")), "the envelope's size is the reason: {why:?}");
    // The two large mails stay in INBOX; the one that may carry an envelope is counted.
    assert_eq!((count(dv.port, "INBOX").await, count(dv.port, "Gatehouse.Rejected").await, count(dv.port, "Gatehouse.Accepted").await), (2, 1, 1));
    assert_eq!(store.email_account("personal").unwrap().unwrap().left_large, 1);
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_shown_and_not_retried() {
    let Some(dv) = dovecot() else { return };
    let inbox = following(Follow::new("personal".into(), account(dv.port), "wrong".into(), None), None).await;
    let store = inbox.store.clone();
    wait_account(&store, "the error shown", |a| a.state == "error").await;
    let a = store.email_account("personal").unwrap().unwrap();
    assert!(a.last_error.as_deref().is_some_and(|e| e.contains("refused the login for alice")), "{a:?}");
    // No second attempt: Dovecot's log would show each; the state stays as it is.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(store.email_account("personal").unwrap().unwrap().state, "error");
    inbox.stop().await;
}

pub(crate) fn sending(dv: &Dovecot, ex: &Exim, receipts: MailReceipts) -> Account {
    let mut a = account(dv.port);
    a.smtp =
        Some(Submission { host: "127.0.0.1".into(), port: ex.port, security: SmtpSecurity::Plain, user: "alice".into(), from: "alice@home.example".into() });
    a.receipts = receipts;
    a
}

pub(crate) fn follow_sending(a: &Account) -> Follow {
    Follow::new("personal".into(), a.clone(), "secret".into(), Some("secret".into()))
}

/// The receipts the inbox kept for mail, by the text of the envelope's prompt.
pub(crate) fn email_receipts(store: &gatehouse_store::Store) -> Vec<gatehouse_store::ReceiptRow> {
    store.receipts(50, 0).unwrap().into_iter().filter(|r| r.transport == "email").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_go_back_by_mail_to_known_senders_and_never_to_an_unverified_from() {
    let (Some(dv), Some(ex)) = (dovecot(), Exim::start()) else { return };
    let (alice, stranger) = (key(7), key(9));
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let known = probe.signed(&alice, "support", "lab results are in");
    let knock = probe.signed(&stranger, "support", "may I?");
    probe.stop().await;
    deliver(dv.port, &envelope_mail(&known, 1)).await;
    deliver(dv.port, &envelope_mail(&knock, 2)).await;
    deliver(dv.port, &envelope_mail(&serde_json::json!({"version": "1", "sender": "x", "signature": "y"}), 3)).await;
    // A copy of the known sender's envelope, mailed by someone else: a replay, not answered.
    deliver(dv.port, &envelope_mail(&known, 4).replace("From: Clinic <agent@clinic.example>", "From: victim@elsewhere.example")).await;

    let inbox = following(follow_sending(&sending(&dv, &ex, MailReceipts::Known)), Some(&alice)).await;
    let store = inbox.store.clone();
    wait_account(&store, "the backlog handled", |a| a.last_uid == 4).await;

    // One receipt mail: to the known sender, answering its mail, the receipt attached.
    let mails = ex.wait_delivered(1);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        ex.delivered().len(),
        1,
        "only the known sender's receipt is mailed: {:?}",
        ex.delivered()
            .iter()
            .map(|m| String::from_utf8_lossy(m).lines().filter(|l| l.starts_with("To:") || l.starts_with("In-Reply-To:")).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    );
    let m = mail_parser::MessageParser::default().parse(&mails[0]).unwrap();
    assert_eq!(m.to().and_then(|t| t.first()).and_then(|a| a.address()), Some("agent@clinic.example"));
    assert_eq!(m.in_reply_to().as_text(), Some("env1@clinic.example"));
    assert_eq!(m.subject(), Some("EPP receipt"), "the subject is ours, never what the mail said");
    let attached: serde_json::Value = serde_json::from_slice(m.attachments().next().expect("the receipt is attached").contents()).unwrap();
    assert_eq!(attached["status"], "accepted");
    assert_eq!(attached["envelope_id"], known["envelope_id"]);

    // What the inbox shows about each: where it came from and whether its receipt went back.
    let receipts = email_receipts(&store);
    assert_eq!(receipts.len(), 4, "{receipts:?}");
    for r in &receipts {
        let a = store.email_arrival_get(&r.receipt_id).unwrap().expect("every envelope mail is recorded");
        if r.code.as_deref() == Some("REPLAY_DETECTED") {
            assert_eq!(a.from_addr.as_deref(), Some("victim@elsewhere.example"));
            assert!(a.not_mailed.as_deref().is_some_and(|w| w.contains("replay")), "{a:?}");
            continue;
        }
        assert_eq!(a.from_addr.as_deref(), Some("agent@clinic.example"));
        match r.code.as_deref() {
            None => {
                assert_eq!(attached["receipt_id"], r.receipt_id.as_str());
                let sent = a.mailed_back.expect("queued");
                assert_eq!((sent.state.as_str(), sent.to_addr.as_str()), ("sent", "agent@clinic.example"));
            }
            Some("UNTRUSTED_SENDER") => assert!(a.not_mailed.as_deref().is_some_and(|w| w.contains("not in your trust registry")), "{a:?}"),
            Some(_) => assert!(a.not_mailed.as_deref().is_some_and(|w| w.contains("did not verify")), "{a:?}"),
        }
    }
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_waits_for_an_outgoing_server_that_is_down_and_strangers_are_answered_when_allowed() {
    let (Some(dv), Some(mut ex)) = (dovecot(), Exim::start()) else { return };
    ex.stop();
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let knock = probe.signed(&key(9), "support", "may I?");
    probe.stop().await;
    deliver(dv.port, &envelope_mail(&knock, 1)).await;

    let inbox = following(follow_sending(&sending(&dv, &ex, MailReceipts::Everyone)), None).await;
    let store = inbox.store.clone();
    wait_account(&store, "the knock handled", |a| a.last_uid == 1).await;
    let r = email_receipts(&store).remove(0);
    assert_eq!(r.code.as_deref(), Some("UNTRUSTED_SENDER"));
    // The server is down: the receipt stays queued with the reason, and is tried again.
    let mut waited = None;
    for _ in 0..100 {
        let a = store.email_arrival_get(&r.receipt_id).unwrap().unwrap();
        let m = a.mailed_back.expect("a stranger's receipt is mailed when the user allows it");
        if m.attempts >= 1 {
            waited = Some(m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waited = waited.expect("a first try");
    assert_eq!(waited.state, "queued");
    assert!(waited.last_error.as_deref().is_some_and(|e| e.contains("127.0.0.1")), "{waited:?}");

    ex.restart();
    let mails = ex.wait_delivered(1);
    let m = mail_parser::MessageParser::default().parse(&mails[0]).unwrap();
    let attached: serde_json::Value = serde_json::from_slice(m.attachments().next().unwrap().contents()).unwrap();
    assert_eq!(attached["error"]["code"], "UNTRUSTED_SENDER");
    for _ in 0..50 {
        if store.email_arrival_get(&r.receipt_id).unwrap().unwrap().mailed_back.unwrap().state == "sent" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.email_arrival_get(&r.receipt_id).unwrap().unwrap().mailed_back.unwrap().state, "sent");
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_and_a_recreated_folder_are_followed_again_without_losing_mail() {
    let Some(mut dv) = dovecot() else { return };
    let alice = key(7);
    let mut a = account(dv.port);
    a.folder = "Gatehouse-In".into();
    {
        let mut s = imap::connect(&a, "secret").await.unwrap();
        s.create("Gatehouse-In").await.unwrap();
        s.logout().await.unwrap();
    }
    let put = |n: u32, env: serde_json::Value| {
        let a = a.clone();
        async move {
            let mut s = imap::connect(&a, "secret").await.unwrap();
            s.append("Gatehouse-In", None, None, envelope_mail(&env, n).replace('\n', "\r\n").as_bytes()).await.unwrap();
            s.logout().await.unwrap();
        }
    };
    let inbox = following(Follow::new("personal".into(), a.clone(), "secret".into(), None), Some(&alice)).await;
    let store = inbox.store.clone();
    put(1, inbox.signed(&alice, "support", "before the restart")).await;
    wait_account(&store, "the first mail handled", |r| r.last_uid == 1 && r.state == "idle").await;

    // The server goes away while Gatehouse waits in IDLE, and comes back.
    dv.restart();
    put(2, inbox.signed(&alice, "support", "after the restart")).await;
    wait_account(&store, "the mail after the restart handled", |r| r.last_uid == 2).await;
    let validity = store.email_account("personal").unwrap().unwrap().uid_validity;

    // The folder is made anew (another UIDVALIDITY): its UIDs start over, and what is in
    // it is read from the first; nothing seen before is accepted twice.
    {
        let mut s = imap::connect(&a, "secret").await.unwrap();
        s.delete("Gatehouse-In").await.unwrap();
        s.create("Gatehouse-In").await.unwrap();
        s.logout().await.unwrap();
    }
    put(1, inbox.signed(&alice, "support", "in the new folder")).await;
    wait_account(&store, "the new folder read from its first UID", |r| r.uid_validity.is_some() && r.uid_validity != validity && r.last_uid == 1).await;
    let accepted: Vec<_> = email_receipts(&store).into_iter().filter(|r| r.status == "accepted").collect();
    assert_eq!(accepted.len(), 3, "{accepted:?}");
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_idle_is_asked_again_after_a_while() {
    let Some(dv) = Dovecot::start_without_idle() else { return };
    let mut s = imap::connect(&account(dv.port), "secret").await.unwrap();
    assert!(!s.capabilities().await.unwrap().has_str("IDLE"), "the server must not offer IDLE for this test to mean anything");
    s.logout().await.unwrap();
    let alice = key(7);
    let mut f = Follow::new("personal".into(), account(dv.port), "secret".into(), None);
    f.poll = Duration::from_millis(500);
    let inbox = following(f, Some(&alice)).await;
    let store = inbox.store.clone();
    // The user sees that the account is asked now and then rather than told at once.
    wait_account(&store, "polling for mail", |a| a.state == "polling").await;
    deliver(dv.port, &envelope_mail(&inbox.signed(&alice, "support", "polled"), 1)).await;
    wait_account(&store, "the mail picked up by polling", |a| a.last_uid == 1).await;
    assert_eq!(email_receipts(&store)[0].status, "accepted");
    inbox.stop().await;
}

/// A mail with an envelope, its headers as the test says (a relay writes From, Reply-To
/// and Subject as it likes).
fn relayed(env: &serde_json::Value, n: u32, from: &str, reply_to: &str, subject: &str) -> String {
    envelope_mail(env, n)
        .replace("From: Clinic <agent@clinic.example>", &format!("From: {from}\nReply-To: {reply_to}"))
        .replace(&format!("Subject: results {n}"), &format!("Subject: {subject}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_copy_is_judged_as_a_replay_or_a_revoked_key_and_no_mail_goes_where_a_relay_says() {
    let (Some(dv), Some(ex)) = (dovecot(), Exim::start()) else { return };
    let (alice, bob, stranger) = (key(7), key(8), key(9));
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let known = probe.signed(&alice, "support", "lab results are in");
    let from_bob = probe.signed(&bob, "support", "bob again");
    let knock = probe.signed(&stranger, "support", "may I?");
    probe.stop().await;
    // A field no signature covers, changed on the way: a made-up integrity hash, an
    // attestation whose role is an advert.
    let with = |env: &serde_json::Value, field: &str, v: serde_json::Value| {
        let mut e = env.clone();
        e[field] = v;
        e
    };
    let bogus_integrity = serde_json::json!({"alg": "sha256", "hash": "00".repeat(32)});
    let bogus_provenance = serde_json::json!({"content_hash": "00", "entries": [{"role": "Buy-now-at-evil-example", "identity": "ab".repeat(32), "timestamp": "2026-01-01T00:00:00Z", "signature": "AAAA"}]});
    let spam = "BUY NOW cheap pills";
    deliver(dv.port, &envelope_mail(&known, 1)).await;
    deliver(dv.port, &relayed(&with(&known, "integrity", bogus_integrity.clone()), 2, "victim@elsewhere.example", "victim2@elsewhere.example", spam)).await;
    deliver(dv.port, &relayed(&with(&known, "provenance", bogus_provenance), 3, "victim@elsewhere.example", "victim2@elsewhere.example", spam)).await;
    deliver(dv.port, &relayed(&with(&from_bob, "integrity", bogus_integrity), 4, "victim@elsewhere.example", "victim2@elsewhere.example", spam)).await;
    // A stranger's knock: answered (the user allows strangers) at its From, never its
    // Reply-To; the same knock mailed again is not answered again.
    deliver(dv.port, &relayed(&knock, 5, "stranger@agents.example", "victim3@elsewhere.example", spam)).await;
    deliver(dv.port, &relayed(&knock, 6, "victim4@elsewhere.example", "victim4@elsewhere.example", spam)).await;

    let f = follow_sending(&sending(&dv, &ex, MailReceipts::Everyone));
    let acct = serde_json::to_value(&f.account).unwrap();
    let (alice_key, bob_key) = (pubhex(&alice), pubhex(&bob));
    let inbox = TestInbox::start_email(
        &pubhex(&key(1)),
        |s| {
            s.email_account_put("personal", &acct, "2026-11-25T00:00:00Z").unwrap();
            let entry = |k: &str, name: &str, mail: Option<&str>| gatehouse_store::TrustEntry {
                door: "epp".into(),
                facts: gatehouse_store::Facts::epp(gatehouse_store::EppFacts { mail_address: mail.map(str::to_string), ..Default::default() }),
                public_key: k.into(),
                name: name.into(),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy: policy(&["support"]),
            };
            s.trust_add(&entry(&alice_key, "Alice", Some("agent@clinic.example"))).unwrap();
            // Bob was trusted, then revoked: a copy of his envelope is refused for that first.
            s.trust_add(&entry(&bob_key, "Bob", Some("bob@clinic.example"))).unwrap();
            s.revoke(&bob_key, "lost laptop", "2026-01-02T00:00:00Z").unwrap();
        },
        vec![f],
    )
    .await;
    let store = inbox.store.clone();
    wait_account(&store, "the mails handled", |a| a.last_uid == 6).await;

    let by_uid = |uid: u32| {
        let r = email_receipts(&store)
            .into_iter()
            .find(|r| store.email_arrival_get(&r.receipt_id).unwrap().is_some_and(|a| a.message_id.as_deref() == Some(&format!("env{uid}@clinic.example"))));
        r.unwrap_or_else(|| panic!("no receipt for mail {uid}"))
    };
    assert_eq!(by_uid(1).status, "accepted");
    assert_eq!(by_uid(2).code.as_deref(), Some("REPLAY_DETECTED"), "a copy with a made-up integrity hash is a replay, judged before the hash");
    assert_eq!(by_uid(3).code.as_deref(), Some("REPLAY_DETECTED"), "a copy with a forged attestation is a replay");
    assert_eq!(by_uid(4).code.as_deref(), Some("SENDER_REVOKED"), "a revoked key is refused as revoked, whatever was added to its envelope");
    assert_eq!(by_uid(5).code.as_deref(), Some("UNTRUSTED_SENDER"));
    assert_eq!(by_uid(6).code.as_deref(), Some("UNTRUSTED_SENDER"));
    for uid in [2, 3, 4, 6] {
        let a = store.email_arrival_get(&by_uid(uid).receipt_id).unwrap().unwrap();
        assert!(a.mailed_back.is_none() && a.not_mailed.is_some(), "mail {uid} gets no receipt mail: {a:?}");
    }
    assert!(store.email_arrival_get(&by_uid(6).receipt_id).unwrap().unwrap().not_mailed.unwrap().contains("answered by mail already"));

    // Two mails went out: Alice's receipt to the address she was let in from, and the
    // stranger's to its From; nothing to a relay's addresses, nothing of its text.
    ex.wait_delivered(2);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mails: Vec<_> = ex.delivered().iter().map(|m| mail_parser::MessageParser::default().parse(m).unwrap().into_owned()).collect();
    let mut to: Vec<String> = mails.iter().filter_map(|m| m.to().and_then(|t| t.first()).and_then(|a| a.address()).map(str::to_string)).collect();
    to.sort();
    assert_eq!(to, ["agent@clinic.example", "stranger@agents.example"]);
    for raw in ex.delivered() {
        let text = String::from_utf8_lossy(&raw);
        assert!(!text.contains("BUY NOW") && !text.contains("evil"), "a relay's text is never carried: {text}");
    }
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_let_in_from_a_mail_gets_its_receipts_at_that_address_whatever_later_mails_say() {
    let (Some(dv), Some(ex)) = (dovecot(), Exim::start()) else { return };
    let lee = key(11);
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let knock = probe.signed(&lee, "support", "Dr. Lee's office here, may we write?");
    let later = probe.signed(&lee, "support", "your appointment moved");
    probe.stop().await;
    deliver(dv.port, &relayed(&knock, 1, "office@lee.example", "office@lee.example", "hello")).await;
    let inbox = following(follow_sending(&sending(&dv, &ex, MailReceipts::Known)), None).await;
    let store = inbox.store.clone();
    wait_account(&store, "the knock handled", |a| a.last_uid == 1).await;
    // The user lets the key in from the prompt: the mail's From is where its receipts go.
    let (gate, _rx) = gatehouse_app::doors::build(store.clone(), &inbox.public_key);
    let target = shown(&gate, &pubhex(&lee));
    gatehouse_app::consent::decide(&gate, &target, gatehouse_app::consent::Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert_eq!(store.trust_get(&pubhex(&lee)).unwrap().unwrap().facts.mail_to().as_deref(), Some("office@lee.example"));
    // Its next envelope comes through another relay, which names other addresses.
    deliver(dv.port, &relayed(&later, 2, "someone@relay.example", "victim@elsewhere.example", "hello")).await;
    wait_account(&store, "the second mail handled", |a| a.last_uid == 2).await;
    let mails = ex.wait_delivered(1);
    let m = mail_parser::MessageParser::default().parse(&mails[0]).unwrap();
    assert_eq!(m.to().and_then(|t| t.first()).and_then(|a| a.address()), Some("office@lee.example"));
    inbox.stop().await;
}
