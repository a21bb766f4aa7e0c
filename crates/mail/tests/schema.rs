//! The spec's shipped examples round-trip through the typed model; variants the schemas
//! forbid are refused with the field named.

use gatehouse_mail::import::{self, Item};
use gatehouse_mail::model::{AddressType, Contributor, Interswarm, Message, MsgType};
use gatehouse_mail::TaskEvent;
use serde_json::{json, Value};

fn shared(path: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/mail").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn example(name: &str) -> Value {
    serde_json::from_str(&shared(&format!("examples/{name}.json"))).unwrap()
}

#[test]
fn the_embedded_schemas_are_the_specs_own_files() {
    assert_eq!(gatehouse_mail::schema::CORE, shared("MAIL-core.schema.json"));
    assert_eq!(gatehouse_mail::schema::INTERSWARM, shared("MAIL-interswarm.schema.json"));
}

#[test]
fn every_shipped_message_example_reads_and_round_trips() {
    for (name, ty, tier) in [
        // From a user: tier 2 whatever the type.
        ("mail_message_request", MsgType::Request, 2),
        ("mail_message_response", MsgType::Response, 5),
        // From the system: tier 1.
        ("mail_message_broadcast", MsgType::Broadcast, 1),
        ("mail_message_interrupt", MsgType::Interrupt, 3),
        ("mail_message_broadcast_complete", MsgType::BroadcastComplete, 4),
    ] {
        let v = example(name);
        let m = Message::from_value(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.msg_type, ty, "{name}");
        assert_eq!(m.tier(), tier, "{name}");
        assert_eq!(m.raw, v, "{name}: kept as received");
        assert_eq!(m.payload.task_id, v["message"]["task_id"], "{name}");
        assert!(!m.payload.recipients.is_empty(), "{name}");
        // Re-serialised, it is still valid and reads the same.
        let again = Message::from_value(&serde_json::from_str(&serde_json::to_string(&m.raw).unwrap()).unwrap()).unwrap();
        assert_eq!(again, m, "{name}");
    }
    let done = Message::from_value(&example("mail_message_broadcast_complete")).unwrap();
    assert!(done.payload.recipients[0].is_all());
}

#[test]
fn the_shipped_interswarm_examples_read_with_owner_contributors_and_swarms() {
    for name in ["interswarm_request", "interswarm_response"] {
        let v = example(name);
        let w = Interswarm::from_value(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(w.raw, v);
        assert!(w.task_contributors.contains(&w.task_owner));
        assert_eq!(Contributor::parse(&w.task_owner).unwrap().swarm, "swarm-a", "{name}: the task was created on swarm-a");
        let (agent, swarm) = w.payload.sender.split();
        assert!(!agent.is_empty() && swarm.is_some(), "{name}: {:?}", w.payload.sender);
    }
    let w = Interswarm::from_value(&example("interswarm_request")).unwrap();
    assert_eq!(w.payload.recipients[0].split(), ("weather", Some("swarm-b")));
    assert_eq!(w.payload.recipient_swarms, ["swarm-b"]);
    assert_eq!(w.as_message().payload.body, "Forecast please");
}

fn refused(v: &Value) -> (String, String) {
    let e = Message::from_value(v).expect_err("must be refused");
    (e.field, e.message)
}

#[test]
fn variants_the_schemas_forbid_are_refused_naming_the_field() {
    let base = example("mail_message_request");
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        f(&mut v);
        v
    };
    assert_eq!(refused(&with(&|v| v["id"] = "not-a-uuid".into())).0, "/id");
    assert_eq!(refused(&with(&|v| v["timestamp"] = "yesterday".into())).0, "/timestamp");
    assert_eq!(refused(&with(&|v| v["msg_type"] = "shout".into())).0, "/msg_type");
    assert_eq!(
        refused(&with(&|v| {
            v.as_object_mut().unwrap().remove("id");
        }))
        .0,
        "/id"
    );
    assert_eq!(refused(&with(&|v| v["extra"] = 1.into())).0, "/extra");
    // The conditional binding: a request's payload must be a MAILRequest.
    assert_eq!(
        refused(&with(&|v| {
            v["message"].as_object_mut().unwrap().remove("recipient");
        }))
        .0,
        "/message/recipient"
    );
    assert_eq!(refused(&with(&|v| v["message"]["sender"]["address_type"] = "robot".into())).0, "/message/sender/address_type");
    assert_eq!(refused(&with(&|v| v["message"]["sender"]["address"] = "".into())).0, "/message/sender/address");
    assert_eq!(refused(&with(&|v| v["message"]["task_id"] = 7.into())).0, "/message/task_id");
    // A request body under msg_type broadcast lacks broadcast_id and recipients.
    let (field, _) = refused(&with(&|v| v["msg_type"] = "broadcast".into()));
    assert!(["/message/broadcast_id", "/message/recipients", "/message/recipient", "/message/request_id"].contains(&field.as_str()), "{field}");
    // Empty recipients of a broadcast.
    let mut b = example("mail_message_broadcast");
    b["message"]["recipients"] = json!([]);
    assert_eq!(refused(&b).0, "/message/recipients");
}

#[test]
fn interswarm_wrappers_need_owner_and_contributors_in_role_id_at_swarm_form() {
    let base = example("interswarm_request");
    let mut v = base.clone();
    v["task_owner"] = "123".into();
    assert_eq!(Interswarm::from_value(&v).unwrap_err().field, "/task_owner");
    let mut v = base.clone();
    v["task_contributors"] = json!(["user:9@swarm-a"]);
    assert_eq!(Interswarm::from_value(&v).unwrap_err().field, "/task_contributors");
    let mut v = base.clone();
    v["msg_type"] = "broadcast_complete".into();
    assert_eq!(Interswarm::from_value(&v).unwrap_err().field, "/msg_type", "the wrapper has no broadcast_complete");
    let mut v = base;
    v["payload"]["recipient"] = json!({"address_type": "agent"});
    assert_eq!(Interswarm::from_value(&v).unwrap_err().field, "/payload/recipient/address");
    assert_eq!(Contributor::parse("swarm:swarm-a@swarm-b").unwrap().role, "swarm");
    assert!(Contributor::parse("agent:x@y").is_err());
}

#[test]
fn priority_tiers_follow_the_sender_and_type() {
    let mut v = example("mail_message_request");
    v["message"]["sender"] = json!({"address_type": "system", "address": "swarm-a"});
    assert_eq!(Message::from_value(&v).unwrap().tier(), 1);
    v["message"]["sender"] = json!({"address_type": "user", "address": "u"});
    let m = Message::from_value(&v).unwrap();
    assert_eq!((m.tier(), m.payload.sender.address_type), (2, AddressType::User));
    v["message"]["subject"] = "::task_error::".into();
    assert!(Message::from_value(&v).unwrap().payload.is_system_error());
}

#[test]
fn stream_events_are_read_as_the_reference_sends_them() {
    let full = example("mail_message_request");
    let data = json!({"timestamp": "2025-01-01T12:00:00Z", "description": "sending", "task_id": "t", "extra_data": {"full_message": full}}).to_string();
    match TaskEvent::parse("new_message", &data).unwrap() {
        TaskEvent::Message { task_id, message } => assert_eq!((task_id.as_str(), message.msg_type), ("t", MsgType::Request)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(TaskEvent::parse("ping", "{\"task_id\":\"t\"}").unwrap(), TaskEvent::Ping { .. }));
    let done = TaskEvent::parse("task_complete", "{\"task_id\":\"t\",\"response\":\"ok\"}").unwrap();
    assert!(done.is_final());
    assert!(matches!(TaskEvent::parse("task_error", "{\"task_id\":\"t\",\"response\":\"timeout\"}").unwrap(), TaskEvent::Failed { .. }));
    assert!(matches!(TaskEvent::parse("tool_call", "{\"task_id\":\"t\",\"description\":\"calc\"}").unwrap(), TaskEvent::Step { .. }));
    // A message off the schema is kept, saying where; one without what a timeline needs
    // (its task) is refused, named by its path in the event.
    let mut odd = full;
    odd["id"] = "x".into();
    match TaskEvent::parse("new_message", &json!({"task_id": "t", "extra_data": {"full_message": odd}}).to_string()).unwrap() {
        TaskEvent::Message { message, .. } => assert_eq!(message.odd.unwrap().field, "/id"),
        other => panic!("{other:?}"),
    }
    let mut bad = odd.clone();
    bad["message"].as_object_mut().unwrap().remove("task_id");
    let e = TaskEvent::parse("new_message", &json!({"task_id": "t", "extra_data": {"full_message": bad}}).to_string()).unwrap_err();
    assert_eq!(e.error.field, "/extra_data/full_message/message/task_id");
    assert!(TaskEvent::parse("task_complete", "{}").is_err(), "a finish without task_id");
    assert!(TaskEvent::parse("new_message", "not json").is_err());
}

#[test]
fn an_import_keeps_valid_lines_and_reports_invalid_ones_by_line() {
    let req = serde_json::to_string(&example("mail_message_request")).unwrap();
    let hop = serde_json::to_string(&example("interswarm_request")).unwrap();
    let mut bad = example("mail_message_response");
    bad["msg_type"] = "nope".into();
    let text = format!("{req}\n\n{{truncated\n{hop}\n{}\n[1,2]\n", serde_json::to_string(&bad).unwrap());
    let got = import::read(&text);
    assert_eq!(got.entries.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 4]);
    assert!(matches!(got.entries[1].item, Item::Interswarm(_)));
    assert_eq!(got.errors.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 5, 6]);
    assert_eq!(got.errors[1].error.field, "/msg_type");
    // A pretty-printed array: items are placed by the line they start on.
    let arr = serde_json::to_string_pretty(&json!([example("mail_message_request"), example("mail_message_broadcast_complete")])).unwrap();
    let got = import::read(&arr);
    assert_eq!(got.errors, []);
    assert_eq!(got.entries[0].line, 2);
    assert!(got.entries[1].line > 10);
    // A single pretty-printed example file.
    assert_eq!(import::read(&shared("examples/mail_message_interrupt.json")).entries.len(), 1);
    assert_eq!(import::read("").errors[0].line, 1);
}
