//! The A2A door against the real SDK: `a2a-sdk` 1.3.0 (tests/peers/a2a) as the client,
//! over the gate's TLS 1.3 listener: the signed card, send, streaming send, get, cancel,
//! a retry, callers without credentials or with a token nobody issued, a stranger's
//! certificate knocking and let in, a held message waiting for the user.

use std::path::PathBuf;
use std::time::Duration;

use gatehouse_app::consent::{ConsentItem, ConsentTarget, Decision, Source};
use gatehouse_app::doors::ExecutorSpec;
use gatehouse_store::ExecStatus;
use serde_json::{json, Value};

use crate::uamp::Uamp;

/// One of the SDKs as a client (installed by scripts/setup-peers.sh): the Python one
/// (tests/peers/a2a/client.py) or the JavaScript one (tests/peers/a2a-js/client.mjs),
/// called the same way.
#[derive(Clone)]
struct Sdk {
    program: PathBuf,
    script: &'static str,
    env: Vec<(&'static str, PathBuf)>,
    base: String,
    ca: PathBuf,
}

impl Sdk {
    /// `a2a-sdk` 1.3.0.
    fn of(u: &Uamp) -> Option<Sdk> {
        let py = gatehouse_mail_testswarm::reference::python("a2a-1.3.0", "A2A SDK")?;
        Some(Sdk { program: py, script: "a2a/client.py", env: vec![], base: u.https.clone(), ca: u.dir().join(gatehouse_app::doors::uamp::tls::CERT_FILE) })
    }

    /// `@a2a-js/sdk` 1.3.0, trusting the gate's certificate through Node's own variable.
    fn js(u: &Uamp) -> Option<Sdk> {
        let peer = gatehouse_mail_testswarm::reference::node_peer("a2a-js-1.3.0", "A2A JavaScript SDK")?;
        let ca = u.dir().join(gatehouse_app::doors::uamp::tls::CERT_FILE);
        let env = vec![("GATEHOUSE_A2A_JS", peer), ("NODE_EXTRA_CA_CERTS", ca.clone())];
        Some(Sdk { program: "node".into(), script: "a2a-js/client.mjs", env, base: u.https.clone(), ca })
    }

    /// One call; every answer the SDK printed, in order.
    async fn run(&self, action: &str, args: Value) -> Vec<Value> {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers").join(self.script);
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.arg(script).arg(&self.base).arg(&self.ca).arg(action).arg(args.to_string()).envs(self.env.iter().cloned()).kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(120), cmd.output()).await.expect("the SDK answered within two minutes").unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "the SDK failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    }
}

fn upper() -> ExecutorSpec {
    ExecutorSpec::Command { program: "/usr/bin/tr".into(), args: vec!["a-z".into(), "A-Z".into()], timeout_secs: 20 }
}

fn token(u: &Uamp, name: &str) -> (String, String) {
    let issued = gatehouse_app::a2a::token_issue(&crate::common::ctx(&u.store), name, &[], chrono::Utc::now()).unwrap();
    (issued.token, issued.entry.public_key)
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_token_holder_sends_streams_and_gets_its_tasks_with_the_executors_answer() {
    let u = Uamp::start(upper()).await;
    let Some(sdk) = Sdk::of(&u) else { return };
    let (tok, id) = token(&u, "Travel agent");

    // The card verifies against the gate's key (the SDK checks the signature).
    let card = sdk.run("card", json!({"verify_key": u.gate_key()})).await;
    assert_eq!(card[0]["name"], "Gatehouse", "{card:?}");
    assert_eq!(card[0]["supportedInterfaces"][0]["url"], format!("{}/a2a", u.https));
    assert_eq!(card[0]["capabilities"]["streaming"], true);
    let forged = sdk.run("card", json!({"verify_key": hex::encode([9u8; 32])})).await;
    assert!(forged[0]["error"].is_string(), "a card checked against another key fails: {forged:?}");

    // Send, waiting for the answer.
    let sent = sdk.run("send", json!({"token": tok, "text": "hello gate", "message_id": "m-1"})).await;
    let task = &sent[0]["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{sent:?}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "HELLO GATE");
    let task_id = task["id"].as_str().unwrap().to_string();
    let receipt = u.store.receipt(&task_id).unwrap().expect("the task is its receipt");
    assert_eq!((receipt.transport.as_str(), receipt.sender.as_deref(), receipt.prompt.as_deref()), ("a2a", Some(id.as_str()), Some("hello gate")));
    // What it kept says which door it came by: nothing reads its bytes as another door's.
    assert_eq!(u.store.envelope(receipt.envelope_row.unwrap()).unwrap().unwrap().door, "a2a");

    // The same message sent again is the same task, not a second run.
    let again = sdk.run("send", json!({"token": tok, "text": "hello gate", "message_id": "m-1"})).await;
    assert_eq!(again[0]["task"]["id"], task_id.as_str());
    let other = sdk.run("send", json!({"token": tok, "text": "something else", "message_id": "m-1"})).await;
    assert!(other[0]["message"].as_str().is_some_and(|m| m.contains("messageId was used before")), "{other:?}");
    assert_eq!(u.store.envelopes(100, 0).unwrap().len(), 1);

    // Get it back.
    let got = sdk.run("get", json!({"token": tok, "id": task_id})).await;
    assert_eq!(state(&got[0]), "TASK_STATE_COMPLETED", "{got:?}");
    assert_eq!(got[0]["artifacts"][0]["parts"][0]["text"], "HELLO GATE");
    // Another agent's token does not find it.
    let (tok2, _) = token(&u, "Someone else");
    let theirs = sdk.run("get", json!({"token": tok2, "id": task_id})).await;
    assert_eq!(theirs[0]["error"], "TaskNotFoundError", "{theirs:?}");

    // Streamed: the task first, the answer as an artifact, then completed.
    let streamed = sdk.run("send", json!({"token": tok, "text": "stream me", "stream": true})).await;
    assert!(state(&streamed[0]["task"]).starts_with("TASK_STATE_"), "{streamed:?}");
    let answer: String = streamed.iter().filter_map(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str()).collect();
    assert_eq!(answer, "STREAM ME", "{streamed:?}");
    assert_eq!(streamed.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{streamed:?}");
}

#[tokio::test]
async fn the_javascript_sdk_is_served_the_same_card_tasks_and_stream() {
    let u = Uamp::start(upper()).await;
    let Some(js) = Sdk::js(&u) else { return };
    let (tok, id) = token(&u, "JS agent");

    // Its own canonical form of the card verifies the gate's signature; another key fails.
    let card = js.run("card", json!({"verify_key": u.gate_key()})).await;
    assert_eq!(card[0]["name"], "Gatehouse", "{card:?}");
    let forged = js.run("card", json!({"verify_key": hex::encode([9u8; 32])})).await;
    assert!(forged[0]["error"].is_string(), "a card checked against another key fails: {forged:?}");

    let sent = js.run("send", json!({"token": tok, "text": "hello from node"})).await;
    assert_eq!(state(&sent[0]["task"]), "TASK_STATE_COMPLETED", "{sent:?}");
    assert_eq!(sent[0]["task"]["artifacts"][0]["parts"][0]["text"], "HELLO FROM NODE");
    let task_id = sent[0]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(u.store.receipt(&task_id).unwrap().unwrap().sender.as_deref(), Some(id.as_str()));
    let got = js.run("get", json!({"token": tok, "id": task_id})).await;
    assert_eq!(state(&got[0]), "TASK_STATE_COMPLETED", "{got:?}");

    let streamed = js.run("send", json!({"token": tok, "text": "stream from node", "stream": true})).await;
    let answer: String = streamed.iter().filter_map(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str()).collect();
    assert_eq!(answer, "STREAM FROM NODE", "{streamed:?}");
    assert_eq!(streamed.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{streamed:?}");

    // Told it is unauthorized, and how to authenticate (not that its request was malformed).
    let none = js.run("send", json!({"text": "hi"})).await;
    assert!(none[0]["message"].as_str().is_some_and(|m| m.contains("401") && m.contains("bearer token the user of this gate issued")), "{none:?}");
    assert_eq!(u.store.envelopes(100, 0).unwrap().len(), 2, "the refused call kept nothing");
}

#[tokio::test]
async fn callers_without_a_credential_the_user_gave_are_refused_and_nothing_is_kept() {
    let u = Uamp::start(upper()).await;
    let Some(sdk) = Sdk::of(&u) else { return };
    let none = sdk.run("send", json!({"text": "hi"})).await;
    assert!(none[0]["message"].as_str().is_some_and(|m| m.contains("401")), "{none:?}");
    let forged = sdk.run("send", json!({"token": "gha_made_up", "text": "hi"})).await;
    assert!(forged[0]["message"].as_str().is_some_and(|m| m.contains("401")), "{forged:?}");
    assert!(u.store.receipts(10, 0).unwrap().is_empty(), "nothing of theirs is kept");
    assert!(u.store.pending_list().unwrap().is_empty(), "and nobody is asked");

    // A token the user issued, then blocked: refused in A2A's words, with a receipt.
    let (tok, id) = token(&u, "Was trusted");
    u.store.block(&id, "test", "2026-11-27T00:00:00Z").unwrap();
    let blocked = sdk.run("send", json!({"token": tok, "text": "hi"})).await;
    assert_eq!(state(&blocked[0]["task"]), "TASK_STATE_REJECTED", "{blocked:?}");
    assert!(blocked[0]["task"]["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("blocked"));
    assert_eq!(u.store.receipts(10, 0).unwrap().len(), 1);

    // A scope Gatehouse keeps for its own doors (the guardian's agents) is no agent's to
    // ask for, whatever its token allows: the same rule as for every door.
    let (tok, _) = token(&u, "Any scope");
    let reserved = sdk.run("send", json!({"token": tok, "text": "register me", "scope": gatehouse_app::doors::RESERVED_SCOPES[0].1})).await;
    assert_eq!(state(&reserved[0]["task"]), "TASK_STATE_REJECTED", "{reserved:?}");
    assert!(reserved[0]["task"]["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("Gatehouse's own"), "{reserved:?}");
    assert!(u.store.envelopes(10, 0).unwrap().is_empty(), "nothing was let in");
}

#[tokio::test]
async fn one_caller_cannot_hold_every_stream_and_a_stream_refused_for_room_is_not_accepted() {
    // An executor that takes its time, so each stream stays open while its task runs.
    let slow = ExecutorSpec::Command { program: "/bin/sleep".into(), args: vec!["20".into()], timeout_secs: 30 };
    let u = Uamp::start(slow).await;
    gatehouse_app::a2a::set_plain_loopback(&crate::common::ctx(&u.store), true).unwrap();
    let (greedy, _) = token(&u, "Greedy");
    let (other, _) = token(&u, "Other");
    let client = reqwest::Client::new();
    let stream = |tok: &str, n: usize| {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage",
            "params": {"message": {"messageId": format!("m-{tok}-{n}"), "role": "ROLE_USER", "parts": [{"text": "take your time"}]}}});
        client.post(format!("{}/a2a", u.plain)).bearer_auth(tok).json(&body).send()
    };
    let mut open = Vec::new();
    for n in 0..gatehouse_app::doors::a2a::MAX_STREAMS_PER_CALLER {
        let r = stream(&greedy, n).await.unwrap();
        assert_eq!(r.status(), 200);
        open.push(r);
    }
    let kept = u.store.receipts(100, 0).unwrap().len();
    let refused = stream(&greedy, 99).await.unwrap();
    assert_eq!(refused.status(), 503, "past its share");
    let v: Value = refused.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("streams open"), "{v}");
    assert_eq!(u.store.receipts(100, 0).unwrap().len(), kept, "a message refused for room is not accepted or queued");
    // Another caller still has room.
    let theirs = stream(&other, 0).await.unwrap();
    assert_eq!(theirs.status(), 200, "another caller's stream is served");
    drop(open);
}

#[tokio::test]
async fn over_plain_http_from_this_computer_only_while_the_user_allows_it_and_with_a_token() {
    let u = Uamp::start(upper()).await;
    let Some(tls) = Sdk::of(&u) else { return };
    let plain = Sdk { base: u.plain.clone(), ca: "-".into(), ..tls.clone() };
    let (tok, id) = token(&u, "Local agent");

    // Off (as it is unless the user turns it on): refused before anything is read.
    let off = plain.run("send", json!({"token": tok, "text": "hi"})).await;
    assert!(off[0]["message"].as_str().is_some_and(|m| m.contains("403")), "{off:?}");
    assert!(u.store.receipts(10, 0).unwrap().is_empty(), "nothing is kept");

    gatehouse_app::a2a::set_plain_loopback(&crate::common::ctx(&u.store), true).unwrap();
    let card = plain.run("card", json!({"verify_key": u.gate_key()})).await;
    assert_eq!(card[0]["supportedInterfaces"][0]["url"], format!("{}/a2a", u.plain), "the card names the plain address it was read from");
    let sent = plain.run("send", json!({"token": tok, "text": "hello from here"})).await;
    assert_eq!(state(&sent[0]["task"]), "TASK_STATE_COMPLETED", "{sent:?}");
    assert_eq!(sent[0]["task"]["artifacts"][0]["parts"][0]["text"], "HELLO FROM HERE");
    let receipt = u.store.receipt(sent[0]["task"]["id"].as_str().unwrap()).unwrap().unwrap();
    assert_eq!(receipt.sender.as_deref(), Some(id.as_str()));
    // Still a token the user issued, or nothing.
    let none = plain.run("send", json!({"text": "hi"})).await;
    assert!(none[0]["message"].as_str().is_some_and(|m| m.contains("401")), "{none:?}");

    // Off again: the next request is refused, without a restart.
    gatehouse_app::a2a::set_plain_loopback(&crate::common::ctx(&u.store), false).unwrap();
    let again = plain.run("send", json!({"token": tok, "text": "hi again"})).await;
    assert!(again[0]["message"].as_str().is_some_and(|m| m.contains("403")), "{again:?}");
    assert_eq!(u.store.receipts(10, 0).unwrap().len(), 1);
    // TLS was never affected.
    let over_tls = tls.run("send", json!({"token": tok, "text": "over tls"})).await;
    assert_eq!(state(&over_tls[0]["task"]), "TASK_STATE_COMPLETED", "{over_tls:?}");
}

#[tokio::test]
async fn a_strangers_certificate_knocks_and_once_let_in_its_next_message_runs() {
    let u = Uamp::start(upper()).await;
    let Some(sdk) = Sdk::of(&u) else { return };
    let agent = rcgen::generate_simple_self_signed(vec!["agent.example".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("agent.pem"), dir.path().join("agent.key"));
    std::fs::write(&cert, agent.cert.pem()).unwrap();
    std::fs::write(&key, agent.key_pair.serialize_pem()).unwrap();
    let id = gatehouse_app::doors::a2a::key_id(&gatehouse_net::peer::PeerKey::from_certificate(agent.cert.der()).0.unwrap());
    let me = json!({"cert": cert, "key": key, "text": "may I?", "scope": "travel"});

    let knocked = sdk.run("send", me.clone()).await;
    let task = &knocked[0]["task"];
    assert_eq!(state(task), "TASK_STATE_REJECTED", "{knocked:?}");
    assert!(task["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("has been asked"), "{task}");
    let items = gatehouse_app::consent::pending(&crate::common::ctx(&u.store)).unwrap();
    let Some(ConsentItem::UnknownSender { source, public_key, scope, prompt, .. }) = items.first() else { panic!("{items:?}") };
    assert_eq!((*source, public_key.as_str(), scope.as_deref(), prompt.as_deref()), (Source::A2aAgent, id.as_str(), Some("travel"), Some("may I?")));

    // Nothing of its message waits to be let through once.
    let target = crate::common::shown(u.inbox.inbox(), &id);
    assert!(gatehouse_app::consent::decide(u.inbox.inbox(), &target, Decision::AllowOnce, chrono::Utc::now()).is_err());
    gatehouse_app::consent::decide(u.inbox.inbox(), &target, Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    let entry = u.store.trust_get(&id).unwrap().unwrap();
    assert_eq!((entry.policy.allowed_scopes, entry.door.as_str()), (vec!["travel".to_string()], "a2a"), "the door it knocked at is recorded");

    let sent = sdk.run("send", me.clone()).await;
    assert_eq!(state(&sent[0]["task"]), "TASK_STATE_COMPLETED", "{sent:?}");
    assert_eq!(sent[0]["task"]["artifacts"][0]["parts"][0]["text"], "MAY I?");
    // Its grant is for the scope it asked for, nothing else.
    let other = sdk.run("send", json!({"cert": cert, "key": key, "text": "and this?", "scope": "billing"})).await;
    assert_eq!(state(&other[0]["task"]), "TASK_STATE_REJECTED", "{other:?}");
}

#[tokio::test]
async fn a_held_message_is_input_required_until_the_user_decides_and_can_be_canceled() {
    let u = Uamp::start(upper()).await;
    let Some(sdk) = Sdk::of(&u) else { return };
    let (tok, id) = token(&u, "Held agent");
    // The user's grant for "ask" ended: what arrives is held for them.
    let mut t = u.store.trust_get(&id).unwrap().unwrap();
    t.policy.grant_until.insert("ask".into(), "2026-01-01T00:00:00Z".into());
    u.store.trust_update(&id, None, &t.policy, None).unwrap();

    let first = sdk.run("send", json!({"token": tok, "text": "one"})).await;
    let task = &first[0]["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{first:?}");
    assert!(task["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("they decide"));
    let canceled = sdk.run("cancel", json!({"token": tok, "id": task["id"]})).await;
    assert_eq!(state(&canceled[0]), "TASK_STATE_CANCELED", "{canceled:?}");
    let again = sdk.run("cancel", json!({"token": tok, "id": task["id"]})).await;
    assert_eq!(again[0]["error"], "TaskNotCancelableError", "{again:?}");

    let second = sdk.run("send", json!({"token": tok, "text": "two", "return_immediately": true})).await;
    let task_id = second[0]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(state(&second[0]["task"]), "TASK_STATE_INPUT_REQUIRED");
    let row = u.store.envelopes_with_status(ExecStatus::Held).unwrap().pop().unwrap();
    // A subscription shows where it stands and ends there: it waits for the user.
    let seen = sdk.run("subscribe", json!({"token": tok, "id": task_id, "stream": true})).await;
    assert_eq!(state(&seen[0]["task"]), "TASK_STATE_INPUT_REQUIRED", "{seen:?}");
    gatehouse_app::consent::decide(u.inbox.inbox(), &ConsentTarget::Held { row_id: row.id }, Decision::AllowOnce, chrono::Utc::now()).unwrap();
    for _ in 0..200 {
        if u.store.envelope(row.id).unwrap().unwrap().exec_status == ExecStatus::Succeeded {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done = sdk.run("get", json!({"token": tok, "id": task_id})).await.remove(0);
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "TWO", "{done}");
    // A2A 1.0: a task that ended cannot be subscribed to (it is read with GetTask).
    let ended = sdk.run("subscribe", json!({"token": tok, "id": task_id, "stream": true})).await;
    assert_eq!(ended[0]["error"], "UnsupportedOperationError", "{ended:?}");
}

#[tokio::test]
async fn an_accepted_message_is_sent_to_an_a2a_agent_the_user_added_and_its_answer_streams_back() {
    let Some(agent) = gatehouse_mail_testswarm::reference::start_a2a_agent("s3cret", None) else { return };
    let u = Uamp::start(gatehouse_app::executors::a2a_agent("upper", 30)).await;
    let Some(sdk) = Sdk::of(&u) else { return };
    gatehouse_keys::load_or_create(u.dir(), gatehouse_keys::KeystoreKind::File).unwrap();
    let added = gatehouse_app::a2a::agent_add(&crate::common::ctx_in(&u.store, u.dir()), "upper", &agent.url, Some("s3cret".into())).await.unwrap();
    assert_eq!((added.card_name.as_str(), added.streaming, added.has_token), ("Upper", true, true), "{added:?}");
    assert_eq!(added.endpoint, format!("{}/", agent.url));

    // A2A in, A2A out: a caller's message runs on the agent the user added, whose answer
    // streams back to the caller.
    let (tok, _) = token(&u, "Caller");
    let streamed = sdk.run("send", json!({"token": tok, "text": "hello there", "stream": true})).await;
    let answer: String = streamed.iter().filter_map(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str()).collect();
    assert_eq!(answer, "HELLO THERE", "{streamed:?}");
    assert_eq!(streamed.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{streamed:?}");
    let row = u.store.envelopes(10, 0).unwrap().remove(0);
    let result = row.exec_result.unwrap();
    assert_eq!((result["executor"].as_str(), result["agent"].as_str(), result["answer"].as_str()), (Some("a2a"), Some("upper"), Some("HELLO THERE")));
    assert!(result["task_id"].as_str().is_some_and(|t| !t.is_empty()), "{result}");

    // Its token is the user's entry for that agent: without it the agent refuses, and the
    // task fails with why.
    gatehouse_keys::Secrets::open(u.dir()).unwrap().delete(&format!("a2a-token:upper@{}", agent.url)).unwrap();
    let failed = sdk.run("send", json!({"token": tok, "text": "again"})).await;
    assert_eq!(state(&failed[0]["task"]), "TASK_STATE_FAILED", "{failed:?}");
    assert!(failed[0]["task"]["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("401"), "{failed:?}");
}

#[tokio::test]
async fn an_agent_whose_card_sends_gatehouse_elsewhere_is_not_added() {
    let Some(agent) = gatehouse_mail_testswarm::reference::start_a2a_agent("s3cret", Some("http://127.0.0.2:9/")) else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(crate::common::test_store(dir.path()));
    gatehouse_keys::load_or_create(dir.path(), gatehouse_keys::KeystoreKind::File).unwrap();
    let e = gatehouse_app::a2a::agent_add(&crate::common::ctx_in(&store, dir.path()), "elsewhere", &agent.url, None).await.unwrap_err();
    assert!(e.message.contains("an endpoint elsewhere is not used"), "{e:?}");
    assert!(gatehouse_app::a2a::agent_list(&crate::common::ctx_in(&store, dir.path())).unwrap().is_empty());
    let plain = gatehouse_app::a2a::agent_add(&crate::common::ctx_in(&store, dir.path()), "far", "http://agent.example", None).await.unwrap_err();
    assert!(plain.message.contains("plain HTTP to another machine"), "{plain:?}");
}
