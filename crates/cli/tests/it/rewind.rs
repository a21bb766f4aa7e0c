//! A team's audit log rewound by someone with only the database login: the node that
//! signed the newer checkpoint kept it in its data dir, so `audit verify` on it says the
//! log is not intact, `audit checkpoint` (which `serve` runs every ten minutes) will not
//! sign the rewound head, and a serving node says so on `/ready`.

use crate::team::Team;
use gatehouse_pg_testserver::Postgres;

#[test]
fn a_node_finds_the_log_rewound_behind_its_back_and_will_not_sign_it() {
    let Some(pg) = Postgres::shared() else { return };
    let url = pg.fresh_database();
    let database = url.rsplit('/').next().unwrap().to_string();
    let team = Team::new(url, 1);
    let sender = |n: u8| gatehouse_epp::public_key_hex(&ed25519_dalek::SigningKey::from_bytes(&[n; 32]));
    team.gh(0, &["trust", "add", &sender(1), "--name", "One", "--scopes", "a"]);
    team.gh(0, &["audit", "checkpoint"]);
    let (head, hash) = {
        let row = pg.psql_in(&database, "SELECT id || ' ' || hash FROM audit_head").unwrap();
        let (id, hash) = row.split_once(' ').unwrap();
        (id.parse::<i64>().unwrap(), hash.to_string())
    };
    // A revocation, then signed: what a rewind would undo.
    team.gh(0, &["trust", "revoke", &sender(1)]);
    team.gh(0, &["audit", "checkpoint"]);
    assert!(team.gh(0, &["audit", "verify"]).starts_with("intact"));

    // Back to before the revocation: the entries cut, the head moved back, the newer
    // checkpoints deleted — everything the database holds agrees.
    pg.psql_in(
        &database,
        &format!(
            "DELETE FROM audit WHERE id > {head}; UPDATE audit_head SET id = {head}, hash = '{hash}'; DELETE FROM audit_checkpoints WHERE through_id > {head}"
        ),
    )
    .unwrap();
    let run = |args: &[&str]| team.command(0).args(args).output().unwrap();
    let out = run(&["audit", "verify"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("NOT INTACT") && said.contains("removed"), "{said}");
    let out = run(&["audit", "checkpoint"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("[CHANGED]"), "{said}");

    // Serving, the node checks at start and says so on /ready, still taking envelopes.
    let node = team.serve_with(0, &[]);
    let t = std::time::Instant::now();
    let ready = loop {
        let ready: serde_json::Value = reqwest::blocking::get(format!("{}/ready", node.base)).unwrap().json().unwrap();
        if ready["problems"]["audit"].is_string() || t.elapsed() > std::time::Duration::from_secs(20) {
            break ready;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(ready["status"], "ready", "{ready}");
    assert!(ready["problems"]["audit"].as_str().is_some_and(|p| p.contains("does not extend") && p.contains("removed")), "{ready}");
}
