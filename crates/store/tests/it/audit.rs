//! The audit log read a page at a time, newest first, from a moment on: what the Activity
//! view's "this week" and "Show older" read, so a busy week is never cut at a fixed count.

use crate::on_both_engines;

on_both_engines! {
    /// 25 entries over 5 days, read from 2 days ago in pages of 4: every entry of that
    /// period once, newest first, nothing older.
    fn pages_from_a_moment_hold_every_entry_once_newest_first(place) {
        let store = place.open();
        for i in 0..25 {
            let at = format!("2026-11-{:02}T{:02}:00:00Z", 20 + i / 5, i % 5);
            store.audit("trust.add", Some(&format!("key {i}")), &serde_json::json!({"i": i}), &at).unwrap();
        }
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let page = store.audit_page(Some("2026-11-22T00:00:00Z"), before, 4).unwrap();
            seen.extend(page.iter().map(|e| e.detail["i"].as_i64().unwrap()));
            if page.len() < 4 {
                break;
            }
            before = page.last().map(|e| e.id);
        }
        assert_eq!(seen, (10..25).rev().collect::<Vec<i64>>());
        let all = store.audit_page(None, None, 100).unwrap();
        assert_eq!(all.len(), 25);
        assert_eq!(store.audit_page(None, Some(all[20].id), 100).unwrap().len(), 4);
    }
}
