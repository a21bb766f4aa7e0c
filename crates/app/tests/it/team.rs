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
    let items = gatehouse_app::consent::pending(&crate::common::ctx(&approver)).unwrap();
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

/// The gate's database stops while a mail waits to be read: the mail is neither accepted
/// without a commit nor filed or answered as refused; once the database is back, it is
/// accepted and filed, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_read_while_the_database_is_down_waits_and_is_accepted_once_it_is_back() {
    use crate::email::{account, count, deliver, envelope_mail, wait_account};
    let Some(dv) = crate::email::dovecot() else { return };
    // A cluster of this test's own: it is stopped here.
    let Some(pg) = gatehouse_pg_testserver::Postgres::start() else { return };
    let (port, url, alice) = (dv.port, pg.fresh_database(), key(7));
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let env = probe.signed(&alice, "support", "sent while the database was down");
    probe.stop().await;
    let follow = gatehouse_app::doors::email::Follow::new("personal".into(), account(port), "secret".into(), None);
    let acct = serde_json::to_value(&follow.account).unwrap();
    let inbox = TestInbox::start_email_on(
        &pubhex(&key(1)),
        Store::open_url(&url).unwrap(),
        |s| {
            s.email_account_put("personal", &acct, "2026-11-25T00:00:00Z").unwrap();
            s.trust_add(&gatehouse_store::TrustEntry {
                door: "epp".into(),
                facts: Default::default(),
                public_key: pubhex(&alice),
                name: "Alice".into(),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy: policy(&["support"]),
            })
            .unwrap();
        },
        vec![follow],
    )
    .await;
    let store = inbox.store.clone();
    wait_account(&store, "waiting in IDLE", |a| a.state == "idle").await;

    pg.stop();
    deliver(port, &envelope_mail(&env, 1)).await;
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert_eq!((count(port, "INBOX").await, count(port, "Gatehouse.Rejected").await), (1, 0), "waiting where it arrived, not filed as refused");

    pg.resume();
    let t = std::time::Instant::now();
    while count(port, "Gatehouse.Accepted").await < 1 {
        assert!(t.elapsed() < std::time::Duration::from_secs(90), "not read once the database was back: {:?}", store.email_account("personal"));
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let receipts = store.receipts(20, 0).unwrap();
    assert_eq!(receipts.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(), ["accepted"], "one receipt, the acceptance: {receipts:?}");
    assert_eq!((count(port, "INBOX").await, count(port, "Gatehouse.Rejected").await), (0, 0));
    inbox.stop().await;
}

/// A knock at node 1 reaches a device following node 2's live stream (LISTEN/NOTIFY
/// through the team's database), and a removal at node 1 ends node 2's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knock_at_one_node_reaches_an_approver_following_another() {
    use futures_util::StreamExt;
    let Some(pg) = gatehouse_pg_testserver::Postgres::shared() else { return };
    let url = pg.fresh_database();
    let me = key(4);
    let node1 = TestInbox::start_on(&pubhex(&me), Store::open_url(&url).unwrap().with_node("node-1")).await;
    let node2 = TestInbox::start_on(&pubhex(&me), Store::open_url(&url).unwrap().with_node("node-2")).await;
    let phone = crate::approvers::joined(&node1, "phone").await;

    let stream =
        crate::approvers::signed(&node2, &phone.id, &phone.pair, reqwest::Method::GET, "/approve/events", "", chrono::Utc::now()).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let mut bytes = stream.bytes_stream();
    let mut seen = String::new();
    let mut next_event = async || loop {
        if let Some(end) = seen.find("\n\n") {
            let event: String = seen.drain(..end + 2).collect();
            if event.starts_with("event:") {
                return event;
            }
            continue;
        }
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), bytes.next()).await.expect("an event within 10 s").unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    };
    assert!(next_event().await.starts_with("event: waiting"), "the first: read the list now");

    let stranger = key(5);
    assert_eq!(node1.post_json(&node1.signed(&stranger, "support", "knock at node 1")).await.0, 401);
    assert!(next_event().await.starts_with("event: waiting"));
    let (status, waiting) = crate::approvers::call(&node2, &phone, reqwest::Method::GET, "/approve/waiting", "").await;
    assert_eq!((status, waiting[0]["item"]["prompt"].as_str()), (200, Some("knock at node 1")));

    gatehouse_app::approvers::remove(&crate::common::ctx(&node1.store), &phone.id).unwrap();
    loop {
        let event = next_event().await;
        if event.starts_with("event: removed") {
            break;
        }
        assert!(event.starts_with("event: waiting"), "{event}");
    }
    node1.stop().await;
    node2.stop().await;
}
