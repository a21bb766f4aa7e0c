//! The model executor against the repo's OpenAI-compatible test server on loopback: an
//! accepted prompt reaches the model with a system prompt naming its sender as external
//! and untrusted, the streamed answer is kept with the model and token counts, and an
//! unreachable or failing model leaves the envelope stored with the failure beside it.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use gatehouse_inbox::{ExecutorConfig, ExecutorSpec};
use gatehouse_model_testserver::{spawn, ModelServer};
use gatehouse_store::ExecStatus;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_arrives_delta_by_delta_with_its_usage() {
    let server = ModelServer::default();
    let base = spawn(server.clone()).await;
    let mut seen = Vec::new();
    let a = gatehouse_inbox::model::ask(&base, None, "llama-test", "be careful", "Summarise my week", Duration::from_secs(10), |s| seen.push(s.to_string())).await.unwrap();
    assert_eq!(a.answer, "llama-test read: Summarise my week");
    assert!(seen.len() > 2 && seen.windows(2).all(|w| w[1].starts_with(&w[0])), "the answer grew chunk by chunk: {seen:?}");
    assert_eq!((a.model.as_str(), a.completion_tokens), ("llama-test", Some(5)));
    assert!(a.prompt_tokens.unwrap() > 0);
    // A key the server wants: refused without it, accepted with it.
    let keyed = spawn(ModelServer::with_key("sk-test")).await;
    let e = gatehouse_inbox::model::ask(&keyed, None, "m", "s", "u", Duration::from_secs(5), |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("refused the API key"), "{e}");
    assert!(gatehouse_inbox::model::ask(&keyed, Some("sk-test"), "m", "s", "u", Duration::from_secs(5), |_| {}).await.is_ok());
    let e = gatehouse_inbox::model::ask(&base, None, "m", "s", "stall", Duration::from_millis(300), |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("did not answer within"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_prompt_reaches_the_users_model_and_failures_keep_the_envelope() {
    let server = ModelServer::default();
    let base = spawn(server.clone()).await;
    let model = |endpoint: &str| ExecutorSpec::Model { endpoint: endpoint.into(), model: "llama-test".into(), system_prompt: Some("You are Ada's assistant.".into()), timeout_secs: 10 };
    let mut scopes = BTreeMap::new();
    scopes.insert("ask-ai".to_string(), model(&base));
    scopes.insert("offline".to_string(), model("http://127.0.0.1:9/v1"));
    let inbox = TestInbox::start_with(&pubhex(&key(2)), false, ExecutorConfig { default: ExecutorSpec::Noop, scopes }).await;
    let lee = key(1);
    inbox.trust(&pubhex(&lee), "Dr. Lee", policy(&["*"]));
    assert_eq!(inbox.post_json(&inbox.signed(&lee, "ask-ai", "When is my next appointment?")).await.0, 200);
    assert_eq!(inbox.post_json(&inbox.signed(&lee, "offline", "Hello?")).await.0, 200);
    assert_eq!(inbox.post_json(&inbox.signed(&lee, "ask-ai", "please explode")).await.0, 200);
    let store = inbox.store.clone();
    eventually("the model executors finished", || store.envelopes(10, 0).unwrap().iter().all(|e| matches!(e.exec_status, ExecStatus::Succeeded | ExecStatus::Failed))).await;
    let rows = store.envelopes(10, 0).unwrap();
    let by_prompt = |p: &str| rows.iter().find(|e| e.prompt == p).unwrap().clone();

    let ok = by_prompt("When is my next appointment?");
    assert_eq!(ok.exec_status, ExecStatus::Succeeded);
    let r = ok.exec_result.unwrap();
    assert_eq!((r["executor"].as_str(), r["model"].as_str()), (Some("model"), Some("llama-test")));
    assert_eq!(r["answer"], "llama-test read: When is my next appointment?");
    assert!(r["completion_tokens"].as_u64().unwrap() > 0 && r["duration_ms"].is_u64());
    // What the model was told: the scope's prompt, then whose untrusted text follows.
    let sent = &server.requests()[0];
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are Ada's assistant.") && system.contains("external, untrusted prompt from Dr. Lee"), "{system}");
    assert_eq!(sent["messages"][1]["content"], "When is my next appointment?");

    let offline = by_prompt("Hello?");
    assert_eq!(offline.exec_status, ExecStatus::Failed);
    assert!(offline.exec_result.unwrap()["error"].as_str().unwrap().contains("unreachable"));
    let crashed = by_prompt("please explode");
    assert_eq!(crashed.exec_status, ExecStatus::Failed);
    assert!(crashed.exec_result.unwrap()["error"].as_str().unwrap().contains("the model crashed"));
    inbox.stop().await;
}
