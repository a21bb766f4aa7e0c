//! A guardian step recorded without waiting for the disk (an MCP call's record, flushed
//! while its server works): read at once, and on disk once its `Durable` says so; one
//! counted against its sender's rate in the same transaction, kept and counted or neither.

use std::time::{Duration, Instant};

fn step(id: &str) -> gatehouse_store::asop::NewAsopStep {
    crate::common::asop_step(id, "allow", "2026-11-29T17:00:00Z".into())
}

crate::on_both_engines! {
    fn a_step_flushed_later_is_read_at_once_and_kept_once_it_says_it_is_on_disk(place) {
        let store = place.open();
        let mut written = Vec::new();
        for n in 0..20 {
            let (row, on_disk) = store.asop_step_add_flushed_later(&step(&format!("call-{n}"))).unwrap();
            assert_eq!(store.asop_step(row).unwrap().unwrap().step_id.as_deref(), Some(format!("call-{n}").as_str()), "read before it is flushed");
            written.push((row, on_disk));
        }
        let first = written[0].0;
        let deadline = Instant::now() + Duration::from_secs(20);
        for (row, mut on_disk) in written {
            loop {
                match on_disk.try_done() {
                    Some(done) => break done.unwrap(),
                    None => {
                        assert!(Instant::now() < deadline, "the record of step {row} was never said to be on disk");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            // Once said, it stays said.
            assert!(matches!(on_disk.try_done(), Some(Ok(()))));
        }
        drop(store);
        let again = place.open();
        assert_eq!(again.asop_step(first).unwrap().map(|s| s.decision), Some("allow".to_string()));
    }
}

crate::on_both_engines! {
    fn a_step_counted_with_its_record_is_kept_and_counted_or_neither(place) {
        use gatehouse_store::{AcceptRefusal, RateCount, RateLimit};
        let store = place.open();
        let at = 1_794_996_000_000;
        let version = store.admission("mcp:files:ab", "").unwrap().version;
        let count = |sender: &str, limit: u32, version: i64| RateCount {
            sender: sender.into(),
            received_ms: at,
            limits: RateLimit { max_per_hour: Some(limit), max_per_day: None },
            version,
        };
        let steps = |store: &gatehouse_store::Store| store.asop_agent_steps("mcp:files", 100).unwrap().len();
        // Kept and counted in one transaction: the rate's third is refused, and not kept.
        for n in 0..2 {
            let (row, _on_disk) = store.asop_step_add_counted(&step(&format!("call-{n}")), &count("mcp:files:ab", 2, version)).unwrap().unwrap();
            assert!(store.asop_step(row).unwrap().is_some());
        }
        match store.asop_step_add_counted(&step("call-2"), &count("mcp:files:ab", 2, version)).unwrap() {
            Err(AcceptRefusal::RateLimited { window: "hour", limit: 2, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(steps(&store), 2, "a step over the rate is not kept");
        // Let in on a registry that changed since: neither kept nor counted (its door judges
        // it again on the registry as it is).
        let entry = gatehouse_store::TrustEntry {
            door: "mcp".into(),
            facts: Default::default(),
            public_key: "mcp:mail:cd".into(),
            name: "Mail".into(),
            added_at: "2026-11-30T10:00:00Z".into(),
            policy: Default::default(),
        };
        store.trust_add(&entry).unwrap();
        let now = store.admission("mcp:files:ab", "").unwrap().version;
        assert_ne!(now, version, "letting another server in changed the registry");
        assert!(matches!(store.asop_step_add_counted(&step("call-3"), &count("mcp:other:ef", 1, version)).unwrap(), Err(AcceptRefusal::Stale)));
        assert_eq!(steps(&store), 2, "a step let in on a registry that changed is not kept");
        // Not counted either: the one call a limit of one allows is still to be made.
        assert!(store.asop_step_add_counted(&step("call-4"), &count("mcp:other:ef", 1, now)).unwrap().is_ok());
        assert!(matches!(store.asop_step_add_counted(&step("call-5"), &count("mcp:other:ef", 1, now)).unwrap(), Err(AcceptRefusal::RateLimited { .. })));
        assert_eq!(steps(&store), 3);
    }
}
