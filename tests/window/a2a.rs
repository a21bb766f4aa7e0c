//! An A2A agent (the real `a2a-sdk` 1.3.0) reaches the app: over TLS, a stranger's
//! certificate knocks, the user lets it in from the window, and its next message is a task
//! in the inbox, marked as from an A2A agent; on this computer, with a token the user
//! issued in the window, over plain HTTP once the user allows it there.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::App;

/// One call of the SDK (tests/peers/a2a/client.py) over TLS; its first answer.
fn sdk(py: &Path, app: &App, args: Value) -> Value {
    sdk_at(py, &format!("https://127.0.0.1:{}", app.uamp_port), &app.data.path().join("uamp-cert.pem"), args)
}

/// One call of the SDK to `base` (`ca` "-": plain HTTP); its first answer.
fn sdk_at(py: &Path, base: &str, ca: &Path, args: Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/a2a/client.py");
    let out = Command::new(py).arg(script).arg(base).arg(ca).arg("send").arg(args.to_string()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the SDK failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(text.lines().next().unwrap_or("null")).unwrap()
}

/// The task SendMessage answered was let through (the executor may still be at work).
fn assert_let_in(sent: &Value) {
    let state = sent["task"]["status"]["state"].as_str().unwrap_or("");
    assert!(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"].contains(&state), "{sent}");
}

#[test]
fn an_a2a_agent_knocks_is_let_in_from_the_window_and_its_task_is_in_the_inbox() {
    let Some(py): Option<PathBuf> = gatehouse_mail_testswarm::reference::python("a2a-1.3.0", "A2A SDK") else { return };
    let app = App::start();
    let agent = rcgen::generate_simple_self_signed(vec!["trains.example".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("agent.pem"), dir.path().join("agent.key"));
    std::fs::write(&cert, agent.cert.pem()).unwrap();
    std::fs::write(&key, agent.key_pair.serialize_pem()).unwrap();
    let me = json!({"cert": cert, "key": key, "text": "Book me a train to Lyon on Friday morning", "scope": "travel"});

    let knocked = sdk(&py, &app, me.clone());
    assert_eq!(knocked["task"]["status"]["state"], "TASK_STATE_REJECTED", "{knocked}");
    app.click("#nav-consent");
    app.wait_text("#view-consent", "over A2A");
    app.wait_text("#view-consent", "Book me a train to Lyon");
    assert!(app.find_all("#view-consent button[data-decision='allow_once']").is_empty(), "nothing of its message is kept to let through once");
    app.screenshot("a2a-knock");
    app.click("#view-consent button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "next message in that scope arrives");

    let sent = sdk(&py, &app, json!({"cert": cert, "key": key, "text": "Book me a train to Lyon, please", "scope": "travel"}));
    assert_let_in(&sent);
    let id = app.open_arrival("Book me a train to Lyon, please");
    app.wait_text("#inbox-detail", "An A2A agent");
    app.screenshot("a2a-inbox");
    // The task is the receipt the window shows.
    assert_eq!(sent["task"]["id"], id.as_str());
    // The agent is a contact, known by its certificate's key.
    app.click("#nav-people");
    app.wait_text("#contacts", "A2A agent");
    // Its task is a conversation like any other, labelled with how it came.
    app.click("#nav-conversations");
    app.wait_text("#conversation-list", "Book me a train to Lyon");
    app.click("#conversation-list li[data-kind='a2a']");
    app.wait_text("#conversation-reader", "Book me a train to Lyon");
    assert!(app.text("#conversation-list li[data-kind='a2a'] .proto").contains("A2A"));
}

#[test]
fn a_token_issued_in_the_window_lets_an_agent_on_this_computer_in_over_plain_http_once_allowed() {
    let Some(py): Option<PathBuf> = gatehouse_mail_testswarm::reference::python("a2a-1.3.0", "A2A SDK") else { return };
    let app = App::start();
    app.click("#welcome-done");
    app.click("#nav-settings");
    app.wait_text("#a2a-endpoint", &format!("https://127.0.0.1:{}/a2a", app.uamp_port));
    // A token is for someone new: People & agents → Add someone → an agent will call me.
    app.click("#nav-people");
    app.click("#people-add-open");
    app.click("#add-token");
    app.type_into("#a2a-token-name", "Calendar helper");
    app.type_into("#a2a-token-scopes", "calendar");
    app.click("#a2a-token-issue");
    app.wait_text("#a2a-token-out", "not shown again");
    let token = app.text("#a2a-token");
    assert!(token.starts_with("gha_"), "{token}");
    app.screenshot("a2a-token");
    app.wait_text("#contacts", "Calendar helper");

    // Plain HTTP is off until the user turns it on.
    let plain = format!("http://127.0.0.1:{}", app.port);
    let off = sdk_at(&py, &plain, Path::new("-"), json!({"token": token, "text": "Move my dentist to Tuesday", "scope": "calendar"}));
    assert!(off["message"].as_str().is_some_and(|m| m.contains("403")), "{off}");
    app.click("#nav-settings");
    app.click("#a2a-plain");
    app.wait_text("#a2a-plain-msg", "may now call over plain HTTP");
    app.wait_text("#a2a-plain-endpoint", &format!("{plain}/a2a"));

    let sent = sdk_at(&py, &plain, Path::new("-"), json!({"token": token, "text": "Move my dentist to Tuesday", "scope": "calendar"}));
    assert_let_in(&sent);
    app.open_arrival("Move my dentist to Tuesday");
    app.wait_text("#inbox-detail", "Calendar helper");
}
