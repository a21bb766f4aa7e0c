//! Issue 56's attack, again, on a team's node: with only the PostgreSQL login, someone
//! INSERTs a trust row for their own key, points the executor setting at a shell and
//! DELETEs a revocation. The node lets the key in as it lets in any unknown sender (not
//! at all), runs nothing, still refuses the revoked key, and says what was changed:
//! `/ready`, `audit verify` (exit 1). The operator puts things right with Gatehouse's own
//! commands, and the state is intact again.

use std::time::{Duration, Instant};

use crate::team::{signed, Team};
use gatehouse_pg_testserver::Postgres;

#[test]
fn rows_written_with_the_database_login_alone_let_nobody_in_run_nothing_and_are_reported() {
    let Some(pg) = Postgres::shared() else { return };
    let url = pg.fresh_database();
    let database = url.rsplit('/').next().unwrap().to_string();
    let team = Team::new(url, 1);
    let key = |n: u8| ed25519_dalek::SigningKey::from_bytes(&[n; 32]);
    let (bob, carol, mallory, stranger) = (key(1), key(2), key(3), key(4));
    let hex = gatehouse_epp::public_key_hex;
    team.gh(0, &["trust", "add", &hex(&bob), "--name", "Bob", "--scopes", "support"]);
    team.gh(0, &["trust", "add", &hex(&carol), "--name", "Carol", "--scopes", "support"]);
    team.gh(0, &["trust", "revoke", &hex(&carol)]);
    assert_eq!(team.command(0).args(["audit", "verify"]).output().unwrap().status.code(), Some(0));

    let out = tempfile::tempdir().unwrap();
    let proof = out.path().join("PWNED");
    let shell =
        serde_json::json!({"default": {"kind": "command", "program": "/bin/sh", "args": ["-c", format!("touch {}", proof.display())], "timeout_secs": 10}});
    pg.psql_in(
        &database,
        &format!(
            "INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{}', 'me', '2026-11-28T10:00:00Z', '{{\"allowed_scopes\":[\"support\"]}}');
             INSERT INTO settings (key, value) VALUES ('executors', '{shell}') ON CONFLICT (key) DO UPDATE SET value = excluded.value;
             DELETE FROM revoked;",
            hex(&mallory)
        ),
    )
    .unwrap();

    let node = team.serve_with(0, &[]);
    let client = reqwest::blocking::Client::new();
    let post = |from: &ed25519_dalek::SigningKey, prompt: &str| -> (u16, serde_json::Value) {
        let r = client.post(format!("{}/epp/v1/submit", node.base)).body(signed(&team.public_key, from, "support", prompt)).send().unwrap();
        (r.status().as_u16(), r.json().unwrap_or_default())
    };
    let (unknown_status, unknown) = post(&stranger, "hello");
    let (status, answer) = post(&mallory, "hello");
    assert_ne!(status, 200, "{answer}");
    assert_eq!((status, &answer["error"]["code"]), (unknown_status, &unknown["error"]["code"]), "the inserted key gets what any unknown sender gets");
    let (status, answer) = post(&carol, "hello");
    assert_eq!(answer["error"]["code"], "SENDER_REVOKED", "{status} {answer}");
    let (status, _) = post(&bob, "run this");
    assert_eq!(status, 200, "what the gate sealed still holds");
    let t = Instant::now();
    loop {
        let list: serde_json::Value = serde_json::from_str(&team.gh(0, &["envelopes", "--json"])).unwrap();
        if list.as_array().unwrap().iter().any(|r| matches!(r["exec_status"].as_str(), Some("failed" | "succeeded"))) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "Bob's envelope was not run: {list}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!proof.exists(), "the shell named only by the database did not run");

    // Said on /ready (the node stays in service) and by `audit verify`.
    let t = Instant::now();
    let ready = loop {
        let ready: serde_json::Value = reqwest::blocking::get(format!("{}/ready", node.base)).unwrap().json().unwrap();
        if ready["problems"]["state"].is_string() || t.elapsed() > Duration::from_secs(20) {
            break ready;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ready["status"], "ready", "{ready}");
    assert!(ready["problems"]["state"].as_str().is_some_and(|p| p.contains("3 row(s) changed outside Gatehouse")), "{ready}");
    let verify = team.command(0).args(["audit", "verify"]).output().unwrap();
    let said = String::from_utf8_lossy(&verify.stdout);
    assert_eq!(verify.status.code(), Some(1), "{said}");
    for line in [
        format!("trust {}: added outside Gatehouse (not acted on)", hex(&mallory)),
        "settings executors: added outside Gatehouse (not acted on)".to_string(),
        format!("revoked {}: taken out outside Gatehouse (a block or revocation still holds)", hex(&carol)),
    ] {
        assert!(said.contains(&line), "{line} in {said}");
    }

    // Put right with Gatehouse's own commands: each seals what it changes.
    team.gh(0, &["trust", "remove", &hex(&mallory)]);
    team.gh(0, &["trust", "revoke", &hex(&carol)]);
    team.gh(0, &["executor", "set", "default", "noop"]);
    let verify = team.command(0).args(["audit", "verify"]).output().unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", String::from_utf8_lossy(&verify.stdout));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("the gate's state: intact"));
}
