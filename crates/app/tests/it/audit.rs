//! The audit log no one can quietly edit: one row changed, deleted or moved, the log
//! rewritten with fresh hashes, or its end cut off — in the live store (SQLite, or the
//! team's PostgreSQL with GATEHOUSE_TEST_STORE=postgres) or in an export — is found, and
//! the check names the first entry that does not fit.

use crate::common::{behind_the_gates_back, test_store};
use gatehouse_app::audit;
use gatehouse_store::{audit_entry_hash, Store};
use serde_json::json;

struct Log {
    dir: tempfile::TempDir,
    store: std::sync::Arc<Store>,
    key: ed25519_dalek::SigningKey,
    public: String,
}

/// Six decisions, signed by a checkpoint.
fn log() -> Log {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(test_store(dir.path()));
    let key = gatehouse_epp::generate_signing_key();
    let public = gatehouse_epp::public_key_hex(&key);
    for i in 1..=6 {
        store
            .audit("trust.add", Some(&format!("key-{i}")), &json!({"name": format!("sender {i}"), "scopes": ["read"]}), &format!("2026-11-26T10:00:0{i}Z"))
            .unwrap();
    }
    assert!(audit::checkpoint(&store, &key, None).unwrap().is_some());
    assert!(audit::checkpoint(&store, &key, None).unwrap().is_none(), "nothing new to sign");
    Log { dir, store, key, public }
}

impl Log {
    fn problem(&self) -> (i64, String) {
        let v = audit::verify_live(&self.store, &self.public, None).unwrap();
        assert!(!v.intact, "{v:?}");
        let p = v.problem.unwrap();
        (p.entry, p.reason)
    }
}

#[test]
fn an_untouched_log_and_its_export_verify() {
    let l = log();
    let v = audit::verify_live(&l.store, &l.public, None).unwrap();
    assert!(v.intact, "{v:?}");
    assert_eq!((v.entries, v.first_id, v.last_id, v.signed_through, v.checkpoints_checked), (6, Some(1), Some(6), Some(6), 1));
    // A seventh, not yet signed: still intact, and said to be unsigned.
    l.store.audit("trust.block", Some("key-7"), &json!({}), "2026-11-26T10:01:00Z").unwrap();
    let v = audit::verify_live(&l.store, &l.public, None).unwrap();
    assert!(v.intact && v.signed_through == Some(6) && v.last_id == Some(7), "{v:?}");
    // An export signs what it carries first.
    let export = serde_json::to_string(&audit::export(&l.store, &l.key).unwrap()).unwrap();
    let v = audit::verify_export(&export, &l.public).unwrap();
    assert!(v.intact && v.signed_through == Some(7) && v.checkpoints_checked == 2, "{v:?}");
}

#[test]
fn one_row_changed_is_found() {
    let l = log();
    behind_the_gates_back(l.dir.path(), r#"UPDATE audit SET detail = '{"name":"mallory","scopes":["*"]}' WHERE id = 3"#);
    let (entry, reason) = l.problem();
    assert_eq!(entry, 3, "{reason}");
    assert!(reason.contains("changed after it was written"), "{reason}");
}

#[test]
fn one_row_deleted_is_found() {
    let l = log();
    behind_the_gates_back(l.dir.path(), "DELETE FROM audit WHERE id = 4");
    let (entry, reason) = l.problem();
    assert_eq!(entry, 4, "{reason}");
    assert!(reason.contains("missing"), "{reason}");
}

#[test]
fn two_rows_swapped_are_found() {
    let l = log();
    behind_the_gates_back(
        l.dir.path(),
        "UPDATE audit SET id = -id WHERE id IN (2, 3); UPDATE audit SET id = 3 WHERE id = -2; UPDATE audit SET id = 2 WHERE id = -3;",
    );
    assert_eq!(l.problem().0, 2);
}

#[test]
fn the_first_row_deleted_is_found() {
    let l = log();
    behind_the_gates_back(l.dir.path(), "DELETE FROM audit WHERE id = 1");
    let (entry, reason) = l.problem();
    assert_eq!(entry, 2, "{reason}");
    assert!(reason.contains("before #2 are missing"), "{reason}");
}

#[test]
fn the_last_rows_cut_off_are_found_even_with_the_head_moved_back() {
    let l = log();
    let fifth = &l.store.audit_chain(4, 1).unwrap()[0];
    behind_the_gates_back(l.dir.path(), &format!("DELETE FROM audit WHERE id >= 5; UPDATE audit_head SET id = 4, hash = '{}'", fifth.prev_hash));
    let (entry, reason) = l.problem();
    assert_eq!(entry, 5, "{reason}");
    assert!(reason.contains("signed the log up to #6"), "{reason}");
}

/// SQL that rewrites entry `at` (index in the log) to let mallory in and chains every
/// entry after it again, head included: what anyone with the database can do.
fn rewritten(l: &Log, at: usize) -> String {
    let mut entries = l.store.audit_chain(0, 100).unwrap();
    entries[at].detail = json!({"name": "mallory", "scopes": ["*"]});
    let mut sql = String::new();
    for i in at..entries.len() {
        let prev = entries[i - 1].hash.clone();
        let e = &mut entries[i];
        e.prev_hash = prev;
        e.hash = audit_entry_hash(e.id, &e.at, &e.action, e.subject.as_deref(), &e.detail.to_string(), &e.prev_hash);
        sql += &format!("UPDATE audit SET detail = '{}', prev_hash = '{}', hash = '{}' WHERE id = {};", e.detail, e.prev_hash, e.hash, e.id);
    }
    sql + &format!("UPDATE audit_head SET hash = '{}';", entries.last().unwrap().hash)
}

/// Hashes are no secret: whoever rewrites an entry can chain the rest again. The gate's
/// signature on the checkpoint is what they cannot remake.
#[test]
fn a_rewrite_with_every_hash_recomputed_is_found_by_the_signed_checkpoint() {
    let l = log();
    behind_the_gates_back(l.dir.path(), &rewritten(&l, 2));
    let (entry, reason) = l.problem();
    assert_eq!(entry, 6, "the signed entry no longer matches: {reason}");
    assert!(reason.contains("rewritten"), "{reason}");
    // The gate does not sign the rewritten log.
    let e = audit::checkpoint(&l.store, &l.key, None).unwrap_err();
    assert!(e.code == gatehouse_app::Code::Changed && e.message.contains("rewritten"), "{e:?}");
    // And a checkpoint forged with another key is not the gate's.
    let mallory = gatehouse_epp::generate_signing_key();
    let head = l.store.audit_head().unwrap();
    l.store
        .audit_checkpoint_add(&gatehouse_store::AuditCheckpoint {
            at: "2026-11-26T11:00:00Z".into(),
            through_id: head.0,
            hash: head.1,
            public_key: gatehouse_epp::public_key_hex(&mallory),
            signature: "00".repeat(64),
        })
        .unwrap();
    let v = audit::verify_live(&l.store, &l.public, None).unwrap();
    assert!(!v.intact && v.signed_through.is_none(), "{v:?}");
}

#[test]
fn an_edited_export_is_found_and_the_key_is_the_readers() {
    let l = log();
    let export = serde_json::to_string(&audit::export(&l.store, &l.key).unwrap()).unwrap();
    let edited = export.replace("sender 4", "sender X");
    assert_ne!(edited, export);
    let v = audit::verify_export(&edited, &l.public).unwrap();
    assert_eq!(v.problem.unwrap().entry, 4);
    // Checked against another gate's key, nothing of it is signed.
    let other = gatehouse_epp::public_key_hex(&gatehouse_epp::generate_signing_key());
    let v = audit::verify_export(&export, &other).unwrap();
    assert!(!v.intact && v.problem.as_ref().unwrap().reason.contains("not signed by the gate's key"), "{v:?}");
    assert!(audit::verify_export("[]", &l.public).is_err(), "an array is not an audit export");
}

#[test]
fn retention_drops_the_oldest_and_the_log_still_verifies() {
    let l = log();
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-26T12:00:00Z").unwrap().timestamp_millis();
    l.store.audit("settings.retention", None, &json!({}), "2026-11-26T11:59:00Z").unwrap();
    // The first three made old (as if written in January), so thirty days' retention drops them.
    behind_the_gates_back(l.dir.path(), "UPDATE audit SET at = '2026-01-01T00:00:00Z' WHERE id <= 3");
    // (Their hashes no longer fit the changed times: the check says so, naming #1.)
    assert_eq!(l.problem().0, 1);
    let pruned = l.store.prune(now, &gatehouse_store::Retention { rejected_body_days: 0, rejected_receipt_days: 0, audit_days: 30, steps_days: 0 }).unwrap();
    assert_eq!(pruned.audit_removed, 3);
    let v = audit::verify_live(&l.store, &l.public, None).unwrap();
    assert!(v.intact, "the dropped entries are accounted for by the pruning entry: {v:?}");
    assert_eq!((v.first_id, v.last_id), (Some(4), Some(8)));
    audit::checkpoint(&l.store, &l.key, None).unwrap();
    let export = serde_json::to_string(&audit::export(&l.store, &l.key).unwrap()).unwrap();
    assert!(audit::verify_export(&export, &l.public).unwrap().intact);
}

/// A log rewound by someone with the database alone — its end cut and its head moved back
/// with the newer checkpoints deleted, every hash rewritten and every checkpoint deleted,
/// or the log and its checkpoints emptied — verifies against what the database holds;
/// this machine kept the newest checkpoint it signed, out of the database's reach, so the
/// check finds each, and the gate will not sign the rewound head.
#[test]
fn a_log_rewound_with_its_checkpoints_is_found_by_the_checkpoint_this_machine_kept() {
    type Rewind = fn(&Log) -> String;
    let attacks: [(&str, Rewind); 3] = [
        ("the tail cut, the head moved back, the newer checkpoints deleted", |l| {
            let seventh = &l.store.audit_chain(6, 1).unwrap()[0];
            format!(
                "DELETE FROM audit WHERE id >= 7; UPDATE audit_head SET id = 6, hash = '{}'; DELETE FROM audit_checkpoints WHERE through_id >= 7",
                seventh.prev_hash
            )
        }),
        ("every hash rewritten, every checkpoint deleted", |l| format!("DELETE FROM audit_checkpoints;{}", rewritten(l, 1))),
        ("the log and its checkpoints emptied", |_| {
            format!("DELETE FROM audit; DELETE FROM audit_checkpoints; UPDATE audit_head SET id = 0, hash = '{}'", gatehouse_store::AUDIT_GENESIS)
        }),
    ];
    for (attack, sql) in attacks {
        let l = log();
        let here = tempfile::tempdir().unwrap();
        for i in 7..=8 {
            l.store.audit("trust.block", Some(&format!("key-{i}")), &json!({}), &format!("2026-11-26T10:02:0{i}Z")).unwrap();
        }
        assert!(audit::checkpoint_here(&gatehouse_app::Context::with_store(here.path().to_path_buf(), l.key.clone(), l.store.clone())).unwrap().is_some());
        let kept = gatehouse_app::witness::load(here.path()).unwrap().expect("the checkpoint is kept");
        assert_eq!(kept.through_id, 8);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(here.path().join(gatehouse_app::witness::FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }

        behind_the_gates_back(l.dir.path(), &sql(&l));
        let db_alone = audit::verify_live(&l.store, &l.public, None).unwrap();
        assert!(db_alone.intact, "{attack}: the database alone cannot tell (as before): {db_alone:?}");
        let v = audit::verify_live(&l.store, &l.public, Some(&kept)).unwrap();
        assert!(!v.intact, "{attack}: found with the kept checkpoint: {v:?}");
        let reason = v.problem.unwrap().reason;
        assert!(reason.contains("removed") || reason.contains("rewritten"), "{attack}: {reason}");
        let e = audit::checkpoint_here(&gatehouse_app::Context::with_store(here.path().to_path_buf(), l.key.clone(), l.store.clone())).unwrap_err();
        assert_eq!(e.code, gatehouse_app::Code::Changed, "{attack}: the rewound head is not signed: {e:?}");
        assert_eq!(gatehouse_app::witness::load(here.path()).unwrap().unwrap().through_id, 8, "{attack}: the kept checkpoint stays");
    }
}

/// The gate keeps appending while a check reads the log (a node's /ready, a device
/// handing in its checkpoint): an entry appended meanwhile is never taken for entries cut
/// from the end.
#[test]
fn a_check_made_while_entries_are_appended_finds_the_log_intact() {
    let l = log();
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let appender = {
        let (store, writing) = (l.store.clone(), writing.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while writing.load(std::sync::atomic::Ordering::Relaxed) && n < 5_000 {
                store.audit("approver.seen", Some("phone"), &json!({"n": n}), "2026-11-26T10:02:00Z").unwrap();
                n += 1;
            }
        })
    };
    for _ in 0..200 {
        let v = audit::verify_live(&l.store, &l.public, None).unwrap();
        assert!(v.intact, "{v:?}");
    }
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    appender.join().unwrap();
}
