//! A team's gate: several nodes (stores) on one PostgreSQL database answer as one laptop
//! would. What must hold across nodes is held by the database, not by timing: one
//! acceptance per nonce and per UAMP message id, the gate's rate limits, and a schema
//! migrated once however many nodes start together.

use crate::common::{envelope_at, postgres, Place, SENDER};
use gatehouse_store::{AcceptRefusal, RateLimit, Store};
use std::sync::{Arc, Barrier};

const NODES: usize = 3;

fn nodes(place: &Place) -> Vec<Arc<Store>> {
    (0..NODES).map(|_| Arc::new(place.open())).collect()
}

/// Runs `f(node index, node)` on every node at once (released together by a barrier).
fn at_once<T: Send + 'static>(nodes: &[Arc<Store>], f: impl Fn(usize, &Store) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(nodes.len()));
    let handles: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (n, f, barrier) = (n.clone(), f.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                f(i, &n)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn the_same_envelope_at_three_nodes_at_once_is_accepted_once_every_time() {
    let Some(place) = postgres() else { return };
    let nodes = nodes(&place);
    for round in 0..100 {
        let outcomes = at_once(&nodes, move |i, node| {
            // Each node makes its own receipt for the copy it got.
            let mut e = envelope_at(format!("nonce of round {round:04}").as_bytes(), 1000 * round + i, 1_794_996_401_000 + round as i64);
            e.envelope_id = format!("env-round-{round}");
            node.accept(e, &RateLimit::default()).unwrap()
        });
        let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
        let replays = outcomes.iter().filter(|o| matches!(o, Err(AcceptRefusal::Replay))).count();
        assert_eq!((accepted, replays), (1, NODES - 1), "round {round}: {outcomes:?}");
    }
    assert_eq!(nodes[0].count_envelopes().unwrap(), 100);
    assert_eq!(nodes[2].count_nonces().unwrap(), 100);
}

#[test]
fn a_rate_limit_of_ten_an_hour_holds_at_ten_across_three_nodes() {
    let Some(place) = postgres() else { return };
    let nodes = nodes(&place);
    let limits = RateLimit { max_per_hour: Some(10), max_per_day: None };
    let outcomes = at_once(&nodes, move |i, node| {
        (0..10)
            .map(|k| {
                let n = i * 100 + k;
                node.accept(envelope_at(format!("nonce {n:08}").as_bytes(), n, 1_794_996_401_000 + k as i64), &limits).unwrap()
            })
            .collect::<Vec<_>>()
    });
    let all: Vec<_> = outcomes.into_iter().flatten().collect();
    let accepted = all.iter().filter(|o| o.is_ok()).count();
    assert_eq!(accepted, 10, "{all:?}");
    assert!(all.iter().filter(|o| o.is_err()).all(|o| matches!(o, Err(AcceptRefusal::RateLimited { window: "hour", limit: 10, .. }))));
    assert_eq!(nodes[1].accepted_since(SENDER, 1_794_996_000_000).unwrap(), 10);
}

#[test]
fn nodes_starting_together_on_an_empty_database_migrate_it_once() {
    let Some(place) = postgres() else { return };
    let Place::Pg(url) = &place else { unreachable!() };
    let url = Arc::new(url.clone());
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                Store::open_url(&url).map(|s| s.count_envelopes().unwrap())
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), 0, "every node opens the one schema");
    }
    // Had two nodes run a step, the second would have failed on tables that exist.
    let pg = gatehouse_pg_testserver::Postgres::shared().unwrap();
    let db = url.rsplit('/').next().unwrap();
    assert_eq!(pg.psql_in(db, "SELECT count(*) || ' ' || max(version) FROM gatehouse_schema").unwrap(), "1 18", "one row, at the last step");
}

/// A team's database left by the release before step 7 (receipts by sender a table of
/// their own, nonces with an id column): after the upgrade its receipts are still found by
/// sender, beside the ones stored since, and its nonces still refuse their replays.
#[test]
fn a_team_database_from_before_receipts_by_sender_were_an_index_keeps_both() {
    let Some(place) = postgres() else { return };
    let Place::Pg(url) = &place else { unreachable!() };
    let pg = gatehouse_pg_testserver::Postgres::shared().unwrap();
    let db = url.rsplit('/').next().unwrap();
    let store = place.open();
    store.accept(envelope_at(b"nonce before the upgrade", 1, 1_794_996_401_000), &RateLimit::default()).unwrap().unwrap();
    drop(store);
    pg.psql_in(
        db,
        "DROP VIEW receipts_by_sender; DROP INDEX receipts_sender;
         CREATE TABLE receipts_by_sender (sender TEXT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (sender, seq));
         INSERT INTO receipts_by_sender (sender, seq) SELECT sender, seq FROM receipts WHERE sender IS NOT NULL;
         ALTER TABLE nonces ADD COLUMN id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY;
         DROP TABLE seals, seal_head; ALTER TABLE quorum_votes DROP COLUMN proof; DROP TABLE audit_witnesses;
         ALTER TABLE envelopes DROP COLUMN door; ALTER TABLE receipts DROP COLUMN outcome;
         ALTER TABLE uamp_streams DROP COLUMN executor_spec;
         DROP TABLE epp_entries, uamp_entries; ALTER TABLE trust DROP COLUMN door; DROP TABLE mcp_pins, mcp_offers;
         DROP INDEX asop_steps_agent, asop_steps_step; ALTER TABLE asop_steps DROP COLUMN answer;
         DROP INDEX receipts_after_knock; ALTER TABLE receipts DROP COLUMN decided, DROP COLUMN decided_at, DROP COLUMN after_knock;
         UPDATE gatehouse_schema SET version = 6;",
    )
    .unwrap();
    let store = place.open();
    assert_eq!(pg.psql_in(db, "SELECT version FROM gatehouse_schema").unwrap(), "18");
    // Step 11: an envelope kept before knows the door it came by.
    assert_eq!(pg.psql_in(db, "SELECT door FROM envelopes WHERE envelope_id = 'env-1'").unwrap(), "epp");
    // Step 12: its receipt says what became of it.
    assert_eq!(pg.psql_in(db, "SELECT outcome FROM receipts WHERE envelope_id = 'env-1'").unwrap(), "accepted");
    // Step 13: streams keep the executor chosen for them.
    assert_eq!(
        pg.psql_in(db, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'uamp_streams' AND column_name = 'executor_spec'").unwrap(),
        "1"
    );
    // Steps 14 and 15: each door's own table for what it knows about an entry.
    assert_eq!(pg.psql_in(db, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('epp_entries', 'uamp_entries')").unwrap(), "2");
    // Step 16: MCP servers' pinned and offered tools.
    assert_eq!(pg.psql_in(db, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('mcp_pins', 'mcp_offers')").unwrap(), "2");
    // Step 17: what answered a step that went on.
    assert_eq!(pg.psql_in(db, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'asop_steps' AND column_name = 'answer'").unwrap(), "1");
    // Step 18: what the user decided on a knock, and the knock a delivery let in.
    let knocks = "SELECT count(*) FROM information_schema.columns WHERE table_name = 'receipts' AND column_name IN ('decided', 'decided_at', 'after_knock')";
    assert_eq!(pg.psql_in(db, knocks).unwrap(), "3");
    let again = store.accept(envelope_at(b"nonce before the upgrade", 2, 1_794_996_402_000), &RateLimit::default()).unwrap();
    assert!(matches!(again, Err(AcceptRefusal::Replay)), "{again:?}");
    store.accept(envelope_at(b"nonce after the upgrade", 3, 1_794_996_403_000), &RateLimit::default()).unwrap().unwrap();
    let f = gatehouse_store::InboxFilter { sender: Some(crate::common::SENDER.into()), limit: Some(10), ..Default::default() };
    let ids: Vec<String> = store.inbox(&f).unwrap().into_iter().map(|i| i.envelope_id.unwrap_or_default()).collect();
    assert_eq!(ids, ["env-3", "env-1"], "newest first, from before and after the upgrade");
}

crate::on_both_engines! {
    /// Each queued envelope is run by one runner: claims taken at once by several
    /// nodes (or processes) never overlap, and together they take everything.
    fn queued_envelopes_are_claimed_once_by_whichever_node_asks_first(place) {
        let nodes: Vec<Arc<Store>> = ["a", "b", "c"].iter().map(|n| Arc::new(place.open().with_node(n))).collect();
        let mut ids = Vec::new();
        for n in 0..60 {
            let mut e = envelope_at(format!("queued nonce {n:04}").as_bytes(), n, 1_794_996_401_000 + n as i64);
            e.exec_status = gatehouse_store::ExecStatus::Queued;
            ids.push(nodes[0].accept(e, &RateLimit::default()).unwrap().unwrap());
        }
        let ids = Arc::new(ids);
        let claimed = at_once(&nodes, move |_, node| node.claim_queued(&ids, "2026-11-26T10:00:00.000Z").unwrap());
        let mut all: Vec<i64> = claimed.iter().flatten().copied().collect();
        all.sort();
        let before = all.len();
        all.dedup();
        assert_eq!(before, all.len(), "an envelope claimed twice: {claimed:?}");
        assert_eq!(all.len(), 60);
        assert!(nodes[1].claim_queued(&all, "2026-11-26T10:00:01.000Z").unwrap().is_empty(), "nothing is claimed again");
    }
}

/// A node that restarts marks what it was running failed; another node leaves a live
/// node's claims alone until they are older than any executor runs.
#[test]
fn only_a_restarted_nodes_own_claims_or_stale_ones_are_abandoned() {
    let Some(place) = postgres() else { return };
    let a = place.open().with_node("a");
    let b = place.open().with_node("b");
    let mut ids = Vec::new();
    for n in 0..4 {
        let mut e = envelope_at(format!("claimed nonce {n:04}").as_bytes(), n, 1_794_996_401_000 + n as i64);
        e.exec_status = gatehouse_store::ExecStatus::Queued;
        ids.push(a.accept(e, &RateLimit::default()).unwrap().unwrap());
    }
    assert_eq!(a.claim_queued(&ids[..2], "2026-11-26T10:00:00.000Z").unwrap(), ids[..2]);
    assert_eq!(b.claim_queued(&ids[2..], "2026-11-25T09:00:00.000Z").unwrap(), ids[2..]);
    let rows = |v: Vec<gatehouse_store::EnvelopeRow>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    // a restarted: its own claims, and b's claim of yesterday morning (stale by 10:00 today).
    let a_again = place.open().with_node("a");
    assert_eq!(rows(a_again.abandoned_claims("2026-11-25T10:00:00.000Z").unwrap()), ids);
    // b restarted: only its own; a's are fresh and a is alive.
    assert_eq!(rows(b.abandoned_claims("2026-11-25T08:00:00.000Z").unwrap()), ids[2..]);
    // While nodes run, only claims older than the bound are swept, whoever holds them.
    assert_eq!(rows(a.stale_claims("2026-11-25T10:00:00.000Z").unwrap()), ids[2..]);
    assert!(b.stale_claims("2026-11-25T08:00:00.000Z").unwrap().is_empty());
}

crate::on_both_engines! {
    /// One node holds a lease at a time; its holder renews it; another takes it over
    /// once it ran out, or at once when its holder gives it up.
    fn a_lease_is_held_by_one_node_and_taken_over_when_it_runs_out(place) {
        let (a, b) = (place.open().with_node("a"), place.open().with_node("b"));
        let t = 1_794_996_401_000i64;
        assert!(a.take_lease("email:work", t, 30_000).unwrap());
        assert!(!b.take_lease("email:work", t + 1_000, 30_000).unwrap(), "a's lease runs");
        assert!(b.take_lease("email:home", t + 1_000, 30_000).unwrap(), "another name is another lease");
        assert!(a.take_lease("email:work", t + 20_000, 30_000).unwrap(), "renewed by its holder");
        assert!(!b.take_lease("email:work", t + 45_000, 30_000).unwrap(), "renewed until 50 s");
        assert!(b.take_lease("email:work", t + 50_001, 30_000).unwrap(), "a stopped renewing: b takes over");
        assert!(!a.take_lease("email:work", t + 50_002, 30_000).unwrap(), "and a no longer holds it");
        b.release_lease("email:work").unwrap();
        assert!(a.take_lease("email:work", t + 50_003, 30_000).unwrap(), "given up: taken at once");
    }
}

#[test]
fn the_same_uamp_message_id_at_two_nodes_at_once_is_stored_once() {
    let Some(place) = postgres() else { return };
    let nodes: Vec<Arc<Store>> = (0..2).map(|_| Arc::new(place.open())).collect();
    for round in 0..50 {
        let outcomes = at_once(&nodes, move |i, node| {
            let id = format!("0190f0a0-0000-7000-8000-{round:012}");
            let msg = gatehouse_store::uamp::NewUampMessage {
                message_id: id.clone(),
                direction: "in",
                sender: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK".into(),
                recipients: vec!["did:key:z6Mkf5rGMoatrSj1f4CyvuHBeXJELe9RPdzo2PKGNCKVtZxP".into()],
                intent: "inform".into(),
                stream_id: None,
                reply_to: None,
                scope: Some("support".into()),
                body_type: "text".into(),
                content: format!("round {round}"),
                ts: "2026-11-26T10:00:00Z".into(),
                received_at: "2026-11-26T10:00:00Z".into(),
                received_ms: 1_795_000_000_000,
                raw: "{}".into(),
                receipt_id: format!("{id}-{i}"),
            };
            let mut receipt = envelope_at(b"unused", round * 10 + i, 1_795_000_000_000).receipt;
            receipt.receipt_id = format!("{id}-{i}");
            receipt.transport = "uamp".into();
            node.uamp_accept(&msg, None, &receipt, &RateLimit::default(), None).unwrap()
        });
        let stored = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(stored, 1, "round {round}: {outcomes:?}");
        assert!(outcomes.iter().any(|o| matches!(o, Err(gatehouse_store::uamp::UampRefusal::Replay))), "{outcomes:?}");
    }
}

/// The schema is written twice (SQLite's steps, PostgreSQL's in its types): the same
/// tables with the same columns, but for what each engine keeps for itself (a table may be
/// a view of another on PostgreSQL: receipts by sender).
#[test]
fn both_engines_have_the_same_tables_and_columns() {
    let Some(place) = postgres() else { return };
    let lite = crate::common::sqlite().open().schema_columns().unwrap();
    let pg = place.open().schema_columns().unwrap();
    // A nonce's row id is SQLite's rowid; on PostgreSQL a nonce is its own key (step 7).
    let own_to_sqlite = |(t, c): &(String, String)| t.starts_with("receipts_fts") || (t == "nonces" && c == "id");
    let own_to_pg = |(t, c): &(String, String)| t == "gatehouse_schema" || t == "gate_identity" || (t == "mail_tasks" && c == "rowid");
    let lite: Vec<_> = lite.into_iter().filter(|c| !own_to_sqlite(c)).collect();
    let pg: Vec<_> = pg.into_iter().filter(|c| !own_to_pg(c)).collect();
    let missing: Vec<_> = lite.iter().filter(|c| !pg.contains(c)).collect();
    let extra: Vec<_> = pg.iter().filter(|c| !lite.contains(c)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "only in SQLite: {missing:?}; only in PostgreSQL: {extra:?}");
}

crate::on_both_engines! {
    /// Copies racing into one node's group commit (several in one batch) are accepted
    /// once each, whatever batch they land in.
    fn copies_in_one_batch_are_accepted_once(place) {
        let store = Arc::new(place.open());
        let nodes: Vec<Arc<Store>> = (0..8).map(|_| store.clone()).collect();
        let outcomes = at_once(&nodes, |t, node| {
            (0..50)
                .map(|k| {
                    let mut e = envelope_at(format!("shared nonce {k:04}").as_bytes(), 100 * t + k, 1_794_996_401_000 + k as i64);
                    e.envelope_id = format!("env-{k}");
                    node.accept(e, &RateLimit::default()).unwrap()
                })
                .collect::<Vec<_>>()
        });
        let all: Vec<_> = outcomes.into_iter().flatten().collect();
        assert_eq!(all.iter().filter(|o| o.is_ok()).count(), 50);
        assert!(all.iter().filter(|o| o.is_err()).all(|o| matches!(o, Err(AcceptRefusal::Replay))), "{all:?}");
        assert_eq!(store.count_envelopes().unwrap(), 50);
    }
}

#[test]
fn audit_entries_written_at_three_nodes_at_once_form_one_chain() {
    let Some(place) = postgres() else { return };
    let nodes = nodes(&place);
    at_once(&nodes, |i, node| {
        for k in 0..20 {
            node.audit("trust.add", Some(&format!("node {i} entry {k}")), &serde_json::json!({"k": k}), "2026-11-26T00:00:00Z").unwrap();
        }
    });
    let chain = nodes[1].audit_chain(0, 100).unwrap();
    assert_eq!(chain.iter().map(|e| e.id).collect::<Vec<_>>(), (1..=60).collect::<Vec<i64>>(), "one entry per id, none lost");
    assert_eq!(chain[0].prev_hash, gatehouse_store::AUDIT_GENESIS);
    for w in chain.windows(2) {
        assert_eq!(w[1].prev_hash, w[0].hash, "entry {} follows {}", w[1].id, w[0].id);
    }
    assert_eq!(nodes[2].audit_head().unwrap(), (60, chain[59].hash.clone()));
}

#[test]
fn votes_at_three_nodes_at_once_decide_once() {
    use gatehouse_store::quorum::{Ballot, Vote};
    let Some(place) = postgres() else { return };
    let nodes = nodes(&place);
    // Only enrolled devices' votes count.
    for i in 0..NODES {
        let code = format!("code-{i}");
        nodes[0].approver_invite_add(&code, &format!("Device {i}"), "t", i64::MAX, "https://gate.example/approve").unwrap();
        let device = gatehouse_store::Approver {
            id: format!("device-{i}"),
            name: String::new(),
            public_key: format!("key-{i}"),
            added_at: "t".into(),
            last_seen: None,
            page_url: None,
        };
        nodes[0].approver_join(&code, 0, &device).unwrap().unwrap();
    }
    for round in 0..20 {
        let item = format!("item-{round}");
        let votes = at_once(&nodes, move |i, node| {
            let device = format!("device-{i}");
            node.quorum_vote(&Ballot { item: &item, digest: "digest", approver: &device, decision: "allow", needed: 1, ends: false, proof: "" }, "t", &|_| true)
                .unwrap()
        });
        assert_eq!(votes.iter().filter(|v| **v == Vote::Decides).count(), 1, "round {round}: {votes:?}");
        assert_eq!(votes.iter().filter(|v| **v == Vote::AlreadyDecided).count(), NODES - 1, "round {round}: {votes:?}");
    }
    // Two of three: the second agreeing vote decides, whichever node it reaches.
    let votes = at_once(&nodes, |i, node| {
        let device = format!("device-{i}");
        node.quorum_vote(&Ballot { item: "pair", digest: "d", approver: &device, decision: "allow", needed: 2, ends: false, proof: "" }, "t", &|_| true)
            .unwrap()
    });
    assert_eq!(votes.iter().filter(|v| **v == Vote::Decides).count(), 1, "{votes:?}");
    assert!(votes.contains(&Vote::Counted { agreeing: 1 }), "{votes:?}");
}
