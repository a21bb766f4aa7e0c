//! What the MAIL 1.3 reference server (mail-swarms 1.3.6) really sends, as recorded in
//! tests/data/mail-reference-1.3.6 (see its PROVENANCE.md), read as Gatehouse reads it.
//! The live tests against the running reference are in crates/cli/tests/it/mail_reference.rs.

use gatehouse_mail::client::ServerInfo;
use gatehouse_mail::import::{self, Item};
use gatehouse_mail::{MsgType, TaskEvent};

fn recorded(name: &str) -> String {
    let path = format!("{}/../../tests/data/mail-reference-1.3.6/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

fn messages(items: &[import::Entry]) -> Vec<gatehouse_mail::Message> {
    items.iter().filter_map(|e| e.item.message()).collect()
}

#[test]
fn every_message_of_a_streamed_task_is_kept_with_what_was_odd() {
    let text = recorded("six.sse");
    let got = import::read(&text);
    assert_eq!(got.errors, []);
    let msgs = messages(&got.entries);
    assert_eq!(msgs.len(), 6, "the user's message, four between agents, the finish");
    // Agents' messages carry `recipient_swarm: null`: kept, and the departure is named.
    let agents: Vec<_> = msgs[1..5].iter().map(|m| m.odd.as_ref().expect("off the schema")).collect();
    assert!(agents.iter().all(|e| e.field.ends_with("_swarm") && e.message.contains("null")), "{agents:?}");
    // The task id was the user's own ("t-six"); the schema wants a UUID, the reference takes any.
    assert_eq!(msgs[0].odd.as_ref().map(|e| e.field.as_str()), Some("/message/task_id"));
    let last = msgs.last().unwrap();
    assert_eq!((last.msg_type, last.payload.subject.as_str()), (MsgType::BroadcastComplete, "::task_complete::"));
    assert!(!last.payload.is_system_error(), "the normal finish is not an error");
    let finish = got.entries.iter().find_map(|e| match &e.item {
        Item::Event(ev) if ev.is_final() => Some((**ev).clone()),
        _ => None,
    });
    assert!(matches!(finish, Some(TaskEvent::Complete { ref response, .. }) if response == "done: both analyses in"), "{finish:?}");
}

#[test]
fn a_task_error_without_response_is_a_step_and_one_with_response_ends_the_task() {
    // The reference's `_submit_event("task_error", ...)` shape, sent mid-stream.
    let mid = r#"{"timestamp":"2026-11-25T00:53:36.74+00:00","description":"agent example is the swarm name; message from supervisor cannot be delivered to it","task_id":"t","extra_data":{}}"#;
    let ev = TaskEvent::parse("task_error", mid).unwrap();
    assert!(!ev.is_final(), "{ev:?}");
    assert!(matches!(ev, TaskEvent::Step { ref event, ref description, .. } if event == "task_error" && description.contains("swarm name")));
    let end = r#"{"timestamp":"2026-11-25T00:53:36.74+00:00","task_id":"t","response":"timeout"}"#;
    assert!(matches!(TaskEvent::parse("task_error", end).unwrap(), TaskEvent::Failed { .. }));
}

#[test]
fn the_references_exports_import_fully() {
    for (file, expect_messages) in [("events_dump.jsonl", count(&recorded("events_dump.jsonl"), "\"event_type\":\"new_message\"")), ("mis.sse", 7)] {
        let got = import::read(&recorded(file));
        assert_eq!(got.errors, [], "{file}");
        assert_eq!(messages(&got.entries).len(), expect_messages, "{file}");
        assert!(expect_messages >= 6, "{file}");
    }
    // `GET /task`: the task (completed), its messages, and its steps, events' data as text.
    let text = recorded("task.json");
    let got = import::read(&text);
    assert_eq!(got.errors, []);
    assert!(
        matches!(&got.entries[0].item, Item::Task { task_id, completed: Some(true), owner: Some(o), .. } if task_id == "t-mis" && o == "user:alice@example")
    );
    assert_eq!(messages(&got.entries).len(), 7);
    let steps: Vec<String> = got
        .entries
        .iter()
        .filter_map(|e| match &e.item {
            Item::Event(ev) => match &**ev {
                TaskEvent::Step { event, .. } => Some(event.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(steps.contains(&"agent_error".to_string()) && steps.contains(&"tool_call".to_string()), "{steps:?}");
}

#[test]
fn the_references_root_is_read() {
    let root: serde_json::Value = serde_json::from_str(&recorded("root.json")).unwrap();
    let info = ServerInfo::read(&root);
    assert_eq!(info.protocol_version.as_deref(), Some("1.3"));
    assert_eq!(info.swarm.as_deref(), Some("example"));
    assert_eq!(info.entrypoint.as_deref(), Some("supervisor"));
    assert_eq!(info.summary(), "mail 1.3, swarm \"example\" (1.3.6), entrypoint supervisor, running");
    // openapi.yaml's shape reads too.
    let yaml = serde_json::json!({"name": "mail", "version": "1.3", "swarm": "swarm-a", "status": "running", "uptime": 3.0});
    assert_eq!(ServerInfo::read(&yaml).summary(), "mail 1.3, swarm \"swarm-a\", running");
}
