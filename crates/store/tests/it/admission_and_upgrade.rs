//! What an inbox knows about a sender follows every change, also one made by another
//! process (the CLI while `gatehouse serve` runs); and a store an earlier Gatehouse
//! left behind keeps its nonces through the schema changes made for speed; and the WAL
//! stays bounded while checkpoints run beside a steady stream of commits.

use crate::common::{envelope, SENDER};
use gatehouse_store::{AcceptRefusal, Policy, RateLimit, Store, TrustEntry};

fn entry(scopes: &[&str]) -> TrustEntry {
    TrustEntry {
        door: "epp".into(),
        facts: Default::default(),
        public_key: SENDER.into(),
        name: "Bob's agent".into(),
        added_at: "2026-11-23T09:00:00Z".into(),
        policy: Policy { allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(), ..Policy::default() },
    }
}

crate::on_both_engines! {
    fn admission_follows_changes_made_through_another_connection(place) {
        let inbox = place.open();
        let cli = place.open();

        let a = inbox.admission(SENDER, "executors").unwrap();
        assert!(a.trust.is_none() && !a.blocked && a.setting.is_none());
        // Asked again with nothing changed: the same answer.
        assert!(inbox.admission(SENDER, "executors").unwrap().trust.is_none());

        cli.trust_add(&entry(&["support"])).unwrap();
        let a = inbox.admission(SENDER, "executors").unwrap();
        assert_eq!(a.trust.expect("trusted now").policy.allowed_scopes, vec!["support".to_string()]);

        cli.trust_update(SENDER, None, &entry(&["support", "billing"]).policy, None).unwrap();
        let a = inbox.admission(SENDER, "executors").unwrap();
        assert_eq!(a.trust.unwrap().policy.allowed_scopes.len(), 2, "an edited policy is seen at once");

        cli.block(SENDER, "spam", "2026-11-23T09:01:00Z").unwrap();
        assert!(inbox.admission(SENDER, "executors").unwrap().blocked, "a block is seen at once");
        cli.unblock(SENDER).unwrap();
        assert!(!inbox.admission(SENDER, "executors").unwrap().blocked);

        cli.set_setting("executors", &serde_json::json!({"default": "noop"})).unwrap();
        let a = inbox.admission(SENDER, "executors").unwrap();
        assert_eq!(a.setting.as_deref(), Some(r#"{"default":"noop"}"#));

        cli.trust_remove(SENDER).unwrap();
        assert!(inbox.admission(SENDER, "executors").unwrap().trust.is_none(), "a removed sender is untrusted at once");
    }
}

crate::on_both_engines! {
    /// The inbox decides on the view it read last and the commit checks it is still current:
    /// an envelope admitted before another process removed the sender is not stored.
    fn an_acceptance_decided_on_a_stale_view_is_refused_at_commit(place) {
        let inbox = place.open();
        let cli = place.open();
        cli.trust_add(&entry(&["support"])).unwrap();
        let seen = inbox.admission(SENDER, "executors").unwrap();
        assert!(seen.trust.is_some());
        assert_eq!(inbox.admission_cached(SENDER, "executors").unwrap().version, seen.version, "the cached view is the one read");

        let decided_on = |mut e: gatehouse_store::NewEnvelope, v: i64| {
            e.admission_version = Some(v);
            e
        };
        assert!(inbox.accept(decided_on(envelope(b"first nonce 16by", 1), seen.version), &RateLimit::default()).unwrap().is_ok());

        cli.trust_remove(SENDER).unwrap();
        // Not read again: the cache still says trusted...
        assert!(inbox.admission_cached(SENDER, "executors").unwrap().trust.is_some());
        // ...but the commit refuses what was decided on it, and stores nothing.
        let refused = inbox.accept(decided_on(envelope(b"second nonce 16b", 2), seen.version), &RateLimit::default()).unwrap();
        assert!(matches!(refused, Err(AcceptRefusal::Stale)), "{refused:?}");
        assert_eq!(inbox.count_envelopes().unwrap(), 1);
        // Read again, the view is current and says untrusted.
        let now = inbox.admission(SENDER, "executors").unwrap();
        assert!(now.trust.is_none() && now.version > seen.version);
        assert!(inbox.admission_cached(SENDER, "executors").unwrap().trust.is_none());
    }
}

#[test]
fn nonces_recorded_before_the_upgrade_still_refuse_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    {
        // Schema 10, as the previous release left it: nonces keyed by their bytes.
        let old = gatehouse_store::create_at_schema(&path, 10).unwrap();
        old.execute(
            "INSERT INTO nonces (nonce, expires_at_ms, envelope_id, envelope_row) VALUES (?1, ?2, 'old-env', NULL)",
            rusqlite::params![b"old nonce 16 byt".to_vec(), 1_795_000_000_000i64],
        )
        .unwrap();
        old.execute(
            "INSERT INTO nonces (nonce, expires_at_ms, envelope_id, envelope_row) VALUES (?1, ?2, 'expired-env', NULL)",
            rusqlite::params![b"expired nonce 16".to_vec(), 1_000i64],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.count_nonces().unwrap(), 2);
    assert!(store.nonce_seen(b"old nonce 16 byt").unwrap());
    let limits = RateLimit::default();
    assert!(matches!(store.accept(envelope(b"old nonce 16 byt", 1), &limits).unwrap(), Err(AcceptRefusal::Replay)));
    assert!(store.accept(envelope(b"fresh nonce 16by", 2), &limits).unwrap().is_ok());
    assert!(matches!(store.accept(envelope(b"fresh nonce 16by", 3), &limits).unwrap(), Err(AcceptRefusal::Replay)));
    // Expiry still collects what has expired, and only that.
    assert_eq!(store.gc_nonces(2_000).unwrap(), 1);
    assert!(store.nonce_seen(b"old nonce 16 byt").unwrap());
    assert!(!store.nonce_seen(b"expired nonce 16").unwrap());
}

#[test]
fn the_wal_starts_over_while_acceptances_keep_coming() {
    // Checkpoints run beside the commits; unless the committer finishes each one, the
    // WAL never starts over and grows with every envelope ever accepted.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    let store = std::sync::Arc::new(Store::open(&path).unwrap());
    let wal = dir.path().join("gatehouse.db-wal");
    let writers: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..3000 {
                    let n = t * 10_000 + i;
                    let nonce = format!("nonce-{n:010}");
                    assert!(store.accept(envelope(nonce.as_bytes(), n), &RateLimit::default()).unwrap().is_ok());
                }
            })
        })
        .collect();
    let mut largest = 0;
    while writers.iter().any(|w| !w.is_finished()) {
        largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(store.count_envelopes().unwrap(), 24_000);
    let db = std::fs::metadata(&path).unwrap().len();
    // The WAL file keeps its largest size once reached; without restarts it would hold
    // every page written (several times the database).
    assert!(largest < db, "the WAL reached {largest} bytes for a {db}-byte database");
}

#[test]
fn concurrent_writes_fail_alone_and_nothing_answered_is_lost_at_close() {
    // Writes from many threads share transactions (each committed while the previous
    // one is being synced). A write whose statement fails must fail alone, a nonce must
    // be accepted once however close together its two submissions come, and everything
    // answered as accepted must be there when the store is opened again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    let store = std::sync::Arc::new(Store::open(&path).unwrap());
    let taken = envelope(b"first", 99_999);
    let taken_receipt = taken.receipt.receipt_id.clone();
    assert!(store.accept(taken, &RateLimit::default()).unwrap().is_ok());
    let threads: Vec<_> = (0..4usize)
        .map(|t| {
            let store = store.clone();
            let taken_receipt = taken_receipt.clone();
            std::thread::spawn(move || {
                let (mut accepted, mut replays, mut failed) = (0, 0, 0);
                for i in 0..1500 {
                    // Threads 0 and 1 send the same nonces; 2 and 3 their own, and every
                    // 50th of theirs reuses a receipt id that is already stored.
                    let nonce = if t < 2 { format!("shared-{i}") } else { format!("own-{t}-{i}") };
                    let mut e = envelope(nonce.as_bytes(), t * 10_000 + i);
                    if t >= 2 && i % 50 == 49 {
                        e.receipt.receipt_id = taken_receipt.clone();
                    }
                    match store.accept(e, &RateLimit::default()) {
                        Ok(Ok(_)) => accepted += 1,
                        Ok(Err(AcceptRefusal::Replay)) => replays += 1,
                        Ok(Err(other)) => panic!("unexpected refusal {other:?}"),
                        Err(_) => failed += 1,
                    }
                }
                (t, accepted, replays, failed)
            })
        })
        .collect();
    let mut shared_accepted = 0;
    for th in threads {
        let (t, accepted, replays, failed) = th.join().unwrap();
        if t < 2 {
            assert_eq!(failed, 0);
            shared_accepted += accepted;
        } else {
            assert_eq!((accepted, replays, failed), (1470, 0, 30), "thread {t}");
        }
    }
    assert_eq!(shared_accepted, 1500, "each shared nonce accepted exactly once");
    drop(store);
    let reopened = Store::open(&path).unwrap();
    assert_eq!(reopened.count_envelopes().unwrap(), 1 + 1500 + 2 * 1470);
}

crate::on_both_engines! {
    fn the_queue_of_unknown_senders_is_bounded_and_drops_the_longest_silent_first(place) {
        let store = place.open();
        let n = gatehouse_store::MAX_PENDING + 40;
        for i in 0..n {
            let key = format!("{i:064x}");
            store.pending_record("epp", &key, "support", "e", &format!("2026-11-24T00:{:02}:{:02}Z", i / 60, i % 60)).unwrap();
        }
        // The first one knocks again: it is no longer the longest silent.
        store.pending_record("epp", &format!("{:064x}", 0), "other", "e", "2026-11-24T23:00:00Z").unwrap();
        let list = store.pending_list().unwrap();
        assert_eq!(list.len(), gatehouse_store::MAX_PENDING);
        assert!(list.iter().any(|p| p.public_key == format!("{:064x}", n - 1)), "the newest is kept");
        // A knock that came back after eviction starts over; scopes stay bounded per sender.
        for s in 0..40 {
            store.pending_record("epp", &format!("{:064x}", n - 1), &format!("scope-{s}"), "e", "2026-11-24T23:30:00Z").unwrap();
        }
        let last = store.pending_list().unwrap().into_iter().find(|p| p.public_key == format!("{:064x}", n - 1)).unwrap();
        assert_eq!(last.scopes_tried.len(), gatehouse_store::MAX_SCOPES_TRIED);
    }
}

crate::on_both_engines! {
    fn retention_drops_old_refused_bodies_and_audit_entries_and_keeps_the_rest(place) {
        let store = place.open();
        let day = 24 * 3600 * 1000;
        let now = 1_790_000_000_000i64; // 2026-09
        let row = |id: &str, ms: i64, status: &str| gatehouse_store::ReceiptRow {
            receipt_id: id.into(),
            envelope_id: None,
            status: status.into(),
            code: Some("INVALID_FORMAT".into()),
            message: Some("x".into()),
            received_at: String::new(),
            received_ms: ms,
            transport: "http".into(),
            sender: None,
            scope: None,
            body: Some("garbage".into()),
            body_truncated: false,
            receipt: serde_json::json!({"status": status}),
            prompt: None,
            envelope_row: None,
            outcome: None,
        };
        store.record_receipts(&[row("old", now - 8 * day, "rejected"), row("new", now - day, "rejected")]).unwrap();
        let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        store.audit("trust.add", None, &serde_json::json!({}), &at(now - 400 * day)).unwrap();
        store.audit("trust.remove", None, &serde_json::json!({}), &at(now - 2 * day)).unwrap();
        let r = store.retention();
        assert_eq!(r, gatehouse_store::Retention::default());
        let pruned = store.prune(now, &r).unwrap();
        assert_eq!((pruned.bodies_cleared, pruned.audit_removed), (1, 1));
        let receipts = store.receipts(10, 0).unwrap();
        assert_eq!(receipts.len(), 2, "the receipts themselves stay");
        let body = |id: &str| receipts.iter().find(|r| r.receipt_id == id).unwrap().body.clone();
        assert_eq!((body("old"), body("new").as_deref()), (None, Some("garbage")));
        // The chain says what retention dropped: the last entry dropped and its hash.
        let kept = store.audit_list(10).unwrap();
        assert_eq!(kept.iter().map(|a| a.action.as_str()).collect::<Vec<_>>(), ["audit.pruned", "trust.remove"]);
        assert_eq!(kept[0].detail["through_id"], kept[1].id - 1);
        assert_eq!(kept[0].detail["hash"], kept[1].prev_hash.as_str());
        // 0 keeps forever.
        let forever = gatehouse_store::Retention { rejected_body_days: 0, rejected_receipt_days: 0, audit_days: 0, steps_days: 0 };
        assert_eq!(store.prune(now + 1000 * day, &forever).unwrap(), gatehouse_store::Pruned::default());
    }
}

crate::on_both_engines! {
    fn agents_decided_steps_go_after_their_retention_with_their_answers_and_waiting_ones_stay(place) {
        let store = place.open();
        let day = 24 * 3600 * 1000;
        let now = 1_790_000_000_000i64;
        let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let step = |id: &str, decision: &str, ms: i64| crate::common::asop_step(id, decision, at(ms));
        for (id, decision, age) in [("old", "allow", 40), ("old-waiting", "pending", 40), ("new", "allow", 2)] {
            store.asop_step_add(&step(id, decision, now - age * day)).unwrap();
        }
        // An answer is kept once, and only for a step that went on.
        let answer = serde_json::json!({"bytes": 5, "failed": false, "excerpt": "hello", "flags": []});
        let told = [("new".to_string(), answer.clone()), ("old-waiting".to_string(), answer.clone()), ("new".to_string(), serde_json::json!({"bytes": 1}))];
        assert_eq!(store.asop_steps_answered("mcp:files", &told).unwrap().len(), 1);
        assert!(store.asop_steps_answered("mcp:other", &[("old".to_string(), answer.clone())]).unwrap().is_empty(), "another agent's step is not its");
        let r = gatehouse_store::Retention { steps_days: 30, ..gatehouse_store::Retention::default() };
        assert_eq!(store.prune(now, &r).unwrap().steps_removed, 1);
        let left = store.asop_agent_steps("mcp:files", 10).unwrap();
        let left: Vec<_> = left.iter().map(|s| (s.step_id.as_deref().unwrap(), s.answer.clone())).collect();
        assert_eq!(left, [("new", Some(answer)), ("old-waiting", None)]);
    }
}

#[test]
fn refused_receipts_go_after_their_retention_with_their_search_and_sender_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap();
    let day = 24 * 3600 * 1000;
    let now = 1_790_000_000_000i64;
    let row = |id: &str, ms: i64, status: &str| gatehouse_store::ReceiptRow {
        receipt_id: id.into(),
        envelope_id: None,
        status: status.into(),
        code: (status == "rejected").then(|| "UNKNOWN_SENDER".into()),
        message: None,
        received_at: String::new(),
        received_ms: ms,
        transport: "http".into(),
        sender: Some("stranger".into()),
        scope: Some("support".into()),
        body: None,
        body_truncated: false,
        receipt: serde_json::json!({"status": status}),
        prompt: Some(format!("needle {id}")),
        envelope_row: None,
        outcome: None,
    };
    store
        .record_receipts(&[
            row("old-refused", now - 100 * day, "rejected"),
            row("old-kept", now - 100 * day, "accepted"),
            row("new-refused", now - 10 * day, "rejected"),
        ])
        .unwrap();
    let search = |q: &str| {
        let f = gatehouse_store::InboxFilter { search: Some(q.into()), limit: Some(10), ..Default::default() };
        let mut ids = store.inbox(&f).unwrap().into_iter().map(|i| i.receipt_id).collect::<Vec<_>>();
        ids.sort();
        ids
    };
    // A search has the committer index everything stored so far (search and by sender).
    assert_eq!(search("needle").len(), 3);
    let pruned = store.prune(now, &gatehouse_store::Retention::default()).unwrap();
    assert_eq!(pruned.receipts_removed, 1);
    assert!(store.receipt("old-refused").unwrap().is_none());
    assert!(store.receipt("old-kept").unwrap().is_some(), "receipts of accepted envelopes stay");
    assert_eq!(search("needle"), ["new-refused", "old-kept"]);
    let f = gatehouse_store::InboxFilter { sender: Some("stranger".into()), limit: Some(10), ..Default::default() };
    assert_eq!(store.inbox(&f).unwrap().len(), 2);
    // Neither index keeps an entry for the deleted receipt.
    let db = rusqlite::Connection::open(dir.path().join("gatehouse.db")).unwrap();
    db.execute("INSERT INTO receipts_fts (receipts_fts, rank) VALUES ('integrity-check', 1)", []).unwrap();
    let by_sender: i64 = db.query_row("SELECT count(*) FROM receipts_by_sender", [], |r| r.get(0)).unwrap();
    assert_eq!(by_sender, 2);
}

#[test]
fn keys_verified_with_the_old_safety_code_or_a_did_web_s_own_did_are_asked_to_verify_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    let (by_code, by_shared, web, unverified) = ("aa".repeat(32), "bb".repeat(32), "did:web:agent.example", "cc".repeat(32));
    {
        // Schema 26, as the previous release left it: three verified keys, one not.
        let old = gatehouse_store::create_at_schema(&path, 26).unwrap();
        for (i, k) in [&by_code, &by_shared, &web.to_string(), &unverified].into_iter().enumerate() {
            old.execute("INSERT INTO contacts (id, name, created_at) VALUES (?1, 'c', 't')", [i as i64 + 1]).unwrap();
            let verified = (i < 3).then_some("2026-11-25T00:00:00Z");
            old.execute(
                "INSERT INTO contact_keys (key, contact_id, added_at, verified_at) VALUES (?1, ?2, 't', ?3)",
                rusqlite::params![k, i as i64 + 1, verified],
            )
            .unwrap();
        }
        let audit = |k: &str, how: &str| {
            old.execute(
                "INSERT INTO audit (at, action, subject, detail) VALUES ('t', 'contact.verify', ?1, ?2)",
                rusqlite::params![k, serde_json::json!({"contact": 1, "how": how}).to_string()],
            )
            .unwrap();
        };
        audit(&by_code, "safety codes compared");
        audit(&by_shared, "their shared code");
        audit(web, "their shared code");
    }
    let store = Store::open(&path).unwrap();
    let reverify = |k: &str| store.contacts().unwrap().into_iter().flat_map(|c| c.keys).find(|x| x.key == k).unwrap().reverify;
    assert!(reverify(&by_code).is_some_and(|w| w.contains("old 20-digit safety code")));
    assert_eq!(reverify(&by_shared), None, "their shared code named the very key: it stands");
    assert!(reverify(web).is_some_and(|w| w.contains("pasting its DID")));
    assert_eq!(reverify(&unverified), None);
    // Verifying again clears it.
    store.contact_key_reverify(&by_code, None).unwrap();
    assert_eq!(reverify(&by_code), None);
}

#[test]
fn knocks_waiting_from_before_the_upgrade_keep_the_door_they_came_through() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    {
        // Schema 29: knocks recorded without their door.
        let old = gatehouse_store::create_at_schema(&path, 29).unwrap();
        for (key, scopes) in [
            ("asop:mailer", r#"["asop"]"#),
            ("did:key:z6MkSite", r#"["intentweb"]"#),
            ("did:key:z6MkAgent", r#"["ask"]"#),
            (&"ab".repeat(32)[..], r#"["support"]"#),
        ] {
            old.execute(
                "INSERT INTO pending_senders (public_key, first_seen, last_seen, count, scopes, last_envelope_id) VALUES (?1, 't', 't', 1, ?2, 'e')",
                rusqlite::params![key, scopes],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    let mut doors: Vec<(String, String)> = store.pending_list().unwrap().into_iter().map(|p| (p.public_key, p.door)).collect();
    doors.sort();
    assert_eq!(
        doors,
        [("ab".repeat(32), "epp"), ("asop:mailer".into(), "guardian"), ("did:key:z6MkAgent".into(), "uamp"), ("did:key:z6MkSite".into(), "intentweb")]
            .map(|(k, d)| (k, d.to_string()))
    );
    // A knock recorded now names its door, and the newest knock's door is kept.
    store.pending_record("uamp", "did:key:z6MkSite", "ask", "m", "t2").unwrap();
    assert_eq!(store.pending_list().unwrap().into_iter().find(|p| p.public_key == "did:key:z6MkSite").unwrap().door, "uamp");
}

#[test]
fn envelopes_kept_before_the_upgrade_know_the_door_they_came_by() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    {
        // Schema 40: envelopes kept without their door.
        let old = gatehouse_store::create_at_schema(&path, 40).unwrap();
        for (id, transport) in [("by-http", "http"), ("by-folder", "folder:a.json"), ("by-a2a", "a2a")] {
            old.execute(
                "INSERT INTO envelopes (envelope_id, sender, recipient, scope, prompt, timestamp, expires_at, received_at, received_ms,
                    transport, signed_form, raw, raw_sha256, receipt_id, executor, exec_status)
                 VALUES (?1, 's', 'r', 'ask', 'p', 't', 't', 't', 0, ?2, 'reference', '{}', '00', ?1, 'noop', 'succeeded')",
                rusqlite::params![id, transport],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    let mut doors: Vec<(String, String)> = store.envelopes(10, 0).unwrap().into_iter().map(|e| (e.envelope_id, e.door)).collect();
    doors.sort();
    assert_eq!(doors, [("by-a2a", "a2a"), ("by-folder", "epp"), ("by-http", "epp")].map(|(e, d)| (e.to_string(), d.to_string())));
}

#[test]
fn receipts_kept_before_the_upgrade_say_what_became_of_their_arrival_where_their_words_tell() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    {
        // Schema 41: receipts with their door's code only.
        let old = gatehouse_store::create_at_schema(&path, 41).unwrap();
        for (id, status, code, message) in [
            ("knock", "rejected", Some("UNTRUSTED_SENDER"), "sender ab… is not in this inbox's trust registry; the owner has been asked"),
            ("block", "rejected", Some("UNTRUSTED_SENDER"), "sender is blocked by the owner of this inbox"),
            (
                "a2a-knock",
                "rejected",
                Some("UNTRUSTED_SENDER"),
                "You are not known to this gate yet (a token you issued); the person it belongs to has been asked whether you may reach their AI.",
            ),
            ("uamp-knock", "rejected", Some("UAMP_4.03"), "did:key:z6Mk is not in this inbox's trust registry; the user has been asked"),
            ("uamp-keys", "rejected", Some("UAMP_4.03"), "bad signature; if its keys changed, the user has been asked to check its DID document again"),
            ("revoked", "rejected", Some("SENDER_REVOKED"), "revoked"),
            ("late", "rejected", Some("EXPIRED"), "expired"),
            ("fine", "accepted", None, ""),
        ] {
            old.execute(
                "INSERT INTO receipts (receipt_id, status, code, message, received_at, received_ms, transport, body_truncated, receipt)
                 VALUES (?1, ?2, ?3, ?4, 't', 0, 'http', 0, '{}')",
                rusqlite::params![id, status, code, message],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    let mut outcomes: Vec<(String, Option<String>)> =
        store.receipts(20, 0).unwrap().into_iter().map(|r| (r.receipt_id, r.outcome.map(|o| o.as_str().to_string()))).collect();
    outcomes.sort();
    let want = [
        ("a2a-knock", Some("knock")),
        ("block", Some("blocked")),
        ("fine", Some("accepted")),
        ("knock", Some("knock")),
        ("late", Some("stale")),
        ("revoked", Some("revoked")),
        ("uamp-keys", None),
        ("uamp-knock", Some("knock")),
    ];
    assert_eq!(outcomes, want.map(|(r, o)| (r.to_string(), o.map(str::to_string))));
}

#[test]
fn an_upgraded_audit_log_is_chained_from_its_first_entry_and_goes_on_from_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    {
        // Schema 34, as the previous release left it: entries without hashes, the first
        // two already dropped by retention.
        let old = gatehouse_store::create_at_schema(&path, 34).unwrap();
        for id in 3..=5 {
            old.execute(
                "INSERT INTO audit (id, at, action, subject, detail) VALUES (?1, '2026-11-01T00:00:00Z', 'trust.add', 'k', ?2)",
                rusqlite::params![id, format!("{{ \"n\": {id} }}")],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    store.audit("trust.remove", Some("k"), &serde_json::json!({}), "2026-11-26T00:00:00Z").unwrap();
    let chain = store.audit_chain(0, 10).unwrap();
    assert_eq!(chain.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 4, 5, 6]);
    assert_eq!(chain[0].prev_hash, gatehouse_store::AUDIT_GENESIS, "the chain starts at the first entry kept");
    for w in chain.windows(2) {
        assert_eq!(w[1].prev_hash, w[0].hash);
    }
    for e in &chain {
        assert_eq!(e.hash, gatehouse_store::audit_entry_hash(e.id, &e.at, &e.action, e.subject.as_deref(), &e.detail.to_string(), &e.prev_hash));
    }
    assert_eq!(store.audit_head().unwrap(), (6, chain[3].hash.clone()));
    drop(store);
    // Opened again: nothing is chained twice.
    let store = Store::open(&path).unwrap();
    assert_eq!(store.audit_chain(0, 10).unwrap(), chain);
}

crate::on_both_engines! {
    /// A UAMP message is committed only on the registry it was decided on, as an envelope
    /// is: the user blocked its sender (on another connection) between the decision and the
    /// commit, and the commit refuses it as stale, so the gate decides again.
    fn a_uamp_message_decided_on_a_registry_changed_since_is_refused_as_stale(place) {
        let inbox = place.open();
        let cli = place.open();
        cli.trust_add(&entry(&["*"])).unwrap();
        let decided = inbox.admission(SENDER, "executors").unwrap().version;
        cli.block(SENDER, "changed its mind", "2026-11-26T09:59:00Z").unwrap();
        let msg = gatehouse_store::uamp::NewUampMessage {
            message_id: "0190f0a0-0000-7000-8000-000000000001".into(),
            direction: "in",
            sender: SENDER.into(),
            recipients: vec!["did:key:z6Mkf5rGMoatrSj1f4CyvuHBeXJELe9RPdzo2PKGNCKVtZxP".into()],
            intent: "inform".into(),
            stream_id: None,
            reply_to: None,
            scope: Some("inform".into()),
            body_type: "text/plain".into(),
            content: "decided before the block".into(),
            ts: "2026-11-26T10:00:00Z".into(),
            received_at: "2026-11-26T10:00:00Z".into(),
            received_ms: 1_795_000_000_000,
            raw: "{}".into(),
            receipt_id: "r-stale".into(),
        };
        let mut receipt = envelope(b"unused", 1).receipt;
        receipt.receipt_id = "r-stale".into();
        receipt.transport = "uamp".into();
        let r = inbox.uamp_accept(&msg, None, &receipt, &RateLimit::default(), Some(decided)).unwrap();
        assert!(matches!(r, Err(gatehouse_store::uamp::UampRefusal::Stale)), "{r:?}");
        assert!(inbox.uamp_message(&msg.message_id).unwrap().is_none(), "nothing kept");
        // Decided on the registry as it is now, it would be kept (and the gate refuses it: blocked).
        let now = inbox.admission(SENDER, "executors").unwrap().version;
        assert!(inbox.uamp_accept(&msg, None, &receipt, &RateLimit::default(), Some(now)).unwrap().is_ok());
    }
}

crate::on_both_engines! {
    /// An agent's step is counted against its rate only on the registry it was decided on:
    /// a change between the decision and the count refuses it as stale (the gate decides
    /// again), and nothing is counted.
    fn a_step_counted_on_a_registry_changed_since_is_refused_as_stale(place) {
        let gate = place.open();
        let cli = place.open();
        cli.trust_add(&entry(&["asop"])).unwrap();
        let decided = gate.admission(SENDER, "").unwrap().version;
        cli.trust_update(SENDER, None, &entry(&[]).policy, None).unwrap();
        let at = 1_795_000_000_000;
        let r = gate.take_rate(SENDER, at, &RateLimit::default(), Some(decided)).unwrap();
        assert!(matches!(r, Err(AcceptRefusal::Stale)), "{r:?}");
        assert_eq!(gate.accepted_since(SENDER, at - 60_000).unwrap(), 0, "nothing counted");
        let now = gate.admission(SENDER, "").unwrap().version;
        assert!(gate.take_rate(SENDER, at, &RateLimit::default(), Some(now)).unwrap().is_ok());
        assert_eq!(gate.accepted_since(SENDER, at - 60_000).unwrap(), 1);
    }
}
