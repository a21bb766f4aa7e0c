//! What a prompt lists of a sender's past knocks.

use gatehouse_store::{ReceiptRow, Store};

use crate::common::SENDER;

fn knock(n: usize, received_ms: i64) -> ReceiptRow {
    ReceiptRow {
        receipt_id: format!("0190f0a0-0000-7000-8000-{n:012}"),
        envelope_id: Some(format!("env-{n}")),
        status: "rejected".into(),
        code: Some("UNTRUSTED_SENDER".into()),
        message: None,
        received_at: "2026-11-23T09:00:01Z".into(),
        received_ms,
        transport: "http".into(),
        sender: Some(SENDER.into()),
        scope: Some("support".into()),
        body: None,
        body_truncated: false,
        receipt: serde_json::json!({"status": "rejected"}),
        prompt: Some(format!("try {n}")),
        envelope_row: None,
    }
}

#[test]
fn knocks_in_one_millisecond_are_listed_newest_first_in_the_order_they_came() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("g.db")).unwrap();
    // The clock says the same millisecond for all three; they were kept one after another.
    for n in 1..=3 {
        store.record_rejection(&knock(n, 1_794_996_401_000), None).unwrap();
    }
    let (covered, total) = store.covered_by_grant(SENDER, "support", None, 3).unwrap();
    assert_eq!(total, 3);
    assert_eq!(covered.iter().map(|c| c.excerpt.as_deref().unwrap()).collect::<Vec<_>>(), ["try 3", "try 2", "try 1"]);
}
