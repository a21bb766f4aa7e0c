//! Rules, redaction and the plain-words description, on requests built like the spec's
//! examples; and -32602 errors that name the field of a broken data object.

use gatehouse_asop::rules::{decide, Action, Condition, Op, Rule};
use gatehouse_asop::{redact, schema, Step};
use serde_json::{json, Value};

fn context(agent: &str) -> Value {
    json!({
        "agent": {"id": agent, "name": "Mail helper", "instructions": "Send mail for the user", "version": "1", "provider": {"name": "Acme", "url": "https://acme.example"}},
        "session": {"id": "s-1"}, "turnId": "t-1", "stepId": "st-1", "timestamp": "2025-01-24T15:30:45.123Z"
    })
}

fn tool_call(agent: &str, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "steps/toolCallRequest", "params": {
        "context": context(agent), "reasoning": "the user asked me to",
        "toolCallRequest": {"executionId": "x-1", "toolId": tool, "inputs": args}
    }})
}

fn rule(id: i64, agent: &str, tool: &str, condition: Option<Condition>, action: Action) -> Rule {
    Rule { id, agent: agent.into(), method: "steps/toolCallRequest".into(), tool: tool.into(), condition, action, redact: None, note: None }
}

#[test]
fn the_most_specific_matching_rule_decides() {
    let outside = Condition { argument: "to".into(), op: Op::NotEndsWith, value: "@company.io".into() };
    let rules = vec![
        rule(1, "*", "*", None, Action::Allow),
        rule(2, "*", "send_email", Some(outside), Action::Ask),
        rule(3, "mailer", "delete_all", None, Action::Deny),
    ];
    let step = |agent: &str, tool: &str, to: &str| {
        let r = tool_call(agent, tool, json!([{"name": "to", "value": to}, {"name": "body", "value": "hi"}]));
        Step::of("steps/toolCallRequest", &r["params"])
    };
    assert_eq!(decide(&rules, &step("mailer", "send_email", "bob@company.io")).unwrap().id, 1, "inside the domain: the general allow");
    assert_eq!(decide(&rules, &step("mailer", "send_email", "eve@evil.example")).unwrap().action, Action::Ask);
    assert_eq!(decide(&rules, &step("mailer", "delete_all", "x")).unwrap().action, Action::Deny);
    assert_eq!(decide(&rules, &step("other", "delete_all", "x")).unwrap().id, 1, "rule 3 is for one agent only");
    assert!(decide(&rules[1..2], &step("mailer", "search", "x")).is_none(), "no rule: the user is asked");
    // A rule for every agent of a provider.
    let by_provider = vec![rule(4, "provider:acme", "*", None, Action::Deny)];
    assert_eq!(decide(&by_provider, &step("anyone", "search", "x")).unwrap().id, 4);
    // A list of recipients with one outside the domain is outside.
    let r = tool_call("mailer", "send_email", json!([{"name": "to", "value": ["a@company.io", "b@gmail.com"]}]));
    assert_eq!(decide(&rules, &Step::of("steps/toolCallRequest", &r["params"])).unwrap().id, 2);
}

#[test]
fn modify_redacts_the_pattern_from_arguments_and_text_but_not_the_context() {
    let r = tool_call("mailer", "send_email", json!([{"name": "body", "value": "card 4111 1111 1111 1111, thanks"}, {"name": "to", "value": "x@y.z"}]));
    let (out, n) = redact::redact(&r, r"\b(?:\d[ -]?){13,16}\b").unwrap();
    assert_eq!(n, 1);
    assert_eq!(out["params"]["toolCallRequest"]["inputs"][0]["value"], "card [REDACTED], thanks");
    assert_eq!(out["params"]["context"], r["params"]["context"]);
    let m = json!({"jsonrpc": "2.0", "id": "m", "method": "steps/message", "params": {"context": context("a"), "message": {"role": "agent", "id": "1234-5678", "content": [{"kind": "text", "text": "the code is 1234-5678"}]}}});
    let (out, n) = redact::redact(&m, r"\d{4}-\d{4}").unwrap();
    assert_eq!((n, out["params"]["message"]["id"].as_str()), (1, Some("1234-5678")), "ids are not text");
    assert_eq!(out["params"]["message"]["content"][0]["text"], "the code is [REDACTED]");
    assert!(Rule { redact: Some("(".into()), action: Action::Modify, ..rule(9, "*", "*", None, Action::Modify) }.validate().is_err());
}

#[test]
fn a_step_is_described_in_plain_words() {
    let r = tool_call("mailer", "send_email", json!([{"name": "to", "value": "eve@evil.example"}, {"name": "attempts", "value": 3}]));
    let s = Step::of("steps/toolCallRequest", &r["params"]);
    assert_eq!(s.describe(), "Mail helper wants to use send_email with to = “eve@evil.example”, attempts = 3.");
    assert_eq!(s.reasoning.as_deref(), Some("the user asked me to"));
}

#[test]
fn broken_data_objects_are_invalid_params_naming_the_field() {
    let field = |v: &Value| {
        let e = schema::check(v["method"].as_str().unwrap(), v).unwrap_err();
        assert_eq!(e.code, -32602);
        e.data.unwrap()["field"].as_str().unwrap().to_string()
    };
    let mut r = tool_call("a", "t", json!([]));
    r["params"]["context"]["agent"].as_object_mut().unwrap().remove("provider");
    assert_eq!(field(&r), "/params/context/agent/provider");
    let mut r = tool_call("a", "t", json!([{"value": 1}]));
    assert_eq!(field(&r), "/params/toolCallRequest/inputs/0/name");
    r = tool_call("a", "t", json!([]));
    r["params"]["context"]["timestamp"] = "yesterday".into();
    assert_eq!(field(&r), "/params/context/timestamp");
    let m = json!({"jsonrpc": "2.0", "id": 2, "method": "steps/message", "params": {"context": context("a"), "message": {"role": "user", "id": "m", "content": [{"kind": "text"}]}}});
    assert!(field(&m).starts_with("/params/message/content/0"), "{}", field(&m));
    let res = json!({"jsonrpc": "2.0", "id": 3, "method": "steps/toolCallResult", "params": {"context": context("a"), "executionId": "x", "result": {"outputs": [], "isError": "no"}}});
    assert_eq!(field(&res), "/params/result/isError");
    let mut sess = tool_call("a", "t", json!([]));
    sess["params"]["context"]["session"] = json!({"metadata": {}});
    assert_eq!(field(&sess), "/params/context/session/id");
    let trig = json!({"jsonrpc": "2.0", "id": 5, "method": "steps/agentTrigger", "params": {"context": context("a"), "trigger": {"type": "cron", "content": [], "event": {}}}});
    assert!(field(&trig).starts_with("/params/trigger"), "{}", field(&trig));
}
