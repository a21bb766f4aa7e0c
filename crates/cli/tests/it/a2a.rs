//! `gatehouse serve` as an A2A agent, driven by the real SDK (a2a-sdk 1.3.0): a token
//! issued with `gatehouse a2a token`, and a stranger's certificate knocking, seen with
//! `gatehouse pending` and let in with `gatehouse trust approve`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{json, ok, BIN};

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

struct Served(std::process::Child, PathBuf);
impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = gatehouse_keys::delete(&self.1);
    }
}

#[test]
fn an_agent_with_a_token_is_answered_and_a_stranger_is_let_in_from_the_command_line() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    ok(dir.path(), &["executor", "set", "default", "command", "/usr/bin/tr", "a-z", "A-Z"]);
    let (http, tls) = {
        let (a, b) = (std::net::TcpListener::bind("127.0.0.1:0").unwrap(), std::net::TcpListener::bind("127.0.0.1:0").unwrap());
        (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
    };
    let child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--listen", &format!("127.0.0.1:{http}"), "--uamp-listen", &format!("127.0.0.1:{tls}")])
        .env_remove("GATEHOUSE_KEYSTORE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _served = Served(child, dir.path().into());
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", tls)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(20), "the TLS listener did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
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
}
