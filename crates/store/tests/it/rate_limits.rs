//! Rate limits and "used today" count acceptances per sender in whole minutes: a limit
//! may bite up to a minute early, never late; refusals never count; an upgraded store
//! keeps counting what it accepted before.

use crate::common::{envelope_at, SENDER};
use gatehouse_store::{AcceptRefusal, RateLimit, Store};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
/// A minute boundary (2026-11-19T22:40:00Z).
const BASE: i64 = 1_794_996_000_000;

/// Offers envelope `n` at `at`: `Ok(())` if accepted, else the window and Retry-After.
fn offer(store: &Store, n: usize, at: i64, limits: &RateLimit) -> Result<(), (&'static str, u64)> {
    match store.accept(envelope_at(format!("nonce {n:08}").as_bytes(), n, at), limits).unwrap() {
        Ok(_) => Ok(()),
        Err(AcceptRefusal::RateLimited { window, retry_after_secs, .. }) => Err((window, retry_after_secs)),
        Err(r @ (AcceptRefusal::Replay | AcceptRefusal::Stale)) => panic!("envelope {n} refused: {r:?}"),
    }
}

crate::on_both_engines! {
    fn the_hour_window_frees_when_the_oldest_minute_has_left_it(place) {
        let store = place.open();
        let limits = RateLimit { max_per_hour: Some(2), max_per_day: None };
        assert_eq!(offer(&store, 1, BASE + 30_000, &limits), Ok(()));
        assert_eq!(offer(&store, 2, BASE + 45_000, &limits), Ok(()));
        // Half an hour later: full until the minute both fell in (22:40) leaves the window
        // at 23:41, 31 minutes from now.
        assert_eq!(offer(&store, 3, BASE + 30 * MINUTE, &limits), Err(("hour", 31 * 60)));
        // Refusals do not count, so retrying changes nothing but the wait.
        assert_eq!(offer(&store, 4, BASE + 61 * MINUTE - 1, &limits), Err(("hour", 1)));
        assert_eq!(offer(&store, 5, BASE + 61 * MINUTE, &limits), Ok(()));
        assert_eq!(offer(&store, 6, BASE + 61 * MINUTE + 1, &limits), Ok(()));
        assert_eq!(offer(&store, 7, BASE + 62 * MINUTE, &limits), Err(("hour", 3600)));
    }
}

crate::on_both_engines! {
    fn the_day_window_counts_every_minute_of_the_last_day(place) {
        let store = place.open();
        let limits = RateLimit { max_per_hour: Some(10), max_per_day: Some(3) };
        for (n, at) in [(1, BASE + 10_000), (2, BASE + 2 * HOUR), (3, BASE + 5 * HOUR)] {
            assert_eq!(offer(&store, n, at, &limits), Ok(()));
        }
        assert_eq!(offer(&store, 4, BASE + 20 * HOUR, &limits), Err(("day", (4 * HOUR + MINUTE) as u64 / 1000)));
        assert_eq!(offer(&store, 5, BASE + 24 * HOUR + MINUTE, &limits), Ok(()));
        assert_eq!(offer(&store, 6, BASE + 24 * HOUR + 2 * MINUTE, &limits), Err(("day", (2 * HOUR - MINUTE) as u64 / 1000)));
    }
}

crate::on_both_engines! {
    fn used_today_counts_acceptances_since_midnight_only(place) {
        let store = place.open();
        let midnight = 1_795_046_400_000; // 2026-11-20T00:00:00Z
        let none = RateLimit::default();
        assert_eq!(offer(&store, 1, midnight - 1, &none), Ok(()));
        assert_eq!(offer(&store, 2, midnight, &none), Ok(()));
        assert_eq!(offer(&store, 3, midnight + 5 * MINUTE + 7, &none), Ok(()));
        // A replay is refused and not counted.
        let replay = store.accept(envelope_at(b"nonce 00000003", 4, midnight + 6 * MINUTE), &none).unwrap();
        assert!(matches!(replay, Err(AcceptRefusal::Replay)));
        assert_eq!(store.accepted_since(SENDER, midnight).unwrap(), 2);
        assert_eq!(store.accepted_since(SENDER, midnight - 24 * HOUR).unwrap(), 3);
        assert_eq!(store.accepted_since("someone else", midnight - 24 * HOUR).unwrap(), 0);
        // Three days on, the minutes are forgotten; no window reaches back that far.
        store.gc_usage(midnight + 72 * HOUR).unwrap();
        assert_eq!(store.accepted_since(SENDER, midnight).unwrap(), 2);
        store.gc_usage(midnight + 72 * HOUR + 6 * MINUTE).unwrap();
        assert_eq!(store.accepted_since(SENDER, 0).unwrap(), 0);
    }
}

#[test]
fn acceptances_made_before_the_upgrade_still_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    {
        // Schema 13, as the previous release left it: usage read from the envelopes.
        let old = gatehouse_store::create_at_schema(&path, 13).unwrap();
        for (n, at) in [(1, now - 10 * MINUTE), (2, now - 9 * MINUTE), (3, now - 4 * 24 * HOUR)] {
            old.execute(
                "INSERT INTO envelopes (envelope_id, sender, recipient, scope, prompt, timestamp, expires_at,
                    received_at, received_ms, transport, signed_form, raw, raw_sha256, receipt_id, executor, exec_status)
                 VALUES (?1, ?2, 'ab', 'support', 'p', 't', 'e', 'r', ?3, 'http', 'reference', '{}', '00', ?1, 'noop', 'succeeded')",
                rusqlite::params![format!("old-{n}"), SENDER, at],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.accepted_since(SENDER, now - 24 * HOUR).unwrap(), 2);
    let limits = RateLimit { max_per_hour: Some(2), max_per_day: None };
    let refused = store.accept(envelope_at(b"fresh nonce", 4, now), &limits).unwrap();
    assert!(matches!(refused, Err(AcceptRefusal::RateLimited { window: "hour", limit: 2, .. })), "{refused:?}");
}

#[test]
fn uamp_messages_from_before_the_upgrade_count_where_every_door_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let agent = "did:key:z6MkAgent";
    {
        // Schema 30: UAMP's limits counted over uamp_messages by a query of their own.
        let old = gatehouse_store::create_at_schema(&path, 30).unwrap();
        for (n, intent, at) in
            [(1, "inform", now - 10 * MINUTE), (2, "ask", now - 9 * MINUTE), (3, "progress", now - 8 * MINUTE), (4, "inform", now - 4 * 24 * HOUR)]
        {
            old.execute(
                "INSERT INTO uamp_messages (message_id, direction, sender, recipients, intent, thread, body_type, content, ts, received_at, received_ms, raw, receipt_id)
                 VALUES (?1, 'in', ?2, '[]', ?3, ?1, 'text/plain', 'c', 't', 'r', ?4, '{}', ?1)",
                rusqlite::params![format!("m-{n}"), agent, intent, at],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    // The two counted in the last day (a progress steers its stream and is not counted;
    // four days ago is beyond every window).
    assert_eq!(store.accepted_since(agent, now - 24 * HOUR).unwrap(), 2);
}
