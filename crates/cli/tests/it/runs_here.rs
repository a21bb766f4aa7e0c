//! A program runs only where its node's operator allowed it — never because a row says
//! so, signed or not. The executor setting, set with Gatehouse on one node (sealed, and
//! allowed on that machine), names `/bin/sh -c …`: another node accepts the trusted
//! sender's envelope as before, but runs nothing and says why; once that node's operator
//! allows it there (`gatehouse executor allow`), it runs. (The same setting written with
//! the database login alone is not even read: `sealed_state.rs`.)

use std::time::{Duration, Instant};

use crate::team::{signed, Team};
use gatehouse_pg_testserver::Postgres;

#[test]
fn an_executor_set_on_another_node_runs_nothing_here_until_this_nodes_operator_allows_it() {
    let Some(pg) = Postgres::shared() else { return };
    let url = pg.fresh_database();
    let team = Team::new(url, 2);
    let bob = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&bob), "--name", "Bob", "--scopes", "support"]);
    let out = tempfile::tempdir().unwrap();
    let proof = out.path().join("PWNED");
    // Set on node 0's machine: allowed there, sealed for the whole gate.
    team.gh(0, &["executor", "set", "default", "command", "--timeout-secs", "10", "/bin/sh", "-c", &format!("touch {}", proof.display())]);
    let node = team.serve_with(1, &[]);

    let client = reqwest::blocking::Client::new();
    let post = |prompt: &str| {
        client.post(format!("{}/epp/v1/submit", node.base)).body(signed(&team.public_key, &bob, "support", prompt)).send().unwrap().status().as_u16()
    };
    let settled = |envelope: usize| -> serde_json::Value {
        let t = Instant::now();
        loop {
            let list: serde_json::Value = serde_json::from_str(&team.gh(1, &["envelopes", "--json"])).unwrap();
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
    assert!(!proof.exists(), "the program allowed on another machine did not run on this one");

    // The node's operator looks and allows it here: from then on it runs.
    let o = team.command(1).args(["executor", "allow"]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stderr).contains("allowed on this machine: run /bin/sh -c touch"), "{o:?}");
    assert_eq!(post("again"), 200);
    let row = settled(1);
    assert_eq!(row["exec_status"], "succeeded", "{row}");
    assert!(proof.exists());
}
