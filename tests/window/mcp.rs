//! An MCP server an AI app runs through Gatehouse, in the real window: the app (the
//! official Python SDK's client) starts `gatehouse mcp wrap` against the app's inbox; the
//! server knocks with the tools it offers and is let in from Waiting for you; a call no
//! rule decides waits until the user allows it in the window; the server, its tools and
//! its calls are under Your agents; a tool whose words change is held, kept held by
//! default.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::App;

fn peer(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp").join(name).display().to_string()
}

/// The CLI built beside the desktop app (`cargo test --workspace` builds both).
fn cli() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_gatehouse-desktop")).with_file_name("gatehouse")
}

/// One session of the app through the wrap (its server's key in `keys`): each step's
/// answer.
fn session(py: &Path, app: &App, keys: &Path, server_args: &[&str], steps: &[Value]) -> Vec<Value> {
    let mut server = vec![cli().display().to_string(), "--data-dir".into(), keys.display().to_string()];
    server.extend(
        ["mcp", "wrap", "--name", "files", "--gate", &format!("http://127.0.0.1:{}", app.port), "--", &py.display().to_string(), &peer("server.py")]
            .map(String::from),
    );
    server.extend(server_args.iter().map(|a| a.to_string()));
    let out = Command::new(py).arg(peer("app.py")).arg(json!(server).to_string()).args(steps.iter().map(Value::to_string)).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the app failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    text.lines().filter_map(|l| l.strip_prefix("ANSWER ")).map(|a| serde_json::from_str(a).unwrap()).collect()
}

#[test]
fn an_mcp_server_is_let_in_from_the_window_and_a_call_waits_for_the_user() {
    let Some(py): Option<PathBuf> = gatehouse_mail_testswarm::reference::python("mcp-2.3.0", "MCP Python SDK") else { return };
    let app = App::start();
    app.click("#welcome-done");
    let keys = tempfile::tempdir().unwrap();

    // Not let in: the app's model sees no tool, and the server knocks with what it offers.
    let first = session(&py, &app, keys.path(), &[], &[json!(["list"]), json!(["call", "echo", {"text": "hello"}])]);
    assert_eq!(first[0]["tools"], json!([]), "{first:?}");
    app.click("#nav-consent");
    app.wait_text("#view-consent", "MCP server files (");
    app.wait_text("#view-consent", "which your AI app runs, wants its tools");
    app.wait_text("#view-consent li[data-tool='send_mail']", "Sends a mail.");
    assert!(app.find_all("#view-consent button[data-decision='allow_once']").is_empty(), "a server is let in, not one call");
    assert_eq!(app.text("#view-consent button[data-decision='always_allow_scope']"), "Let it in");
    app.screenshot("mcp-knock");
    app.click("#view-consent button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "tool calls are now decided by your rules");

    // No rule: the call waits for the user, who reads the tool and its arguments.
    let (py2, keys2, port) = (py.clone(), keys.path().to_path_buf(), app.port);
    let waiting = std::thread::spawn(move || {
        let out = Command::new(&py2)
            .arg(peer("app.py"))
            .arg(
                json!([
                    cli(),
                    "--data-dir",
                    keys2,
                    "mcp",
                    "wrap",
                    "--name",
                    "files",
                    "--gate",
                    format!("http://127.0.0.1:{port}"),
                    "--",
                    py2,
                    peer("server.py")
                ])
                .to_string(),
            )
            .arg(json!(["call", "echo", {"text": "hello, window"}]).to_string())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    });
    app.wait_text("#view-consent .asop-ask", "hello, window");
    assert!(app.text("#view-consent .asop-ask").contains("echo"));
    let said = app.text("#view-consent .asop-ask .tool-said");
    assert!(said.contains("The tool says of itself:") && said.contains("Says back what it was given."), "the tool's own words are on the card: {said}");
    assert_eq!(app.text("#view-consent .asop-ask .actions button.primary"), "Allow", "nothing flagged in them: allowing is the main action");
    app.screenshot("mcp-call-asks");
    app.click("#view-consent .asop-ask button[data-answer='allow']");
    let answered = waiting.join().unwrap();
    assert!(answered.contains(r#"{"is_error": false, "text": "hello, window"}"#), "{answered}");

    // Under Your agents: the server, its tools as let in, its calls.
    app.click("#nav-agents");
    app.wait_text("#mcp-server-list", "files");
    app.wait_text("#mcp-tools", "send_mail");
    app.wait_text("#mcp-timeline", "hello, window");
    // What the tool answered is on the call (told by the wrap once the app had it).
    app.wait_text("#mcp-timeline .step-answer", "passed to your AI app as it came");
    app.script("document.getElementById('mcp-servers').scrollIntoView(); return true;");
    app.screenshot("mcp-agents");

    // A rug pull: send_mail's words change; it is held, and keeping it held is the main
    // action.
    let pulled = session(&py, &app, keys.path(), &["--rug"], &[json!(["list"])]);
    assert_eq!(pulled[0]["tools"], json!(["echo", "big"]), "{pulled:?}");
    app.click("#nav-consent");
    app.wait_text("#view-consent .tool-change", "changed since you let it in");
    assert_eq!(app.text("#view-consent .tool-change .actions button.primary"), "Keep held");
    let ask = app.text("#view-consent .tool-change .ask");
    assert!(ask.contains("changed a tool you let in.") && !ask.contains("new"), "the card says what differs: {ask}");
    app.screenshot("mcp-tool-change");
    app.click("#view-consent .tool-change button[data-decision='deny']");
    app.wait_text("#consent-notice", "Kept held");
}
