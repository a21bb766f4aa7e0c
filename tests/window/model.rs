//! The model executor in the window: answers reviewed, edited and sent back; a failed
//! run started again and written live.

use crate::harness::*;

#[test]
fn the_models_answer_is_reviewed_edited_and_sent_back_from_the_window() {
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // The user's model, and the sender's own Gatehouse inbox (which trusts the app back).
    let model = rt.block_on(gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()));
    let bea = SigningKey::from_bytes(&[61; 32]);
    let bea_dir = tempfile::tempdir().unwrap();
    let bea_store = std::sync::Arc::new(gatehouse_store::Store::open(&bea_dir.path().join("gatehouse.db")).unwrap());
    bea_store
        .trust_add(&gatehouse_store::TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: app.public_key.clone(),
            name: "Me".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask-ai".into()], ..Default::default() },
        })
        .unwrap();
    let (_stop, bea_submit) = rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/epp/v1/submit", l.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let opts = gatehouse_app::doors::ServeOptions { listener: Some(l), watch: None, uamp: None, ..Default::default() };
        tokio::spawn(gatehouse_app::doors::run(
            bea_store.clone(),
            gatehouse_epp::public_key_hex(&bea),
            opts,
            async {
                let _ = rx.await;
            },
            |_| {},
        ));
        (tx, url)
    });
    // The user: Bea may ask the model about "ask-ai", and answers go back to her inbox.
    let store = app.store();
    store
        .trust_add(&gatehouse_store::TrustEntry {
            door: "epp".into(),
            facts: gatehouse_store::Facts::epp(gatehouse_store::EppFacts { reply_endpoint: Some(bea_submit), ..Default::default() }),
            public_key: gatehouse_epp::public_key_hex(&bea),
            name: "Bea".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask-ai".into()], ..Default::default() },
        })
        .unwrap();
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert(
        "ask-ai".to_string(),
        gatehouse_app::doors::ExecutorSpec::Model { endpoint: model, model: "llama-test".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None },
    );
    gatehouse_app::doors::ExecutorConfig { default: gatehouse_app::doors::ExecutorSpec::Noop, scopes }.save(&store).unwrap();

    let (status, _) = app.send(&bea, "ask-ai", "Which day is the team lunch?");
    assert_eq!(status, 200);
    let id = app.row_with("Which day is the team lunch?");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait("the draft answer", || {
        // The executor runs in the background; reopen the detail until the draft shows.
        if app.find_all("#detail-replies .reply-draft").is_empty() {
            app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
            false
        } else {
            true
        }
    });
    assert!(app
        .script("return document.querySelector('#detail-replies .reply-text').value;")
        .as_str()
        .unwrap()
        .contains("llama-test read: Which day is the team lunch?"));
    assert!(bea_store.envelopes(10, 0).unwrap().is_empty(), "nothing goes back before the user approves");
    app.type_into("#detail-replies .reply-text", "Thursday, at noon.");
    app.screenshot("reply-review");
    app.click("#detail-replies .reply-send");
    app.wait_text("#detail-replies", "their inbox answered: accepted");
    let got = bea_store.envelopes(10, 0).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].prompt.as_str(), got[0].sender.as_str()), ("Thursday, at noon.", app.public_key.as_str()));
    let original = store.envelopes(10, 0).unwrap().into_iter().find(|e| e.prompt == "Which day is the team lunch?").unwrap();
    assert_eq!(got[0].in_reply_to.as_deref(), Some(original.envelope_id.as_str()));
    assert_eq!(got[0].conversation_id.as_deref(), Some(original.envelope_id.as_str()), "a conversation named after the first envelope");
    // The answer sent back is part of the conversation here too.
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.click("#detail-conversation");
    app.wait_text("#content", "You (answer sent back)");
    assert!(app.text("#content").contains("Thursday, at noon."));
    // With the receipt Bea's inbox gave it.
    let receipt_id = bea_store.receipts(10, 0).unwrap().into_iter().find(|r| r.status == "accepted").unwrap().receipt_id;
    assert!(
        app.text("#conversation-thread .reply-receipt").contains(&format!("Their inbox accepted it · receipt {receipt_id}")),
        "{}",
        app.text("#conversation-thread")
    );
    app.screenshot("reply-in-conversation");
}

#[test]
fn a_failed_model_is_run_again_and_its_answer_is_written_live_in_the_window() {
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // A slow model, down when the prompt arrives.
    let server = gatehouse_model_testserver::ModelServer::paced(Duration::from_millis(350));
    server.set_down(true);
    let model = rt.block_on(gatehouse_model_testserver::spawn(server.clone()));
    let cy = SigningKey::from_bytes(&[62; 32]);
    let store = app.store();
    store
        .trust_add(&gatehouse_store::TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: gatehouse_epp::public_key_hex(&cy),
            name: "Cy".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask-ai".into()], ..Default::default() },
        })
        .unwrap();
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert(
        "ask-ai".to_string(),
        gatehouse_app::doors::ExecutorSpec::Model { endpoint: model, model: "llama-test".into(), system_prompt: None, timeout_secs: 20, api_key_secret: None },
    );
    gatehouse_app::doors::ExecutorConfig { default: gatehouse_app::doors::ExecutorSpec::Noop, scopes }.save(&store).unwrap();

    let (status, _) = app.send(&cy, "ask-ai", "Where did we leave the spare keys last winter?");
    assert_eq!(status, 200);
    let id = app.row_with("Where did we leave the spare keys last winter?");
    let row = format!("#inbox-rows .row[data-receipt='{id}']");
    app.click(&row);
    // The failure arrives without reopening anything: the row and the open detail follow it.
    app.wait_text("#detail-exec", "Executor failed");
    app.wait_text(&row, "Executor failed");
    assert!(app.text("#inbox-detail").contains("the model is loading"), "the model's own reason is shown");

    server.set_down(false);
    app.click("#detail-retry");
    app.wait_text("#detail-live", "llama-test read: Where");
    let partial = app.text("#detail-live");
    assert!(app.text("#detail-exec").contains("Running"), "the answer shows while the model is still writing");
    assert!(app.text(&row).contains("Running"), "the list says so too: {}", app.text(&row));
    assert!(partial.len() < "llama-test read: Where did we leave the spare keys last winter?".len(), "only part of it so far: {partial:?}");
    app.screenshot("model-live");
    app.wait_text("#detail-exec", "Done");
    assert_eq!(app.text("#detail-answer .prompt"), "llama-test read: Where did we leave the spare keys last winter?");
    assert!(app.find_all("#detail-live").is_empty(), "the live box gives way to the stored result");
    app.screenshot("model-answer");
    app.wait_text(&row, "Done");
}
