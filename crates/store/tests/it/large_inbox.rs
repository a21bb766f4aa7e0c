//! A store with 100,000 receipts: pages, filters and search stay correct and never load
//! everything (timings belong in the benchmarks, not here).

use gatehouse_store::{InboxFilter, ReceiptRow, Store};

fn row(i: usize) -> ReceiptRow {
    let rejected = i.is_multiple_of(10);
    ReceiptRow {
        receipt_id: format!("r-{i:06}"),
        envelope_id: Some(format!("e-{i:06}")),
        status: if rejected { "rejected" } else { "accepted" }.into(),
        code: rejected.then(|| "POLICY_DENIED".to_string()),
        message: None,
        received_at: "2026-11-22T12:00:00.000Z".into(),
        received_ms: 1_700_000_000_000 + i as i64,
        transport: if i.is_multiple_of(2) { "http".into() } else { format!("folder:f{i}.json") },
        sender: Some(format!("{:064x}", i % 50)),
        scope: Some(if i.is_multiple_of(3) { "billing" } else { "support" }.into()),
        body: None,
        body_truncated: false,
        receipt: serde_json::json!({"status": "accepted"}),
        prompt: Some(if i == 77_777 { "the needle prompt".to_string() } else { format!("routine message number {i}") }),
        envelope_row: None,
        outcome: None,
    }
}

#[test]
fn a_hundred_thousand_receipts_page_filter_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("big.db")).unwrap();
    let rows: Vec<ReceiptRow> = (0..100_000).map(row).collect();
    for chunk in rows.chunks(20_000) {
        store.record_receipts(chunk).unwrap();
    }
    let first = store.inbox(&InboxFilter { limit: Some(100), ..Default::default() }).unwrap();
    assert_eq!(first.len(), 100);
    assert_eq!(first[0].receipt_id, "r-099999", "newest first");
    // Walk ten pages by keyset: contiguous, no overlap.
    let mut before = None;
    let mut seen = 0;
    for _ in 0..10 {
        let page = store.inbox(&InboxFilter { limit: Some(100), before_seq: before, ..Default::default() }).unwrap();
        if let (Some(b), Some(f)) = (before, page.first()) {
            assert!(f.seq < b);
        }
        seen += page.len();
        before = page.last().map(|r| r.seq);
    }
    assert_eq!(seen, 1000);
    let f =
        InboxFilter { status: Some("rejected".into()), scope: Some("billing".into()), transport: Some("http".into()), limit: Some(50), ..Default::default() };
    let filtered = store.inbox(&f).unwrap();
    assert_eq!(filtered.len(), 50);
    assert!(filtered.iter().all(|r| r.status == "rejected" && r.scope.as_deref() == Some("billing") && r.transport == "http"));
    let found = store.inbox(&InboxFilter { search: Some("needle".into()), ..Default::default() }).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].receipt_id, "r-077777");
    let sender = format!("{:064x}", 7);
    let by_sender = store.inbox(&InboxFilter { sender: Some(sender.clone()), limit: Some(500), ..Default::default() }).unwrap();
    assert_eq!(by_sender.len(), 500);
    assert!(by_sender.iter().all(|r| r.sender.as_deref() == Some(sender.as_str())));
}

#[test]
fn pages_by_sender_are_exact_across_indexed_and_newly_stored_receipts() {
    // Receipts are added to the index by sender in batches; the newest ones are found by
    // scanning what was stored since. Walking a sender's receipts page by page must give
    // each one exactly once, newest first, wherever the watermark stands.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("by-sender.db")).unwrap();
    let rows: Vec<ReceiptRow> = (0..6_000).map(row).collect();
    store.record_receipts(&rows[..4_000]).unwrap();
    // A search brings every index up to date: the first 4,000 are indexed, the rest not.
    store.inbox(&InboxFilter { search: Some("routine".into()), limit: Some(1), ..Default::default() }).unwrap();
    store.record_receipts(&rows[4_000..]).unwrap();
    let sender = format!("{:064x}", 7);
    let expected: Vec<String> = (0..6_000).rev().filter(|i| i % 50 == 7).map(|i| format!("r-{i:06}")).collect();
    let walk = |filter: InboxFilter| {
        let mut before = None;
        let mut got = Vec::new();
        loop {
            let page = store.inbox(&InboxFilter { before_seq: before, limit: Some(7), ..filter.clone() }).unwrap();
            if page.is_empty() {
                break got;
            }
            before = page.last().map(|r| r.seq);
            got.extend(page.into_iter().map(|r| r.receipt_id));
        }
    };
    assert_eq!(walk(InboxFilter { sender: Some(sender.clone()), ..Default::default() }), expected);
    // With another filter on top: only the sender's rejected ones (i % 10 == 0 never
    // meets i % 50 == 7, so take sender 10's).
    let ten = format!("{:064x}", 10);
    let rejected: Vec<String> = (0..6_000).rev().filter(|i| i % 50 == 10 && i % 10 == 0).map(|i| format!("r-{i:06}")).collect();
    assert_eq!(walk(InboxFilter { sender: Some(ten), status: Some("rejected".into()), ..Default::default() }), rejected);
    // And the same walk once everything is indexed.
    store.inbox(&InboxFilter { search: Some("routine".into()), limit: Some(1), ..Default::default() }).unwrap();
    assert_eq!(walk(InboxFilter { sender: Some(sender), ..Default::default() }), expected);
}

#[test]
fn what_arrived_after_the_newest_row_shown_is_read_alone_with_the_views_filter() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("after.db")).unwrap();
    let rows: Vec<ReceiptRow> = (0..1_000).map(row).collect();
    store.record_receipts(&rows[..900]).unwrap();
    // Part of it indexed by sender, the rest not: both halves of the sender form are read.
    store.inbox(&InboxFilter { search: Some("routine".into()), limit: Some(1), ..Default::default() }).unwrap();
    let sender = format!("{:064x}", 7);
    let shown = store.inbox(&InboxFilter { limit: Some(50), ..Default::default() }).unwrap();
    let shown_by_sender = store.inbox(&InboxFilter { sender: Some(sender.clone()), limit: Some(5), ..Default::default() }).unwrap();
    store.record_receipts(&rows[900..]).unwrap();

    let newer = store.inbox(&InboxFilter { after_seq: Some(shown[0].seq), limit: Some(500), ..Default::default() }).unwrap();
    let ids: Vec<String> = newer.iter().map(|r| r.receipt_id.clone()).collect();
    assert_eq!(ids, (900..1_000).rev().map(|i| format!("r-{i:06}")).collect::<Vec<_>>(), "only the hundred new ones, newest first");
    let newer = store.inbox(&InboxFilter { sender: Some(sender.clone()), after_seq: Some(shown_by_sender[0].seq), ..Default::default() }).unwrap();
    let ids: Vec<String> = newer.iter().map(|r| r.receipt_id.clone()).collect();
    assert_eq!(ids, (900..1_000).rev().filter(|i| i % 50 == 7).map(|i| format!("r-{i:06}")).collect::<Vec<_>>());
    assert!(store.inbox(&InboxFilter { after_seq: Some(newer[0].seq.max(shown[0].seq) + 1_000), ..Default::default() }).unwrap().is_empty());
}
