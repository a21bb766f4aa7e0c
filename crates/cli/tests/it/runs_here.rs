//! A program runs only where its node's operator allowed it. With only the team's database
//! login, someone points the executor setting at `/bin/sh -c …`: a node accepts the
//! trusted sender's envelope as before, but runs nothing and says why; once the node's
//! operator allows it there (`gatehouse executor allow`), it runs.

use std::time::{Duration, Instant};

use crate::team::{signed, Team};
use gatehouse_pg_testserver::Postgres;

#[test]
fn an_executor_written_into_the_database_runs_nothing_until_the_nodes_operator_allows_it() {
    let Some(pg) = Postgres::shared() else { return };
    let url = pg.fresh_database();
    let database = url.rsplit('/').next().unwrap().to_string();
    let team = Team::new(url, 1);
    let bob = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&bob), "--name", "Bob", "--scopes", "support"]);
    let node = team.serve_with(0, &[]);
    let out = tempfile::tempdir().unwrap();
    let proof = out.path().join("PWNED");

    // Behind the gate's back: the database says every prompt runs a shell.
    let setting =
        serde_json::json!({"default": {"kind": "command", "program": "/bin/sh", "args": ["-c", format!("touch {}", proof.display())], "timeout_secs": 10}});
    pg.psql_in(
        &database,
        &format!("INSERT INTO settings (key, value) VALUES ('executors', '{setting}') ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
    )
    .unwrap();

    let client = reqwest::blocking::Client::new();
    let post = |prompt: &str| {
        client.post(format!("{}/epp/v1/submit", node.base)).body(signed(&team.public_key, &bob, "support", prompt)).send().unwrap().status().as_u16()
    };
    let settled = |envelope: usize| -> serde_json::Value {
        let t = Instant::now();
        loop {
            let list: serde_json::Value = serde_json::from_str(&team.gh(0, &["envelopes", "--json"])).unwrap();
            let rows = list.as_array().unwrap();
            if rows.len() > envelope && matches!(rows[0]["exec_status"].as_str(), Some("failed" | "succeeded")) {
                return rows[0].clone();
            }
            assert!(t.elapsed() < Duration::from_secs(20), "the executor did not finish: {list}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    assert_eq!(post("hello"), 200, "accepted as before");
    let row = settled(0);
    assert_eq!(row["exec_status"], "failed", "{row}");
    let why = row["exec_result"]["error"].as_str().unwrap();
    assert!(why.contains("not allowed on this machine") && why.contains("gatehouse executor allow"), "{why}");
    assert!(!proof.exists(), "the program named only by the database did not run");

    // The node's operator looks and allows it here: from then on it runs.
    let o = team.command(0).args(["executor", "allow"]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stderr).contains("allowed on this machine: run /bin/sh -c touch"), "{o:?}");
    assert_eq!(post("again"), 200);
    let row = settled(1);
    assert_eq!(row["exec_status"], "succeeded", "{row}");
    assert!(proof.exists());
}
