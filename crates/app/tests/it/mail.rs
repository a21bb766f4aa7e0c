//! MAIL tasks kept for the user: a task followed live on the repo's test swarm is stored
//! message by message and survives a restart (reopening the store), a later turn joins the
//! same task, a dropped stream leaves the task interrupted with what arrived, and task logs
//! import with their invalid lines reported.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_app::doors::mail::{self, LiveEvent};
use gatehouse_mail::client::SendMessage;
use gatehouse_mail::SwarmClient;
use gatehouse_mail_testswarm::{spawn, Config, Remote, Swarm};
use gatehouse_store::Store;

fn shared(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/mail").join(path)).unwrap()
}

#[tokio::test]
async fn a_live_task_is_kept_by_task_id_across_turns_and_restarts() {
    let b_url = spawn(Swarm::new(Config::new("swarm-b"))).await;
    let mut cfg = Config::new("swarm-a");
    cfg.remote = Some(Remote { swarm: "swarm-b".into(), base_url: b_url, agent_token: "agent-token".into() });
    let url = spawn(Swarm::new(cfg)).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gatehouse.db");
    let store = Arc::new(Store::open(&db).unwrap());
    store.mail_swarm_put("research", &url, "2026-11-22T00:00:00Z").unwrap();
    let client = SwarmClient::new(&url, Some("user-token".into())).unwrap();

    let mut live = Vec::new();
    let out = mail::send(
        store.clone(),
        &client,
        "research",
        &SendMessage { body: "Weather in Lyon?".into(), subject: Some("Trip".into()), ..Default::default() },
        |e| live.push(e.clone()),
    )
    .await
    .unwrap();
    assert!(out.completed);
    let shown = live.iter().filter(|e| matches!(e, LiveEvent::Message { .. })).count();
    let task = store.mail_task(&out.task_id).unwrap().unwrap();
    assert_eq!(task.messages.len(), shown, "every message shown is stored");
    assert_eq!((task.task.state.as_str(), task.task.subject.as_str(), task.task.swarm.as_deref()), ("completed", "Trip", Some("research")));
    assert!(task.task.response.as_deref().unwrap().contains("sunny"));
    assert_eq!(task.messages.last().unwrap().msg_type, "broadcast_complete");
    assert!(task.messages.iter().any(|m| m.system_error && m.subject == "::tool_call_error::"));
    assert!(task.messages.iter().any(|m| m.sender == "agent:forecast@swarm-b"));
    assert!(task.task.participants.contains(&"agent:weather".to_string()));
    assert!(task.events.iter().any(|e| e.event == "action_call"));

    // A second turn on the same task joins it.
    mail::send(
        store.clone(),
        &client,
        "research",
        &SendMessage { body: "And Sunday?".into(), task_id: Some(out.task_id.clone()), ..Default::default() },
        |_| {},
    )
    .await
    .unwrap();
    drop(store);
    let store = Arc::new(Store::open(&db).unwrap());
    let again = store.mail_task(&out.task_id).unwrap().unwrap();
    assert_eq!(again.messages.len(), shown + 3, "the second turn's request, answer and finish");
    assert_eq!(again.task.state, "completed");
    assert!(again.task.response.unwrap().starts_with("Turn 2"));
    // Search by body, subject and agent.
    assert_eq!(store.mail_tasks(Some("75.2"), 10).unwrap().len(), 1);
    assert_eq!(store.mail_tasks(Some("forecast@swarm-b"), 10).unwrap().len(), 1);
    assert_eq!(store.mail_tasks(Some("trip"), 10).unwrap().len(), 1, "case-insensitive");
    assert_eq!(store.mail_tasks(Some("no such thing"), 10).unwrap().len(), 0);
    assert_eq!(store.mail_tasks(Some("100%"), 10).unwrap().len(), 0, "LIKE wildcards are literal");

    // A stream that goes silent: the task is kept as interrupted, with what arrived.
    let quick = SwarmClient::new(&url, Some("user-token".into())).unwrap().with_idle(Duration::from_millis(400));
    let e = mail::send(
        store.clone(),
        &quick,
        "research",
        &SendMessage { body: "stall".into(), task_id: Some("9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into()), ..Default::default() },
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(e.code().name(), "INTERRUPTED");
}

#[test]
fn a_task_log_imports_with_its_bad_lines_reported_and_twice_is_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("gatehouse.db")).unwrap();
    let one = |name: &str| serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&shared(&format!("examples/{name}.json"))).unwrap()).unwrap();
    let log = dir.path().join("task.jsonl");
    let text = [
        one("mail_message_request"),
        "{\"msg_type\": \"request\"}".into(),
        one("mail_message_response"),
        one("interswarm_request"),
        one("mail_message_broadcast_complete"),
    ]
    .join("\n");
    std::fs::write(&log, text).unwrap();
    let report = mail::import_file(&store, &log, true).unwrap();
    assert_eq!((report.imported, report.duplicates), (4, 0));
    assert_eq!(report.errors.len(), 1);
    assert_eq!((report.errors[0].line, report.errors[0].field.as_str()), (2, "/message"), "no message object: nothing to keep");
    let task = store.mail_task("11111111-aaaa-4aaa-8aaa-111111111111").unwrap().unwrap();
    assert_eq!(task.task.source, "task.jsonl");
    assert_eq!(task.task.state, "completed", "its broadcast_complete finished it");
    let hop = store.mail_task("33333333-aaaa-4aaa-8aaa-333333333333").unwrap().unwrap();
    assert_eq!(hop.task.task_owner.as_deref(), Some("user:123@swarm-a"));
    assert_eq!(hop.task.contributors, ["user:123@swarm-a"]);
    assert_eq!(store.mail_task("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa").unwrap().unwrap().messages.len(), 2, "request and response share a task");
    let again = mail::import_file(&store, &log, true).unwrap();
    assert_eq!((again.imported, again.duplicates), (0, 4));
    // Not text, and too large, are refused whole.
    let bin = dir.path().join("x.json");
    std::fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();
    assert_eq!(mail::import_file(&store, &bin, true).unwrap_err().code().name(), "NOT_TEXT");
}

#[tokio::test]
async fn task_logs_dropped_into_the_watched_folder_are_imported_and_filed_with_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let watch = dir.path().join("drop");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let opts = gatehouse_app::doors::ServeOptions { listener: None, watch: Some(watch.clone()), uamp: None, ..Default::default() };
    let key = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    tokio::spawn(gatehouse_app::doors::run(
        store.clone(),
        gatehouse_epp::public_key_hex(&key),
        opts,
        async {
            let _ = stop_rx.await;
        },
        |_| {},
    ));
    let wait_for = |p: std::path::PathBuf| async move {
        for _ in 0..200 {
            if p.exists() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} never appeared", p.display());
    };
    wait_for(watch.join("accepted")).await;
    let one = |name: &str| serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&shared(&format!("examples/{name}.json"))).unwrap()).unwrap();
    std::fs::write(watch.join("swarm-log.jsonl"), format!("{}\nnot json\n{}\n", one("mail_message_request"), one("mail_message_response"))).unwrap();
    wait_for(watch.join("accepted/swarm-log.jsonl.import.json")).await;
    assert!(watch.join("accepted/swarm-log.jsonl").exists(), "the log is filed, not deleted");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(watch.join("accepted/swarm-log.jsonl.import.json")).unwrap()).unwrap();
    assert_eq!(report["imported"], 2);
    assert_eq!(report["errors"][0]["line"], 2);
    assert_eq!(store.mail_task("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa").unwrap().unwrap().messages.len(), 2);
    // Nothing usable in it: rejected, with the reason beside it.
    std::fs::write(watch.join("broken.mail.json"), "{\"msg_type\": \"request\"}").unwrap();
    wait_for(watch.join("rejected/broken.mail.json.import.json")).await;
    assert!(watch.join("rejected/broken.mail.json").exists());
    let report = std::fs::read_to_string(watch.join("rejected/broken.mail.json.import.json")).unwrap();
    assert!(report.contains("/message"), "{report}");
    let _ = stop_tx.send(());
}

#[tokio::test]
async fn a_swarms_token_is_kept_for_the_address_it_was_given_for() {
    let a = spawn(Swarm::new(Config::new("swarm-a"))).await;
    // Another server that would take the same token, as an impostor that learnt it would.
    let b = spawn(Swarm::new(Config::new("swarm-b"))).await;
    let dir = tempfile::tempdir().unwrap();
    gatehouse_keys::load_or_create(dir.path(), gatehouse_keys::KeystoreKind::File).unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let added = mail::swarm_add(store.clone(), dir.path(), "research", &a, Some("user-token".into()), None).await.unwrap();
    assert!(added.has_token);
    assert!(added.info["whoami"].get("error").is_none(), "{}", added.info);
    // The same name, another address, no token given: the old token does not follow.
    let moved = mail::swarm_add(store.clone(), dir.path(), "research", &b, None, None).await.unwrap();
    assert!(!moved.has_token);
    assert!(moved.info["whoami"].get("error").is_some(), "the survey of the new address went without a token: {}", moved.info);
    let client = mail::swarm_client(&store, dir.path(), "research").unwrap();
    assert!(client.whoami().await.is_err(), "no token is sent to the new address");
    // Moving back does not bring it back either: it was forgotten when the address changed.
    let back = mail::swarm_add(store.clone(), dir.path(), "research", &a, None, None).await.unwrap();
    assert!(!back.has_token);
    // Both changes are on record, and removing forgets the connection.
    let audit = store.audit_list(10).unwrap();
    assert_eq!(audit.iter().filter(|e| e.action == "mail.swarm_add").count(), 3);
    mail::swarm_remove(&store, dir.path(), "research").unwrap();
    assert!(store.mail_swarm("research").unwrap().is_none());
    assert_eq!(store.audit_list(1).unwrap()[0].action, "mail.swarm_remove");
}
