//! Gatehouse's MAIL client against the repo's test swarm over loopback HTTP: metadata,
//! roles, a streamed multi-agent task with pings ending in broadcast_complete, a real
//! interswarm hop, multi-turn, and every error status explained.

use std::time::Duration;

use gatehouse_mail::client::{HttpError, InterswarmSend, SendMessage};
use gatehouse_mail::model::MsgType;
use gatehouse_mail::{ClientError, SwarmClient, TaskEvent};
use gatehouse_mail_testswarm::{spawn, Config, Remote, Swarm};

async fn two_swarms() -> (String, Swarm, Swarm) {
    let b = Swarm::new(Config::new("swarm-b"));
    let b_url = spawn(b.clone()).await;
    let mut cfg = Config::new("swarm-a");
    cfg.remote = Some(Remote { swarm: "swarm-b".into(), base_url: b_url, agent_token: "agent-token".into() });
    let a = Swarm::new(cfg);
    (spawn(a.clone()).await, a, b)
}

#[tokio::test]
async fn metadata_health_identity_status_and_registry() {
    let (url, _, _) = two_swarms().await;
    let c = SwarmClient::new(&url, Some("user-token".into())).unwrap();
    let root = c.root().await.unwrap();
    assert_eq!((root["version"].as_str(), root["swarm"].as_str()), (Some("1.3"), Some("swarm-a")));
    assert_eq!(c.health().await.unwrap()["swarm_name"], "swarm-a");
    let me = c.whoami().await.unwrap();
    assert_eq!((me.id.as_str(), me.role.as_str()), ("u-1", "user"));
    assert_eq!(c.status().await.unwrap()["swarm"]["status"], "ready");
    let swarms = c.swarms().await.unwrap();
    assert_eq!(swarms[0].swarm_name, "swarm-b");
    assert!(swarms[0].latency.is_some());
}

#[tokio::test]
async fn a_streamed_task_arrives_event_by_event_and_ends_in_broadcast_complete() {
    let (url, a, b) = two_swarms().await;
    let c = SwarmClient::new(&url, Some("user-token".into())).unwrap();
    let mut seen = Vec::new();
    let out =
        c.send(&SendMessage { body: "Weather in Lyon?".into(), subject: Some("Trip".into()), ..Default::default() }, |e| seen.push(e.unwrap())).await.unwrap();
    assert!(out.completed);
    assert!(out.response.contains("sunny"), "{out:?}");
    let msgs: Vec<_> = seen.iter().filter_map(|e| if let TaskEvent::Message { message, .. } = e { Some(message) } else { None }).collect();
    assert!(msgs.len() >= 8, "{}", msgs.len());
    assert_eq!(msgs[0].payload.subject, "Trip");
    assert_eq!(msgs.last().unwrap().msg_type, MsgType::BroadcastComplete);
    assert!(msgs.iter().any(|m| m.msg_type == MsgType::Interrupt));
    assert!(msgs.iter().any(|m| m.payload.is_system_error()));
    assert!(seen.iter().any(|e| matches!(e, TaskEvent::Ping { .. })), "pings arrive while the task runs");
    assert!(seen.last().unwrap().is_final());
    // The interswarm hop really crossed: swarm-b validated and received the wrapper.
    let hop = b.received();
    assert_eq!(hop.len(), 1);
    assert_eq!(hop[0]["payload"]["task_id"].as_str(), Some(out.task_id.as_str()));
    assert!(msgs.iter().any(|m| m.payload.sender.split() == ("forecast", Some("swarm-b"))));
    // Multi-turn: the same task_id continues the task.
    let again = c.send(&SendMessage { body: "And the day after?".into(), task_id: Some(out.task_id.clone()), ..Default::default() }, |_| {}).await.unwrap();
    assert_eq!(again.task_id, out.task_id);
    assert!(again.response.starts_with("Turn 2"), "{again:?}");
    assert!(a.task(&out.task_id).len() > msgs.len());
}

#[tokio::test]
async fn errors_are_explained_by_status() {
    let (url, _, _) = two_swarms().await;
    let anon = SwarmClient::new(&url, None).unwrap();
    assert!(matches!(anon.whoami().await, Err(ClientError::Unauthorized { status: 401, .. })));
    let wrong = SwarmClient::new(&url, Some("nope".into())).unwrap();
    assert!(matches!(wrong.status().await, Err(ClientError::Unauthorized { .. })));
    let agent = SwarmClient::new(&url, Some("agent-token".into())).unwrap();
    match agent.send(&SendMessage { body: "hi".into(), ..Default::default() }, |_| {}).await {
        Err(e @ ClientError::Unauthorized { .. }) => assert!(e.to_string().contains("role"), "{e}"),
        other => panic!("{other:?}"),
    }
    let c = SwarmClient::new(&url, Some("user-token".into())).unwrap();
    match c.send(&SendMessage::default(), |_| {}).await {
        Err(ClientError::BadRequest { detail, .. }) => assert!(detail.contains("no message"), "{detail}"),
        other => panic!("{other:?}"),
    }
    match c.send(&SendMessage { body: "please explode".into(), ..Default::default() }, |_| {}).await {
        Err(e @ ClientError::Server { status: 500, .. }) => assert_eq!(e.code().name(), "SWARM_ERROR"),
        other => panic!("{other:?}"),
    }
    // A system task error ends the task as failed-by-content: flagged, still completed.
    let mut flagged = false;
    let out = c
        .send(&SendMessage { body: "this will fail".into(), ..Default::default() }, |e| {
            if let Ok(TaskEvent::Message { message, .. }) = e {
                flagged |= message.payload.is_system_error() && message.msg_type == MsgType::BroadcastComplete;
            }
        })
        .await
        .unwrap();
    assert!(flagged, "{out:?}");
    // A task_error mid-stream (no `response`, as the reference sends one) is a step; the
    // task goes on to its finish and every message after it is handed over.
    let mut steps = Vec::new();
    let mut after = 0;
    let out = c
        .send(&SendMessage { body: "misroute".into(), ..Default::default() }, |e| match e {
            Ok(TaskEvent::Step { event, .. }) => steps.push(event),
            Ok(TaskEvent::Message { .. }) if steps.iter().any(|s| s == "task_error") => after += 1,
            _ => {}
        })
        .await
        .unwrap();
    assert!(out.completed && steps.contains(&"task_error".to_string()), "{out:?} {steps:?}");
    assert!(after >= 5, "{after} messages after the mid-stream error");
    // A whole send has a deadline, however lively the stream (pings keep it from idling).
    let bounded = SwarmClient::new(&url, Some("user-token".into())).unwrap().with_deadline(Duration::from_millis(300));
    match bounded.send(&SendMessage { body: "Weather in Lyon?".into(), ..Default::default() }, |_| {}).await {
        Err(ClientError::Interrupted(why)) => assert!(why.contains("did not finish within"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A silent stream is given up on after the idle limit, not waited on forever.
    let quick = SwarmClient::new(&url, Some("user-token".into())).unwrap().with_idle(Duration::from_millis(500));
    assert!(matches!(quick.send(&SendMessage { body: "stall".into(), ..Default::default() }, |_| {}).await, Err(ClientError::Interrupted(_))));
    // Nothing listens here.
    let gone = SwarmClient::new("http://127.0.0.1:9", None).unwrap();
    assert!(matches!(gone.root().await, Err(ClientError::Transport(HttpError::Unreachable { .. }))));
    // Plain http is for loopback only.
    assert!(matches!(SwarmClient::new("http://swarm.example.com", None), Err(ClientError::Transport(HttpError::BadUrl(_)))));
}

#[tokio::test]
async fn an_interswarm_message_is_routed_and_answered_with_a_valid_mail_message() {
    let (url, _, _) = two_swarms().await;
    let c = SwarmClient::new(&url, Some("user-token".into())).unwrap();
    let (msg, _) = c
        .interswarm(&InterswarmSend {
            user_token: "user-token".into(),
            body: "Forecast please".into(),
            targets: vec!["forecast@swarm-b".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(msg.msg_type, MsgType::Request);
    assert_eq!(msg.payload.recipients[0].split(), ("forecast", Some("swarm-b")));
    assert_eq!(msg.payload.sender_swarm.as_deref(), Some("swarm-a"));
    match c.interswarm(&InterswarmSend { user_token: "user-token".into(), body: "x".into(), ..Default::default() }).await {
        Err(ClientError::BadRequest { detail, .. }) => assert!(detail.contains("targets")),
        other => panic!("{other:?}"),
    }
}
