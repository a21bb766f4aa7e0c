//! What a prompt lists of a sender's past knocks.

use gatehouse_store::ReceiptRow;

use crate::common::SENDER;

/// Knock number `n` from [`SENDER`]: refused because it is not trusted, nothing kept but
/// its receipt.
fn knock(n: usize, received_ms: i64) -> ReceiptRow {
    let mut r = crate::common::envelope_at(&[], n, received_ms).receipt;
    (r.status, r.code, r.prompt) = ("rejected".into(), Some("UNTRUSTED_SENDER".into()), Some(format!("try {n}")));
    r.outcome = Some(gatehouse_code::Outcome::Knock);
    r.receipt = serde_json::json!({"status": "rejected"});
    r
}

crate::on_both_engines! {
    fn knocks_in_one_millisecond_are_listed_newest_first_in_the_order_they_came(place) {
        let store = place.open();
        // The clock says the same millisecond for all three; they were kept one after another.
        for n in 1..=3 {
            store.record_rejection(&knock(n, 1_794_996_401_000), None).unwrap();
        }
        let (covered, total) = store.covered_by_grant(SENDER, "support", None, 3).unwrap();
        assert_eq!(total, 3);
        assert_eq!(covered.iter().map(|c| c.excerpt.as_deref().unwrap()).collect::<Vec<_>>(), ["try 3", "try 2", "try 1"]);
    }
}
