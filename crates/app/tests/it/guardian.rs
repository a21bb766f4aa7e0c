//! The ASOP guardian over loopback HTTP, driven by a scripted agent through a session:
//! trigger → message → tool call request → tool call result, with allow, deny, modify
//! (redaction), ask answered by the user, ask timing out, "always" becoming a rule, every
//! JSON-RPC error code, a batch, and an agent that is not registered yet.

use std::sync::Arc;
use std::time::Duration;

use crate::common::shown;
use gatehouse_app::consent::Decision;
use gatehouse_app::doors::guardian::{agent_key, UserAnswer};
use gatehouse_app::doors::ServeOptions;
use gatehouse_asop::rules::Action;
use gatehouse_store::asop::AsopRuleRow;
use gatehouse_store::Store;
use serde_json::{json, Value};

struct G {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    inbox: Arc<gatehouse_app::doors::gate::state::Gate>,
    url: String,
    http: reqwest::Client,
}

async fn start() -> G {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let key = ed25519_dalek::SigningKey::from_bytes(&[4; 32]);
    let (inbox, rx) = gatehouse_app::doors::service::build(store.clone(), &gatehouse_epp::public_key_hex(&key));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/asop/v1", listener.local_addr().unwrap());
    let opts = ServeOptions { listener: Some(listener), watch: None, uamp: None, ..Default::default() };
    tokio::spawn(gatehouse_app::doors::service::run_with(inbox.clone(), rx, opts, std::future::pending(), |_| {}));
    for _ in 0..100 {
        if inbox.door::<gatehouse_app::doors::guardian::Guardian>().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    G { _dir: dir, store, inbox, url, http: reqwest::Client::new() }
}

impl G {
    async fn raw(&self, body: &str) -> (u16, Option<Value>) {
        let r = self.http.post(&self.url).header("content-type", "application/json").body(body.to_string()).send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (status, (!text.is_empty()).then(|| serde_json::from_str(&text).unwrap()))
    }

    async fn call(&self, v: Value) -> Value {
        self.raw(&v.to_string()).await.1.unwrap()
    }

    fn rule(&self, agent: &str, method: &str, tool: &str, condition: Option<Value>, action: &str, redact: Option<&str>) -> i64 {
        self.store
            .asop_rule_add(&AsopRuleRow {
                id: 0,
                agent: agent.into(),
                method: method.into(),
                tool: tool.into(),
                condition,
                action: action.into(),
                redact: redact.map(str::to_string),
                note: None,
                source: "user".into(),
                created_at: "2026-11-22T00:00:00Z".into(),
                until: None,
            })
            .unwrap()
    }

    /// Answers the next step that waits for the user, as the window would.
    fn answer_next(&self, answer: UserAnswer) -> tokio::task::JoinHandle<String> {
        let g = self.inbox.door::<gatehouse_app::doors::guardian::Guardian>().unwrap();
        tokio::spawn(async move {
            for _ in 0..200 {
                if let Some(s) = g.pending().unwrap().first().cloned() {
                    g.answer(s.row, answer).unwrap();
                    return s.summary;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("nothing was asked");
        })
    }
}

fn context(step: &str) -> Value {
    json!({
        "agent": {"id": "mailer-1", "name": "Mail helper", "instructions": "Send mail for the user", "version": "1", "provider": {"name": "Acme", "url": "https://acme.example"}},
        "session": {"id": "session-1"}, "turnId": "turn-1", "stepId": step, "timestamp": "2025-01-24T15:30:45.123Z",
        "user": {"id": "u-1", "organization": {"id": "org-1"}}
    })
}

fn tool_call(id: i64, tool: &str, inputs: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "steps/toolCallRequest", "params": {
        "context": context(&format!("step-{id}")), "reasoning": "The user asked me to send the summary",
        "toolCallRequest": {"executionId": format!("exec-{id}"), "toolId": tool, "inputs": inputs}}})
}

async fn register(g: &G) {
    let r = g.call(json!({"jsonrpc": "2.0", "id": 0, "method": "steps/agentTrigger", "params": {"context": context("step-0"), "trigger": {"type": "autonomous", "content": [{"kind": "text", "text": "new mail"}], "event": {"id": "e-1", "type": "email"}}}})).await;
    assert_eq!(r["error"]["code"], -32001, "an unknown agent is refused: {r}");
    assert!(g.store.pending_list().unwrap().iter().any(|p| p.public_key == agent_key("mailer-1")), "and knocks for the user");
    let out = gatehouse_app::consent::decide(&g.inbox, &shown(&g.inbox, &agent_key("mailer-1")), Decision::AlwaysAllowScope, chrono::Utc::now()).unwrap();
    assert!(out.message.starts_with("Registered"), "{}", out.message);
}

#[tokio::test]
async fn a_session_is_guarded_step_by_step() {
    let g = start().await;
    register(&g).await;
    g.rule("*", "steps/agentTrigger", "*", None, "allow", None);
    g.rule("*", "steps/message", "*", None, "allow", None);
    g.rule("*", "steps/toolCallResult", "*", None, "allow", None);
    g.rule("mailer-1", "steps/toolCallRequest", "delete_mailbox", None, "deny", None);
    g.rule(
        "*",
        "steps/toolCallRequest",
        "send_email",
        Some(json!({"argument": "to", "op": "ends_with", "value": "@company.io"})),
        "modify",
        Some(r"\b(?:\d[ -]?){13,16}\b"),
    );

    let r = g.call(json!({"jsonrpc": "2.0", "id": 1, "method": "steps/agentTrigger", "params": {"context": context("step-1"), "trigger": {"type": "autonomous", "content": [{"kind": "text", "text": "new mail"}], "event": {"id": "e-1", "type": "email"}}}})).await;
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let r = g.call(json!({"jsonrpc": "2.0", "id": 2, "method": "steps/message", "params": {"context": context("step-2"), "message": {"role": "user", "id": "m-1", "content": [{"kind": "text", "text": "Send the summary to Eve"}]}}})).await;
    assert_eq!((r["id"].as_i64(), r["result"]["decision"].as_str()), (Some(2), Some("allow")));

    // Inside the domain, with a card number in the body: modified, the number redacted.
    let r = g.call(tool_call(3, "send_email", json!([{"name": "to", "value": "bob@company.io"}, {"name": "body", "value": "card 4111 1111 1111 1111"}]))).await;
    assert_eq!(r["result"]["decision"], "modify", "{r}");
    assert_eq!(r["result"]["modifiedRequest"]["params"]["toolCallRequest"]["inputs"][1]["value"], "card [REDACTED]");
    // Outside the domain: no rule decides, so the user is asked; the request waits.
    let asked = g.answer_next(UserAnswer { decision: Action::Allow, always: false, redact: None, note: Some("I know Eve".into()), lasting: None });
    let r = g.call(tool_call(4, "send_email", json!([{"name": "to", "value": "eve@elsewhere.example"}]))).await;
    assert_eq!((r["result"]["decision"].as_str(), r["result"]["message"].as_str()), (Some("allow"), Some("I know Eve")), "{r}");
    assert_eq!(asked.await.unwrap(), "Mail helper wants to use send_email with to = “eve@elsewhere.example”.");
    let r = g.call(tool_call(5, "delete_mailbox", json!([]))).await;
    assert_eq!(r["result"]["decision"], "deny");
    // The schema's shape and the text's shape of a tool result both work.
    let r = g.call(json!({"jsonrpc": "2.0", "id": 6, "method": "steps/toolCallResult", "params": {"context": context("step-6"), "executionId": "exec-4", "result": {"outputs": [{"kind": "text", "text": "sent"}], "isError": false}}})).await;
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    let r = g.call(json!({"jsonrpc": "2.0", "id": 7, "method": "steps/toolCallResult", "params": {"context": context("step-7"), "toolCallResult": {"executionId": "exec-4", "result": {"outputs": [], "isError": false}}}})).await;
    assert_eq!(r["result"]["decision"], "allow", "{r}");

    // The audit: the whole session in order, each step with its decision and who made it.
    let steps = g.store.asop_session("session-1").unwrap();
    let got: Vec<(&str, &str)> = steps.iter().map(|s| (s.decision.as_str(), s.decided_by.as_deref().unwrap_or(""))).collect();
    assert_eq!(
        got,
        [
            ("error", "unregistered"),
            ("allow", "rule"),
            ("allow", "rule"),
            ("modify", "rule"),
            ("allow", "user"),
            ("deny", "rule"),
            ("allow", "rule"),
            ("allow", "rule")
        ]
    );
    assert_eq!(steps[4].reasoning.as_deref(), Some("The user asked me to send the summary"));
}

/// A step answered by the user no longer waits, and whoever shows what waits hears so
/// (the phone page, the desktop's notifications): the one "what waits changed" signal.
#[tokio::test]
async fn a_step_answered_by_the_user_tells_whoever_shows_what_waits() {
    let g = start().await;
    register(&g).await;
    let guardian = g.inbox.door::<gatehouse_app::doors::guardian::Guardian>().unwrap();
    let store = g.store.clone();
    let heard = tokio::spawn(async move {
        let row = loop {
            if let Some(s) = guardian.pending().unwrap().first() {
                break s.row;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // What the step's arrival said is heard out before the answer.
        let mut changes = gatehouse_app::waiting::follow(&store);
        while tokio::time::timeout(Duration::from_millis(500), changes.next()).await.is_ok() {}
        guardian.answer(row, UserAnswer { decision: Action::Deny, always: false, redact: None, note: None, lasting: None }).unwrap();
        tokio::time::timeout(Duration::from_secs(2), changes.next()).await.is_ok_and(|h| h)
    });
    let r = g.call(tool_call(1, "post_tweet", json!([{"name": "text", "value": "hello"}]))).await;
    assert_eq!(r["result"]["decision"], "deny", "{r}");
    assert!(heard.await.unwrap(), "the answer was not told to whoever shows what waits");
}

#[tokio::test]
async fn an_unanswered_ask_times_out_and_always_becomes_a_rule() {
    let g = start().await;
    register(&g).await;
    // The agent says how long it waits (ping), naming itself in metadata.
    let r = g.call(json!({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": {"timestamp": "2025-01-24T15:30:45Z", "timeout": 400, "metadata": {"agentId": "mailer-1"}}})).await;
    assert_eq!((r["result"]["status"].as_str(), r["result"]["version"].as_str()), (Some("connected"), Some("1.0.0")), "{r}");
    let t = std::time::Instant::now();
    let r = g.call(tool_call(1, "post_tweet", json!([{"name": "text", "value": "hello"}]))).await;
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert!(t.elapsed() >= Duration::from_millis(400) && t.elapsed() < Duration::from_secs(5));
    assert_eq!(g.store.asop_session("session-1").unwrap().last().unwrap().decided_by.as_deref(), Some("timeout"));
    // Answered with "always": the next identical step needs nobody.
    let asked = g.answer_next(UserAnswer { decision: Action::Deny, always: true, redact: None, note: Some("No tweets".into()), lasting: None });
    let r = g.call(tool_call(2, "post_tweet", json!([{"name": "text", "value": "hello again"}]))).await;
    assert_eq!(r["result"]["decision"], "deny");
    asked.await.unwrap();
    let r = g.call(tool_call(3, "post_tweet", json!([{"name": "text", "value": "third"}]))).await;
    assert_eq!((r["result"]["decision"].as_str(), r["result"]["message"].as_str()), (Some("deny"), Some("No tweets")));
    assert_eq!(g.store.asop_rules().unwrap().iter().filter(|r| r.source == "always").count(), 1);
    assert!(g.inbox.door::<gatehouse_app::doors::guardian::Guardian>().unwrap().pending().unwrap().is_empty());
}

#[tokio::test]
async fn an_always_for_an_hour_decides_for_the_hour_then_the_step_asks_again() {
    let g = start().await;
    register(&g).await;
    let asked =
        g.answer_next(UserAnswer { decision: Action::Allow, always: true, redact: None, note: None, lasting: Some(gatehouse_app::consent::Lasting::Hour) });
    let r = g.call(tool_call(1, "send_email", json!([{"name": "to", "value": "a@example.com"}]))).await;
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    asked.await.unwrap();
    let rule = g.store.asop_rules().unwrap().into_iter().find(|r| r.source == "always").unwrap();
    let end = chrono::DateTime::parse_from_rfc3339(rule.until.as_deref().unwrap()).unwrap();
    assert!((end.with_timezone(&chrono::Utc) - chrono::Utc::now() - chrono::Duration::hours(1)).num_seconds().abs() < 60, "{end}");
    // Within the hour the rule decides, nobody is asked.
    let r = g.call(tool_call(2, "send_email", json!([{"name": "to", "value": "b@example.com"}]))).await;
    assert_eq!((r["result"]["decision"].as_str(), r["result"]["reasonCode"][0].as_str()), (Some("allow"), Some("rule_allow")), "{r}");
    // The hour is over (the rule's end is moved into the past): the step asks again.
    g.store.asop_rule_remove(rule.id).unwrap();
    g.store.asop_rule_add(&AsopRuleRow { until: Some("2020-01-01T00:00:00Z".into()), ..rule }).unwrap();
    let asked = g.answer_next(UserAnswer { decision: Action::Deny, always: false, redact: None, note: None, lasting: None });
    let r = g.call(tool_call(3, "send_email", json!([{"name": "to", "value": "c@example.com"}]))).await;
    assert_eq!(r["result"]["decision"], "deny", "the user was asked: {r}");
    asked.await.unwrap();
}

#[tokio::test]
async fn an_always_until_a_date_ends_at_the_end_of_that_day() {
    use chrono::TimeZone as _;
    let g = start().await;
    register(&g).await;
    let day = (chrono::Local::now() + chrono::Duration::days(3)).date_naive();
    let until = gatehouse_app::consent::Lasting::Until { date: day.format("%Y-%m-%d").to_string() };
    let asked = g.answer_next(UserAnswer { decision: Action::Allow, always: true, redact: None, note: None, lasting: Some(until) });
    let r = g.call(tool_call(1, "send_email", json!([{"name": "to", "value": "a@example.com"}]))).await;
    assert_eq!(r["result"]["decision"], "allow", "{r}");
    asked.await.unwrap();
    let rule = g.store.asop_rules().unwrap().into_iter().find(|r| r.source == "always").unwrap();
    let end = chrono::DateTime::parse_from_rfc3339(rule.until.as_deref().unwrap()).unwrap();
    let midnight = chrono::Local.from_local_datetime(&day.succ_opt().unwrap().and_hms_opt(0, 0, 0).unwrap()).earliest().unwrap();
    assert_eq!(end, midnight, "the rule lasts to the end of the chosen day, on this computer's clock");
    let r = g.call(tool_call(2, "send_email", json!([{"name": "to", "value": "b@example.com"}]))).await;
    assert_eq!(r["result"]["reasonCode"][0], "rule_allow", "{r}");
}

#[tokio::test]
async fn every_json_rpc_error_code_and_batches() {
    let g = start().await;
    register(&g).await;
    g.rule("*", "*", "*", None, "allow", None);
    let (_, r) = g.raw("{not json").await;
    assert_eq!((r.as_ref().unwrap()["error"]["code"].as_i64(), r.as_ref().unwrap()["id"].is_null()), (Some(-32700), true));
    assert_eq!(g.call(json!([])).await["error"]["code"], -32600);
    assert_eq!(g.call(json!(42)).await["error"]["code"], -32600);
    assert_eq!(g.call(json!({"jsonrpc": "1.0", "id": 1, "method": "ping"})).await["error"]["code"], -32600);
    let r = g.call(json!({"jsonrpc": "2.0", "id": "x", "method": "steps/dance", "params": {}})).await;
    assert_eq!((r["error"]["code"].as_i64(), r["id"].as_str()), (Some(-32601), Some("x")));
    let mut bad = tool_call(9, "t", json!([{"value": 1}]));
    let r = g.call(bad.clone()).await;
    assert_eq!((r["error"]["code"].as_i64(), r["error"]["data"]["field"].as_str()), (Some(-32602), Some("/params/toolCallRequest/inputs/0/name")));
    // -32603: the store holds a modify rule without a pattern (written past the app's checks).
    g.rule("mailer-1", "steps/toolCallRequest", "broken", None, "modify", None);
    bad = tool_call(10, "broken", json!([]));
    assert_eq!(g.call(bad).await["error"]["code"], -32603);
    // -32003: an agent the user blocked.
    g.store.block(&agent_key("rogue-7"), "the user said so", "2026-11-22T00:00:00Z").unwrap();
    let mut rogue = tool_call(13, "send", json!([]));
    rogue["params"]["context"]["agent"]["id"] = "rogue-7".into();
    assert_eq!(g.call(rogue).await["error"]["code"], -32003);
    // A wrong Content-Type is refused before anything is read.
    let r = g.http.post(&g.url).header("content-type", "text/plain").body("{}").send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32600);

    // A batch: answers for the requests, none for the notification, errors in place.
    let note = {
        let mut n = tool_call(0, "send", json!([]));
        n.as_object_mut().unwrap().remove("id");
        n
    };
    let r = g.call(json!([tool_call(11, "send", json!([])), note.clone(), {"jsonrpc": "2.0", "id": 12, "method": "nope"}, 7])).await;
    let arr = r.as_array().unwrap();
    assert_eq!(arr.len(), 3, "{r}");
    assert_eq!(arr[0]["result"]["decision"], "allow");
    assert_eq!((arr[1]["id"].as_i64(), arr[1]["error"]["code"].as_i64()), (Some(12), Some(-32601)));
    assert_eq!(arr[2]["error"]["code"], -32600);
    // Only notifications: nothing comes back, but the step is on record.
    let (status, body) = g.raw(&json!([note]).to_string()).await;
    assert_eq!((status, body), (204, None));
    let steps = g.store.asop_session("session-1").unwrap();
    assert!(
        steps.iter().any(|s| s.step_id.as_deref() == Some("step-0") && s.decision == "allow"),
        "{:#?}",
        steps.iter().map(|s| (&s.step_id, &s.decision, &s.message)).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn nothing_reaches_the_users_queue_or_settings_without_a_registered_agent() {
    let g = start().await;
    // A protocol step naming no agent: refused, nothing kept, nobody asked.
    for method in ["protocols/MCP", "protocols/A2A"] {
        let r = g.call(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {"jsonrpc": "2.0", "method": "tools/call"}}})).await;
        assert_eq!(r["error"]["code"], -32001, "{method}: {r}");
    }
    assert!(g.inbox.door::<gatehouse_app::doors::guardian::Guardian>().unwrap().pending().unwrap().is_empty());
    assert!(g.store.pending_list().unwrap().is_empty(), "no knock either: there is nobody to let in");
    assert!(g.store.asop_session("session-1").unwrap().is_empty());
    // An anonymous or unregistered ping sets no timeout, for nobody.
    for meta in [json!({}), json!({"agentId": "stranger"}), json!({"agentId": "mailer-1"})] {
        let r = g.call(json!({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": {"timestamp": "2025-01-24T15:30:45Z", "timeout": 86_400_000u64, "metadata": meta}})).await;
        assert_eq!(r["result"]["status"], "connected", "{r}");
    }
    for agent in ["*", "stranger", "mailer-1"] {
        assert_eq!(g.store.asop_agent_timeout(agent).unwrap(), None, "{agent}");
    }
    // Registered, its own ping is bounded to the guardian's longest wait.
    register(&g).await;
    g.call(json!({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": {"timestamp": "2025-01-24T15:30:45Z", "timeout": 86_400_000u64, "metadata": {"agentId": "mailer-1"}}})).await;
    assert_eq!(g.store.asop_agent_timeout("mailer-1").unwrap(), Some(gatehouse_app::doors::guardian::MAX_ASK_TIMEOUT.as_millis() as u64));
    assert_eq!(g.store.asop_agent_timeout("*").unwrap(), None);
    // A batch larger than the bound is refused whole: nothing decided, nothing queued.
    let big: Vec<Value> = (0..gatehouse_app::doors::guardian::MAX_BATCH as i64 + 1).map(|i| tool_call(100 + i, "send", json!([]))).collect();
    let r = g.call(Value::Array(big)).await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(g.store.asop_session("session-1").unwrap().len(), 1, "only the registration knock is on record");
    // One agent cannot fill the user's queue: past its share, a step is refused at once.
    let share = gatehouse_app::doors::guardian::MAX_WAITING_PER_AGENT;
    let mut waiting = Vec::new();
    for i in 0..share as i64 {
        let http = g.http.clone();
        let (url, body) = (g.url.clone(), tool_call(200 + i, "send", json!([])).to_string());
        waiting.push(tokio::spawn(async move { http.post(url).header("content-type", "application/json").body(body).send().await }));
    }
    let guardian = g.inbox.door::<gatehouse_app::doors::guardian::Guardian>().unwrap();
    for _ in 0..200 {
        if guardian.pending().unwrap().len() == share {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(guardian.pending().unwrap().len(), share);
    let t = std::time::Instant::now();
    let r = g.call(tool_call(300, "send", json!([]))).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("already has"), "{r}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(guardian.pending().unwrap().len(), share);
    for w in waiting {
        w.abort();
    }
}

#[tokio::test]
async fn the_gate_decides_who_is_guarded_a_revoked_agent_is_refused_and_an_ended_registration_asks() {
    let g = start().await;
    register(&g).await;
    g.rule("*", "*", "*", None, "allow", None);
    assert_eq!(g.call(tool_call(1, "send", json!([]))).await["result"]["decision"], "allow");
    // The registration given for a while has ended: the rule no longer decides, the user does.
    let key = agent_key("mailer-1");
    let mut entry = g.store.trust_get(&key).unwrap().unwrap();
    entry.policy.grant_until.insert(gatehouse_app::doors::guardian::SCOPE.into(), "2026-01-01T00:00:00Z".into());
    g.store.trust_update(&key, None, &entry.policy, None).unwrap();
    let asked = g.answer_next(UserAnswer { decision: Action::Deny, always: false, redact: None, note: None, lasting: None });
    assert_eq!(g.call(tool_call(2, "send", json!([]))).await["result"]["decision"], "deny");
    assert!(asked.await.unwrap().contains("send"));
    // Its key revoked: refused as blocked, whatever the rules say, and nothing asks.
    g.store.revoke(&key, "its laptop was stolen", "2026-11-26T00:00:00Z").unwrap();
    let r = g.call(tool_call(3, "send", json!([]))).await;
    assert_eq!(r["error"]["code"], -32003, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("revoked"), "{r}");
    assert!(!g.store.pending_list().unwrap().iter().any(|p| p.public_key == key));
}
