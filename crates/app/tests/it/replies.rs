//! Replies between two Gatehouse inboxes (two data dirs, two identities) in one
//! conversation: B asks A; A's model answers; A sends the answer back to B as an EPP
//! envelope signed by A, with B's conversation_id and in_reply_to = B's envelope —
//! automatically for a marked scope, after review (edited) otherwise, retried after a
//! failure — and B accepts it. The reply's signature is in the reference implementation's
//! canonical form. A sender whose reply endpoint is `mailto:` gets the answer by mail
//! (a real Dovecot and Exim): its envelope came by mail, the answer goes out through the
//! account it came by.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::common::{eventually, policy};
use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec, ServeOptions};
use gatehouse_store::{ExecStatus, Policy, Store, TrustEntry};

struct Node {
    dir: tempfile::TempDir,
    store: Arc<Store>,
    key: ed25519_dalek::SigningKey,
    public_key: String,
    submit: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn node(executors: ExecutorConfig, port: Option<u16>) -> Node {
    node_with(executors, port, Vec::new()).await
}

async fn node_with(executors: ExecutorConfig, port: Option<u16>, email: Vec<gatehouse_app::doors::email::Follow>) -> Node {
    node_keyed(executors, port, email, false).await
}

/// `hold_key`: the key is handed to the inbox as the CLI and the window do.
async fn node_keyed(executors: ExecutorConfig, port: Option<u16>, email: Vec<gatehouse_app::doors::email::Follow>, hold_key: bool) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let (identity, _) = gatehouse_keys::load_or_create(dir.path(), gatehouse_keys::KeystoreKind::File).unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    executors.save(&store).unwrap();
    for f in &email {
        store.email_account_put(&f.name, &serde_json::to_value(&f.account).unwrap(), "2026-11-25T00:00:00Z").unwrap();
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).await.unwrap();
    let submit = format!("http://{}/epp/v1/submit", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(gatehouse_app::doors::run(
        store.clone(),
        identity.public_key.clone(),
        ServeOptions { listener: Some(listener), watch: None, uamp: None, email, key: hold_key.then(|| identity.signing_key().clone()), ..Default::default() },
        async {
            let _ = rx.await;
        },
        |_| {},
    ));
    Node { dir, store, key: identity.signing_key().clone(), public_key: identity.public_key, submit, _stop: tx }
}

fn trust(n: &Node, who: &str, name: &str, p: Policy) {
    n.store
        .trust_add(&TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: who.into(),
            name: name.into(),
            added_at: "2026-11-22T00:00:00Z".into(),
            policy: p,
        })
        .unwrap();
}

/// Trusts an EPP sender whose answers go back to `endpoint`.
fn trust_answered(n: &Node, who: &str, name: &str, p: Policy, endpoint: String) {
    let facts = gatehouse_store::Facts::epp(gatehouse_store::EppFacts { reply_endpoint: Some(endpoint), ..Default::default() });
    n.store
        .trust_add(&TrustEntry { door: "epp".into(), facts, public_key: who.into(), name: name.into(), added_at: "2026-11-22T00:00:00Z".into(), policy: p })
        .unwrap();
}

async fn send(from: &Node, to: &Node, scope: &str, prompt: &str, conversation: &str) -> serde_json::Value {
    let mut d = gatehouse_epp::Draft::new(&to.public_key, scope, prompt);
    d.conversation_id = Some(conversation.into());
    let env = d.sign(&from.key, chrono::Utc::now());
    let r: serde_json::Value = reqwest::Client::new().post(&to.submit).json(&env).send().await.unwrap().json().await.unwrap();
    assert_eq!(r["status"], "accepted", "{r}");
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_goes_back_signed_in_the_same_conversation() {
    let model = gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()).await;
    let spec = ExecutorSpec::Model { endpoint: model, model: "llama-test".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None };
    let mut scopes = BTreeMap::new();
    scopes.insert("ask-ai".to_string(), spec.clone());
    scopes.insert("review".to_string(), spec);
    let a = node(ExecutorConfig { default: ExecutorSpec::Noop, scopes }, None).await;
    let b = node(ExecutorConfig::default(), None).await;
    // A takes B's prompts and answers B at B's inbox, at once for "ask-ai" only.
    trust_answered(&a, &b.public_key, "Bea", Policy { auto_reply_scopes: vec!["ask-ai".into()], ..policy(&["ask-ai", "review"]) }, b.submit.clone());
    // B takes A's answers in those scopes.
    trust(&b, &a.public_key, "Ada", policy(&["ask-ai", "review"]));

    let asked = send(&b, &a, "ask-ai", "What is the capital of France?", "7a1c0000-0000-4000-8000-000000000007").await;
    let bstore = b.store.clone();
    eventually("the answer to reach B", || bstore.envelopes(10, 0).unwrap().iter().any(|e| e.sender == a.public_key)).await;
    let answer = b.store.envelopes(10, 0).unwrap().into_iter().find(|e| e.sender == a.public_key).unwrap();
    assert_eq!(answer.prompt, "llama-test read: What is the capital of France?");
    assert_eq!(
        (answer.conversation_id.as_deref(), answer.in_reply_to.as_deref()),
        (Some("7a1c0000-0000-4000-8000-000000000007"), asked["envelope_id"].as_str())
    );
    // A keeps the reply, sent, with the receipt B gave (recorded once B's answer is read,
    // which can be just after B has stored the envelope).
    let astore = a.store.clone();
    eventually("A to keep B's receipt", || {
        astore.replies_for_conversation("7a1c0000-0000-4000-8000-000000000007").unwrap().first().is_some_and(|r| r.receipt.is_some())
    })
    .await;
    let replies = a.store.replies_for_conversation("7a1c0000-0000-4000-8000-000000000007").unwrap();
    assert_eq!(replies.len(), 1);
    assert_eq!((replies[0].state.as_str(), replies[0].receipt.as_ref().unwrap()["status"].as_str()), ("sent", Some("accepted")));
    // Signed in the reference implementation's canonical form (sorted, ASCII-escaped).
    let wire = serde_json::to_vec(replies[0].sent_envelope.as_ref().unwrap()).unwrap();
    let parsed = gatehouse_epp::Envelope::parse(&wire).unwrap();
    assert_eq!(gatehouse_epp::crypto::verify(&parsed).unwrap(), gatehouse_epp::canonical::Form::Reference);

    // Not marked: a draft waits for the user, who edits it before it goes.
    send(&b, &a, "review", "Draft me a polite no", "7a1c0000-0000-4000-8000-000000000008").await;
    let astore = a.store.clone();
    eventually("a draft", || astore.reply_drafts().unwrap().len() == 1).await;
    let draft = a.store.reply_drafts().unwrap().remove(0);
    assert!(b.store.envelopes(10, 0).unwrap().iter().filter(|e| e.sender == a.public_key).count() == 1, "nothing went before the user approved");
    a.store.reply_edit(draft.id, "Thank you, but no.", "2026-11-22T00:00:00Z").unwrap();
    let sent = gatehouse_app::doors::epp::reply::send(&a.store, &a.key, draft.id, &[]).await.unwrap();
    assert_eq!(sent.state, "sent");
    eventually("the edited answer at B", || bstore.envelopes(10, 0).unwrap().iter().any(|e| e.prompt == "Thank you, but no.")).await;
    assert!(matches!(
        gatehouse_app::doors::epp::reply::send(&a.store, &a.key, draft.id, &[]).await,
        Err(gatehouse_app::doors::epp::reply::ReplyError::AlreadySent)
    ));
    let _ = (&a.dir, &b.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_are_signed_with_the_key_the_inbox_was_started_with_not_read_again_for_each() {
    let model = gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()).await;
    let spec = ExecutorSpec::Model { endpoint: model, model: "llama-test".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None };
    let a = node_keyed(ExecutorConfig { default: spec, scopes: BTreeMap::new() }, None, Vec::new(), true).await;
    let b = node(ExecutorConfig::default(), None).await;
    trust_answered(&a, &b.public_key, "Bea", Policy { auto_reply_scopes: vec!["ask-ai".into()], ..policy(&["ask-ai"]) }, b.submit.clone());
    trust(&b, &a.public_key, "Ada", policy(&["ask-ai"]));
    // The key store becomes unreadable after the start (a keychain locked with the
    // session, a key file moved away): answers still go out.
    std::fs::remove_file(a.dir.path().join("identity.key")).unwrap();
    send(&b, &a, "ask-ai", "Still there?", "7a1c0000-0000-4000-8000-000000000011").await;
    let bstore = b.store.clone();
    eventually("the answer to reach B", || bstore.envelopes(10, 0).unwrap().iter().any(|e| e.sender == a.public_key)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_cannot_be_delivered_is_kept_and_sent_again_later() {
    let model = gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()).await;
    let mut scopes = BTreeMap::new();
    scopes
        .insert("ask-ai".to_string(), ExecutorSpec::Model { endpoint: model, model: "m".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None });
    let a = node(ExecutorConfig { default: ExecutorSpec::Noop, scopes }, None).await;
    // B's address is known but B is not up yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b_key = gatehouse_epp::crypto::generate_signing_key();
    let b_pub = gatehouse_epp::public_key_hex(&b_key);
    trust_answered(
        &a,
        &b_pub,
        "Bea",
        Policy { auto_reply_scopes: vec!["ask-ai".into()], ..policy(&["ask-ai"]) },
        format!("http://127.0.0.1:{port}/epp/v1/submit"),
    );
    let mut d = gatehouse_epp::Draft::new(&a.public_key, "ask-ai", "ping?");
    d.conversation_id = Some("7a1c0000-0000-4000-8000-000000000009".into());
    let env = d.sign(&b_key, chrono::Utc::now());
    let r: serde_json::Value = reqwest::Client::new().post(&a.submit).json(&env).send().await.unwrap().json().await.unwrap();
    assert_eq!(r["status"], "accepted");
    let astore = a.store.clone();
    eventually("the failed reply", || {
        astore.replies_for_conversation("7a1c0000-0000-4000-8000-000000000009").unwrap().first().is_some_and(|r| r.state == "failed")
    })
    .await;
    let failed = a.store.replies_for_conversation("7a1c0000-0000-4000-8000-000000000009").unwrap().remove(0);
    assert!(failed.error.as_ref().unwrap().contains("could not reach"), "{failed:?}");
    assert_eq!(a.store.envelopes(10, 0).unwrap()[0].exec_status, ExecStatus::Succeeded, "the envelope and its answer are kept");
    // B comes up (same identity, same address); the user sends the reply again.
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    store
        .trust_add(&TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: a.public_key.clone(),
            name: "Ada".into(),
            added_at: "2026-11-22T00:00:00Z".into(),
            policy: policy(&["ask-ai"]),
        })
        .unwrap();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(gatehouse_app::doors::run(
        store.clone(),
        b_pub.clone(),
        ServeOptions { listener: Some(listener), watch: None, uamp: None, ..Default::default() },
        async {
            let _ = rx.await;
        },
        |_| {},
    ));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let again = gatehouse_app::doors::epp::reply::send(&a.store, &a.key, failed.id, &[]).await.unwrap();
    assert_eq!((again.state.as_str(), again.error), ("sent", None));
    assert_eq!(store.envelopes(10, 0).unwrap()[0].in_reply_to.as_deref(), Some(env["envelope_id"].as_str().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_endpoint_that_redirects_does_not_get_the_signed_reply_sent_elsewhere() {
    let model = gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()).await;
    let mut scopes = BTreeMap::new();
    scopes
        .insert("ask-ai".to_string(), ExecutorSpec::Model { endpoint: model, model: "m".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None });
    let a = node(ExecutorConfig { default: ExecutorSpec::Noop, scopes }, None).await;
    let b = node(ExecutorConfig::default(), None).await;
    trust(&b, &a.public_key, "Ada", policy(&["ask-ai"]));
    // The endpoint A was given answers every post with a 307 to B's inbox: following it
    // would re-post A's signed reply to an address the user never chose.
    let to_b = b.submit.clone();
    let redirector = axum::Router::new().fallback(move || {
        let to_b = to_b.clone();
        async move { (axum::http::StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, to_b)]) }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/epp/v1/submit", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, redirector).await });
    trust_answered(&a, &b.public_key, "Bea", Policy { auto_reply_scopes: vec!["ask-ai".into()], ..policy(&["ask-ai"]) }, endpoint);
    send(&b, &a, "ask-ai", "where do you answer?", "7a1c0000-0000-4000-8000-00000000000a").await;
    let astore = a.store.clone();
    eventually("the refused reply", || {
        astore.replies_for_conversation("7a1c0000-0000-4000-8000-00000000000a").unwrap().first().is_some_and(|r| r.state == "failed")
    })
    .await;
    let failed = a.store.replies_for_conversation("7a1c0000-0000-4000-8000-00000000000a").unwrap().remove(0);
    assert!(failed.error.as_ref().unwrap().contains("redirect"), "{failed:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(b.store.envelopes(10, 0).unwrap().iter().all(|e| e.sender != a.public_key), "the redirect was not followed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_to_a_sender_whose_reply_endpoint_is_mailto_goes_back_by_mail() {
    use gatehouse_email::smtp::{MailReceipts, SmtpSecurity, Submission};
    let (Some(dv), Some(ex)) = (gatehouse_email_testservers::Dovecot::start(), gatehouse_email_testservers::Exim::start()) else { return };
    let model = gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()).await;
    let mut scopes = BTreeMap::new();
    scopes
        .insert("ask-ai".to_string(), ExecutorSpec::Model { endpoint: model, model: "m".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None });
    // A follows a mail account that can send; receipts by mail are off, so the one mail
    // that goes out is the answer.
    let mut account = crate::email::account(dv.port);
    account.smtp =
        Some(Submission { host: "127.0.0.1".into(), port: ex.port, security: SmtpSecurity::Plain, user: "alice".into(), from: "ada@home.example".into() });
    account.receipts = MailReceipts::Off;
    let follow = gatehouse_app::doors::email::Follow::new("personal".into(), account.clone(), "secret".into(), Some("secret".into()));
    let a = node_with(ExecutorConfig { default: ExecutorSpec::Noop, scopes }, None, vec![follow]).await;
    let b = node(ExecutorConfig::default(), None).await;
    trust_answered(&a, &b.public_key, "Bea", Policy { auto_reply_scopes: vec!["ask-ai".into()], ..policy(&["ask-ai"]) }, "mailto:bea@elsewhere.example".into());
    trust(&b, &a.public_key, "Ada", policy(&["ask-ai"]));

    // B's question arrives at A by mail.
    let mut d = gatehouse_epp::Draft::new(&a.public_key, "ask-ai", "What is the capital of France?");
    d.conversation_id = Some("7a1c0000-0000-4000-8000-00000000000b".into());
    let asked = d.sign(&b.key, chrono::Utc::now());
    let mail = gatehouse_email::smtp::envelope_mail("bea@elsewhere.example", "ada+gatehouse@home.example", "a question", &asked.to_string()).unwrap();
    crate::email::deliver(dv.port, &String::from_utf8(mail).unwrap().replace("\r\n", "\n")).await;

    // The answer goes out by mail, to B's address, with A's signed envelope attached.
    let mailed = tokio::task::spawn_blocking(move || ex.wait_delivered(1)).await.unwrap();
    let m = mail_parser::MessageParser::default().parse(&mailed[0]).unwrap();
    assert_eq!(m.to().and_then(|t| t.first()).and_then(|a| a.address()), Some("bea@elsewhere.example"));
    assert_eq!(m.from().and_then(|t| t.first()).and_then(|a| a.address()), Some("ada@home.example"));
    let gatehouse_email::Found::Envelope(answer) = gatehouse_email::find(&mailed[0]).0 else { panic!("no envelope in the mail") };
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!((answer["sender"].as_str(), answer["in_reply_to"].as_str()), (Some(a.public_key.as_str()), asked["envelope_id"].as_str()));
    assert_eq!(answer["conversation_id"], "7a1c0000-0000-4000-8000-00000000000b");
    // B takes it as it would from any transport.
    let r: serde_json::Value = reqwest::Client::new().post(&b.submit).json(&answer).send().await.unwrap().json().await.unwrap();
    assert_eq!(r["status"], "accepted", "{r}");
    let kept = a.store.replies_for_conversation("7a1c0000-0000-4000-8000-00000000000b").unwrap();
    assert_eq!((kept[0].state.as_str(), kept[0].endpoint.as_str()), ("sent", "mailto:bea@elsewhere.example"));

    // With no account that can send, nothing goes and the reason is given.
    let e = gatehouse_app::doors::email::mail_envelope(&[], None, "bea@elsewhere.example", "EPP reply", &answer).await.unwrap_err();
    assert!(e.contains("no mail account can send"), "{e}");
}
