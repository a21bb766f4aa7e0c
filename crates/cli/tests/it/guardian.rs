//! The ASOP guardian headless: `gatehouse serve` guards a scripted agent while the user
//! works only from the command line: sees the agent knock, lets it in with `trust approve
//! asop:<id>`, writes rules, reads the session and exports it, and blocks the agent.

use crate::common::{fails, json, ok, Cleanup, Server};
use serde_json::{json, Value};

fn context(step: &str) -> Value {
    json!({
        "agent": {"id": "mailer-1", "name": "Mail helper", "instructions": "Send mail for the user", "version": "1", "provider": {"name": "Acme", "url": "https://acme.example"}},
        "session": {"id": "session-1"}, "turnId": "turn-1", "stepId": step, "timestamp": "2025-01-24T15:30:45.123Z"
    })
}

fn tool_call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "steps/toolCallRequest", "params": {
        "context": context(&format!("step-{id}")), "reasoning": "The user asked me to",
        "toolCallRequest": {"executionId": format!("exec-{id}"), "toolId": tool, "inputs": [{"name": "to", "value": "bob@company.io"}]}}})
}

fn trigger(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "steps/agentTrigger", "params": {"context": context(&format!("step-{id}")),
        "trigger": {"type": "autonomous", "content": [{"kind": "text", "text": "new mail"}], "event": {"id": "e-1", "type": "email"}}}})
}

#[test]
fn an_agent_is_let_in_ruled_reviewed_exported_and_blocked_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    ok(d, &["init"]);
    let server = Server::start(d);
    let asop = format!("{}/asop/v1", server.1);
    let http = reqwest::blocking::Client::new();
    let call = |v: Value| -> Value { http.post(&asop).json(&v).send().unwrap().json().unwrap() };

    // Unknown: refused, and it waits for the user.
    assert_eq!(call(trigger(1))["error"]["code"], -32001);
    let agents = json(d, &["guardian", "agents", "--json"]);
    assert_eq!((agents[0]["agent"].as_str(), agents[0]["state"].as_str()), (Some("mailer-1"), Some("waiting")), "{agents}");

    // An agent is let in for its own scope only, and then exactly as from the window.
    assert!(fails(d, &["trust", "approve", "asop:mailer-1", "--scopes", "support"]).contains("\"asop\" only"));
    assert!(fails(d, &["trust", "add", "asop:mailer-1", "--name", "M", "--scopes", "support"]).contains("can only be let in for \"asop\""));
    ok(d, &["trust", "approve", "asop:mailer-1", "--name", "Mail helper", "--max-per-day", "1000"]);
    let entry = json(d, &["trust", "list", "--json"]);
    assert_eq!(entry[0]["policy"]["rate_limit"]["max_per_day"], 1000, "the limit given is the agent's: {entry}");
    let agents = json(d, &["guardian", "agents", "--json"]);
    assert_eq!((agents[0]["state"].as_str(), agents[0]["name"].as_str()), (Some("registered"), Some("Mail helper")), "{agents}");

    // Rules, checked before they are kept.
    assert!(fails(d, &["guardian", "rules", "add", "--action", "modify", "--tool", "send_email"]).contains("[INVALID]"));
    assert!(fails(d, &["guardian", "rules", "add", "--action", "sometimes"]).contains("not one of the names"));
    ok(d, &["guardian", "rules", "add", "--method", "steps/agentTrigger", "--action", "allow"]);
    let deny = ok(
        d,
        &[
            "guardian",
            "rules",
            "add",
            "--agent",
            "mailer-1",
            "--method",
            "steps/toolCallRequest",
            "--tool",
            "delete_mailbox",
            "--action",
            "deny",
            "--note",
            "never",
        ],
    );
    let deny_id = deny.trim().to_string();
    let allow = ok(
        d,
        &[
            "guardian",
            "rules",
            "add",
            "--method",
            "steps/toolCallRequest",
            "--tool",
            "send_email",
            "--argument",
            "to",
            "--op",
            "ends-with",
            "--value",
            "@company.io",
            "--action",
            "allow",
        ],
    );
    let rules = json(d, &["guardian", "rules", "list", "--json"]);
    assert_eq!(rules.as_array().unwrap().len(), 3, "{rules}");
    assert_eq!(rules.as_array().unwrap().iter().find(|r| r["id"] == allow.trim().parse::<i64>().unwrap()).unwrap()["condition"]["op"], "ends_with");

    // The running guardian decides by them at once.
    assert_eq!(call(trigger(2))["result"]["decision"], "allow");
    assert_eq!(call(tool_call(3, "send_email"))["result"]["decision"], "allow");
    let r = call(tool_call(4, "delete_mailbox"));
    assert_eq!((r["result"]["decision"].as_str(), r["result"]["message"].as_str()), (Some("deny"), Some("never")), "{r}");

    // The session as the Guardian view shows it, and the same in an export.
    let sessions = json(d, &["guardian", "sessions", "--json"]);
    assert_eq!((sessions[0]["session_id"].as_str(), sessions[0]["steps"].as_i64()), (Some("session-1"), Some(4)), "{sessions}");
    let steps = json(d, &["guardian", "session", "session-1", "--json"]);
    let got: Vec<(&str, &str)> = steps.as_array().unwrap().iter().map(|s| (s["decision"].as_str().unwrap(), s["decided_by"].as_str().unwrap_or(""))).collect();
    assert_eq!(got, [("error", "unregistered"), ("allow", "rule"), ("allow", "rule"), ("deny", "rule")]);
    let text = ok(d, &["guardian", "session", "session-1"]);
    assert!(text.lines().count() == 4 && text.contains("deny"), "{text}");
    let file = d.join("guardian.json");
    ok(d, &["guardian", "export", file.to_str().unwrap()]);
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(exported[0]["steps"].as_array().unwrap().len(), 4);
    assert!(fails(d, &["guardian", "session", "nope"]).contains("NOT_FOUND"));

    // A removed rule is gone; a blocked agent is refused outright.
    ok(d, &["guardian", "rules", "remove", &deny_id]);
    assert!(fails(d, &["guardian", "rules", "remove", &deny_id]).contains("NOT_FOUND"));
    ok(d, &["guardian", "block", "mailer-1"]);
    assert_eq!(call(tool_call(5, "send_email"))["error"]["code"], -32003);
    assert_eq!(json(d, &["guardian", "agents", "--json"]).as_array().unwrap().iter().filter(|a| a["state"] == "blocked").count(), 1);

    // Every change was audited like the window's.
    let audit = d.join("audit.json");
    ok(d, &["export", "audit", audit.to_str().unwrap()]);
    let audit: Value = serde_json::from_str(&std::fs::read_to_string(&audit).unwrap()).unwrap();
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    for a in ["trust.add", "asop.rule_add", "asop.rule_remove", "trust.block"] {
        assert!(actions.contains(&a), "{a} not in {actions:?}");
    }
    // The export is signed by the gate and checks out, as does the live log; an entry
    // edited in the file is named.
    let file = d.join("audit.json");
    let (file_s, n) = (file.to_str().unwrap(), actions.len());
    assert!(ok(d, &["audit", "verify", file_s]).starts_with(&format!("intact: {n} entries #1–#{n}")));
    let live = json(d, &["audit", "verify", "--json"]);
    assert_eq!((live["intact"].as_bool(), live["signed_through"].as_i64()), (Some(true), Some(n as i64)), "{live}");
    let edited = std::fs::read_to_string(&file).unwrap().replacen("asop.rule_remove", "asop.rule_keep", 1);
    std::fs::write(&file, edited).unwrap();
    let out = crate::common::gh(d, &["audit", "verify", file_s]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    let removed = audit["entries"].as_array().unwrap().iter().find(|e| e["action"] == "asop.rule_remove").unwrap()["id"].as_i64().unwrap();
    assert!(said.starts_with(&format!("NOT INTACT: entry #{removed} (asop.rule_keep")), "{said}");
}

/// An agent let in for an hour is guarded by the gate's clock like every other grant: when
/// the hour is over, its steps are asked of the user again whatever the rules say.
#[test]
fn an_agent_let_in_for_an_hour_is_asked_about_again_when_the_hour_is_over() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    ok(d, &["init"]);
    let clock = d.join("test-clock");
    std::fs::write(&clock, "0").unwrap();
    let server = Server::start_with(d, Some(&clock));
    let asop = format!("{}/asop/v1", server.1);
    let http = reqwest::blocking::Client::new();
    let call = |v: Value| -> Value { http.post(&asop).json(&v).send().unwrap().json().unwrap() };
    assert_eq!(call(trigger(1))["error"]["code"], -32001);
    ok(d, &["trust", "approve", "asop:mailer-1", "--for", "1h"]);
    ok(d, &["guardian", "rules", "add", "--method", "steps/toolCallRequest", "--action", "allow"]);
    // A step asked of the user waits half a second, then is answered "did not answer".
    let ping = json!({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": {"timestamp": "2026-11-26T10:00:00Z", "timeout": 500, "metadata": {"agentId": "mailer-1"}}});
    assert_eq!(call(ping)["result"]["status"], "connected");
    assert_eq!(call(tool_call(2, "send"))["result"]["decision"], "allow", "within the hour the rule decides");
    std::fs::write(&clock, "7200").unwrap();
    let r = call(tool_call(3, "send"));
    assert_eq!(r["error"]["code"], -32002, "the hour is over: the user is asked, whatever the rule says: {r}");
}
