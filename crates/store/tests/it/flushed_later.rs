//! A guardian step recorded without waiting for the disk (an MCP call's record, flushed
//! while its server works): read at once, and on disk once its `Durable` says so.

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
