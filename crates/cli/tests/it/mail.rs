//! `gatehouse mail …` against the repo's test swarm on loopback (real keychain): connect
//! with a token, send a task and watch its timeline, search and show it, import a log.

use std::path::Path;
use std::process::Output;

use crate::common::gh_in as gh;
use gatehouse_mail_testswarm::{Config, Swarm};

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn connect_send_follow_search_and_import() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = rt.block_on(gatehouse_mail_testswarm::spawn(Swarm::new(Config::new("swarm-a"))));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // A wrong token: the swarm's refusal is explained, nothing is kept.
    let o = gh(d, &["mail", "add", &url, "--name", "research", "--token-stdin"], "wrong\n");
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("not added") && err.contains("refused the token"), "{err}");
    assert_eq!(text(&gh(d, &["mail", "list", "--json"], "")).0.trim(), "[]");
    let o = gh(d, &["mail", "add", &url, "--name", "research", "--token-stdin"], "user-token\n");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("u-1 (role user)") && out.contains("mail 1.3"), "{out}");
    let list = gh(d, &["mail", "list", "--json"], "");
    assert!(!String::from_utf8_lossy(&list.stdout).contains("user-token"), "the token is not in the database");

    let o = gh(d, &["mail", "send", "research", "Weather in Lyon?", "--subject", "Trip"], "");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("agent:supervisor → agent:weather"), "{out}");
    assert!(out.contains("broadcast_complete"), "{out}");
    assert!(out.contains("⚠"), "the system error is flagged: {out}");
    let task_id = out.lines().last().unwrap().split_whitespace().nth(1).unwrap().to_string();
    assert!(out.lines().last().unwrap().contains("completed"), "{out}");

    let o = gh(d, &["mail", "tasks", "--search", "75.2", "--json"], "");
    let tasks: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tasks[0]["task_id"].as_str(), Some(task_id.as_str()));
    let (out, _) = text(&gh(d, &["mail", "show", &task_id], ""));
    assert!(out.contains("Lyon tomorrow"), "{out}");

    // A 500 is explained and exits non-zero.
    let o = gh(d, &["mail", "send", "research", "please explode"], "");
    assert!(!o.status.success());
    assert!(text(&o).1.contains("SWARM_ERROR"), "{}", text(&o).1);

    // Import: the bad line is reported by number, the good one kept.
    let log = d.join("log.jsonl");
    let good = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/mail/examples/mail_message_request.json")).unwrap();
    let good: serde_json::Value = serde_json::from_str(&good).unwrap();
    std::fs::write(&log, format!("{}\n{{\"id\": 1}}\n", good)).unwrap();
    let o = gh(d, &["mail", "import", log.to_str().unwrap()], "");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(out.contains("1 message(s) imported"), "{out}");
    assert!(err.contains("log.jsonl:2:"), "{err}");

    let o = gh(d, &["mail", "remove", "research"], "");
    assert!(o.status.success());
    assert!(text(&gh(d, &["mail", "tasks"], "")).0.contains(&task_id), "tasks outlive their connection");
}
