//! Nodes of a team's gate in one process: what one node decides reaches the work another
//! node holds.

use crate::common::{key, policy, pubhex, TestInbox};
use crate::uamp::Uamp;
use gatehouse_app::consent::{ConsentItem, ConsentTarget, Decision};
use gatehouse_store::{ExecStatus, Policy, Store};

/// An envelope held for consent at node 1 is released from node 2, which runs no
/// executors (an approver's process, or the CLI): node 1 finds it queued and runs it,
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_envelope_released_at_another_node_is_run_by_a_node_that_looks() {
    let Some(pg) = gatehouse_pg_testserver::Postgres::shared() else { return };
    let url = pg.fresh_database();
    let (me, bob) = (key(2), key(3));
    let node1 = TestInbox::start_on(&pubhex(&me), Store::open_url(&url).unwrap().with_node("node-1")).await;
    node1.trust(&pubhex(&bob), "Bob", Policy { hold_for_consent: true, ..policy(&["*"]) });
    let (status, _, receipt) = node1.post_json(&node1.signed(&bob, "support", "run me")).await;
    assert_eq!((status, receipt["x-held-for-consent"].as_bool()), (200, Some(true)), "{receipt}");

    let approver = std::sync::Arc::new(Store::open_url(&url).unwrap().with_node("node-2"));
    let (gate, executions) = gatehouse_app::doors::build(approver.clone(), &node1.public_key);
    drop(executions); // this process runs nothing
    let items = gatehouse_app::consent::pending(&approver).unwrap();
    let row_id = items.iter().find_map(|i| if let ConsentItem::Held { row_id, .. } = i { Some(*row_id) } else { None }).expect("held, seen from node 2");
    let out = gatehouse_app::consent::decide(&gate, &ConsentTarget::Held { row_id }, Decision::AllowOnce, chrono::Utc::now()).unwrap();
    assert!(out.message.starts_with("Released"), "{}", out.message);

    let t = std::time::Instant::now();
    loop {
        let status = approver.envelope(row_id).unwrap().unwrap().exec_status;
        if status == ExecStatus::Succeeded {
            break;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(15), "still {status:?}: no node ran it");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(approver.queued_ids(10).unwrap().is_empty());
    node1.stop().await;
}

/// The same UAMP message sent to two nodes at once, each over its own TLS listener: one
/// node accepts it, the other refuses it as a replay, as one laptop answers a second copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_uamp_message_at_two_nodes_at_once_is_accepted_once() {
    let Some(pg) = gatehouse_pg_testserver::Postgres::shared() else { return };
    let url = pg.fresh_database();
    let node = |name: &str| Store::open_url(&url).unwrap().with_node(name);
    let one = Uamp::start_on(tempfile::tempdir().unwrap(), node("node-1"), gatehouse_app::doors::ExecutorSpec::Noop).await;
    let two = Uamp::start_on(tempfile::tempdir().unwrap(), node("node-2"), gatehouse_app::doors::ExecutorSpec::Noop).await;
    assert_eq!(one.inbox.did(), two.inbox.did(), "one gate, one identity");
    // Trusted and given a token once, in the team's database: good at every node.
    let peer = one.trusted(40, &["inform"], gatehouse_store::RateLimit::default());
    const ROUNDS: usize = 20;
    for round in 0..ROUNDS {
        let env = one.envelope(&peer, gatehouse_uamp::Intent::Inform, &format!("round {round}"), serde_json::json!({}));
        let ((s1, b1, _), (s2, b2, _)) = tokio::join!(one.post(&peer, &env), two.post(&peer, &env));
        let mut answers = [
            (s1, b1["reason"].as_str().or(b1["status"].as_str()).map(str::to_string)),
            (s2, b2["reason"].as_str().or(b2["status"].as_str()).map(str::to_string)),
        ];
        answers.sort();
        assert_eq!(answers, [(200, Some("accepted".to_string())), (403, Some("replay".to_string()))], "round {round}: {b1} {b2}");
    }
    let inbound = one.store.uamp_messages(1000).unwrap().into_iter().filter(|m| m.direction == "in").count();
    assert_eq!(inbound, ROUNDS, "each message kept once");
}
