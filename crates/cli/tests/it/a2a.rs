//! `gatehouse serve` as an A2A agent, driven by the real SDK (a2a-sdk 1.3.0): a token
//! issued with `gatehouse a2a token`, and a stranger's certificate knocking, seen with
//! `gatehouse pending` and let in with `gatehouse trust approve`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{json, ok, Cleanup, Server};

/// The SDK's Python (tests/peers/a2a, installed by scripts/setup-peers.sh).
fn python() -> Option<PathBuf> {
    gatehouse_mail_testswarm::reference::python("a2a-1.3.0", "A2A SDK")
}

/// One call of the SDK against `base`; its first answer.
fn sdk(py: &Path, base: &str, ca: &Path, action: &str, args: Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/a2a/client.py");
    let out = Command::new(py).arg(script).arg(base).arg(ca).arg(action).arg(args.to_string()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the SDK failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(text.lines().next().unwrap_or("null")).unwrap()
}

#[test]
fn an_agent_with_a_token_is_answered_and_a_stranger_is_let_in_from_the_command_line() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    ok(dir.path(), &["executor", "set", "default", "command", "/usr/bin/tr", "a-z", "A-Z"]);
    let _cleanup = Cleanup(vec![dir.path().into()]);
    let (served, tls) = Server::start_tls(dir.path());
    let (base, ca) = (format!("https://127.0.0.1:{tls}"), dir.path().join("uamp-cert.pem"));

    let issued = json(dir.path(), &["a2a", "token", "--name", "Travel agent", "--json"]);
    let token = issued["token"].as_str().unwrap();
    let done = sdk(&py, &base, &ca, "send", json!({"token": token, "text": "hello"}));
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["task"]["artifacts"][0]["parts"][0]["text"], "HELLO");

    let agent = rcgen::generate_simple_self_signed(vec!["agent.example".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("agent.pem"), dir.path().join("agent.key"));
    std::fs::write(&cert, agent.cert.pem()).unwrap();
    std::fs::write(&key, agent.key_pair.serialize_pem()).unwrap();
    let me = json!({"cert": cert, "key": key, "text": "may I?"});
    let knocked = sdk(&py, &base, &ca, "send", me.clone());
    assert_eq!(knocked["task"]["status"]["state"], "TASK_STATE_REJECTED", "{knocked}");
    let id = format!("a2a:key:{}", gatehouse_net::peer::PeerKey::from_certificate(agent.cert.der()).0.unwrap());
    let pending = json(dir.path(), &["pending", "--json"]);
    assert!(pending.as_array().unwrap().iter().any(|p| p["public_key"] == id.as_str()), "{pending}");
    ok(dir.path(), &["trust", "approve", &id, "--name", "Stranger", "--scopes", "ask"]);
    let let_in = sdk(&py, &base, &ca, "send", me);
    assert_eq!(let_in["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{let_in}");
    assert_eq!(let_in["task"]["artifacts"][0]["parts"][0]["text"], "MAY I?");
    // The tasks agents sent, newest first, the knock among them.
    let tasks = json(dir.path(), &["a2a", "tasks", "--json"]);
    let ids: Vec<&str> = tasks.as_array().unwrap().iter().map(|t| t["receipt_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [&let_in["task"]["id"], &knocked["task"]["id"], &done["task"]["id"]].map(|v| v.as_str().unwrap()), "{tasks}");

    // On this computer over plain HTTP: off until `a2a plain on`, which the running
    // server applies to its next request; `off` stops it the same way.
    let local = json!({"token": token, "text": "from here"});
    let off = sdk(&py, &served.1, Path::new("-"), "send", local.clone());
    assert!(off["message"].as_str().is_some_and(|m| m.contains("403")), "{off}");
    assert!(ok(dir.path(), &["a2a", "plain"]).contains("TLS only"));
    assert!(ok(dir.path(), &["a2a", "plain", "on"]).contains("may call over plain HTTP"));
    let on = sdk(&py, &served.1, Path::new("-"), "send", local.clone());
    assert_eq!(on["task"]["artifacts"][0]["parts"][0]["text"], "FROM HERE", "{on}");
    ok(dir.path(), &["a2a", "plain", "off"]);
    let off_again = sdk(&py, &served.1, Path::new("-"), "send", local);
    assert!(off_again["message"].as_str().is_some_and(|m| m.contains("403")), "{off_again}");
}

#[test]
fn an_a2a_agent_is_added_by_address_sent_to_and_made_a_scopes_executor() {
    let Some(agent) = gatehouse_mail_testswarm::reference::start_a2a_agent("s3cret", None) else { return };
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    let _cleanup = Cleanup(vec![dir.path().into()]);
    let out = crate::common::gh_in(dir.path(), &["a2a", "agent", "add", &agent.url, "--name", "upper", "--token-stdin"], "s3cret\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("its card calls it \"Upper\""));
    let card = json(dir.path(), &["a2a", "card", &agent.url]);
    assert_eq!((card["name"].as_str(), card["endpoint"].as_str()), (Some("Upper"), Some(format!("{}/", agent.url).as_str())), "{card}");
    let list = json(dir.path(), &["a2a", "agent", "list", "--json"]);
    assert_eq!((list[0]["name"].as_str(), list[0]["has_token"].as_bool()), (Some("upper"), Some(true)), "{list}");
    let answer = json(dir.path(), &["a2a", "send", "upper", "quiet please", "--json"]);
    assert_eq!(answer["answer"], "QUIET PLEASE", "{answer}");
    // The executor names an agent that exists; another is refused.
    ok(dir.path(), &["executor", "set", "ask", "a2a", "upper"]);
    let refused = crate::common::fails(dir.path(), &["executor", "set", "ask", "a2a", "nobody"]);
    assert!(refused.contains("no A2A agent named \"nobody\""), "{refused}");
    ok(dir.path(), &["a2a", "agent", "remove", "upper"]);
    let gone = crate::common::fails(dir.path(), &["a2a", "send", "upper", "hello"]);
    assert!(gone.contains("no A2A agent"), "{gone}");
}
