//! Contacts are sealed like the rest of the deciding state: which keys are one person's,
//! and which of them the user verified, count only as the gate wrote them. A database
//! sealed before contacts were has them sealed once, as they are, when it is opened.

use gatehouse_store::{ChangeKind, InboxFilter, Policy, Sealer, Store, TrustEntry};
use sha2::{Digest, Sha256};

use crate::common::{refusal, Place};
use crate::on_both_engines;
use crate::sealed::{behind_its_back, open, TestSealer};

const ANA: &str = "a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2";
const MALLORY: &str = "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1";

fn entry(key: &str, name: &str) -> TrustEntry {
    let policy: Policy = serde_json::from_value(serde_json::json!({ "allowed_scopes": ["support"] })).unwrap();
    TrustEntry { door: "epp".into(), facts: Default::default(), public_key: key.into(), name: name.into(), added_at: "2026-11-29T10:00:00Z".into(), policy }
}

fn changes(store: &Store) -> Vec<(String, String, ChangeKind)> {
    let mut all: Vec<_> = store.state_check().unwrap().changes.into_iter().map(|c| (c.table, c.id, c.what)).collect();
    all.sort();
    all
}

/// Each row of a query, its columns as text, read straight from the database.
fn rows(place: &Place, sql: &str) -> Vec<Vec<String>> {
    match place {
        Place::Lite(dir) => {
            let c = rusqlite::Connection::open(dir.path().join("gatehouse.db")).unwrap();
            let mut stmt = c.prepare(sql).unwrap();
            let n = stmt.column_count();
            stmt.query_map([], |r| (0..n).map(|i| r.get::<_, String>(i)).collect()).unwrap().collect::<Result<_, _>>().unwrap()
        }
        Place::Pg(url) => {
            let db = url.rsplit('/').next().unwrap();
            let out = gatehouse_pg_testserver::Postgres::shared().unwrap().psql_in(db, &format!("COPY ({sql}) TO STDOUT")).unwrap();
            out.lines().filter(|l| !l.is_empty()).map(|l| l.split('\t').map(str::to_string).collect()).collect()
        }
    }
}

/// The database as a Gatehouse that did not seal contacts left it: no seal over the
/// contacts tables, no list of the sealed tables, and a head over the other seals.
fn as_sealed_before_contacts(place: &Place, sealer: &TestSealer) {
    let kept = rows(
        place,
        "SELECT tbl, id, CAST(version AS TEXT), hash FROM seals WHERE tbl NOT IN ('contacts', 'contact_keys') AND NOT (tbl = 'settings' AND id = 'sealed_tables') ORDER BY tbl, id",
    );
    let version: i64 = rows(place, "SELECT CAST(version AS TEXT) FROM seal_head")[0][0].parse().unwrap();
    let mut digest = Sha256::new();
    for r in &kept {
        digest.update(serde_json::to_vec(&(&r[0], &r[1], r[2].parse::<i64>().unwrap(), &r[3])).unwrap());
        digest.update(b"\n");
    }
    let digest = hex::encode(digest.finalize());
    let head = sealer.sign(&serde_json::to_vec(&("gatehouse-seal-head/1", version, kept.len() as i64, &digest)).unwrap());
    behind_its_back(
        place,
        &format!(
            "DELETE FROM seals WHERE tbl IN ('contacts', 'contact_keys') OR (tbl = 'settings' AND id = 'sealed_tables');
             DELETE FROM settings WHERE key = 'sealed_tables';
             UPDATE seal_head SET rows = {}, digest = '{digest}', signature = '{head}';",
            kept.len()
        ),
    );
}

on_both_engines! {
    /// A stranger's key joined to a friend's contact with SQL is not the friend's: not in
    /// their history, not renamed with them. A verified mark cleared with SQL cannot be
    /// told from one never made: the person's next new key is held all the same.
    fn a_key_joined_or_a_verification_cleared_beside_the_gate_counts_for_nothing(place) {
        let sealer = TestSealer::node();
        let store = open(&place, &sealer);
        store.trust_add(&entry(ANA, "Ana")).unwrap();
        store.trust_add(&entry(MALLORY, "Mallory")).unwrap();
        store.contact_key_verified(ANA, "2026-11-29T10:05:00Z").unwrap();
        let ana = store.contact_of(ANA).unwrap().unwrap();
        assert!(ana.verified() && ana.intact && store.holds_new_keys(ANA).unwrap());
        assert!(!store.holds_new_keys(MALLORY).unwrap(), "Mallory was never verified");
        assert!(store.state_check().unwrap().intact());
        store.record_receipts(&[refusal("from-ana", ANA), refusal("from-mallory", MALLORY)]).unwrap();

        behind_its_back(&place, &format!("UPDATE contact_keys SET contact_id = {} WHERE key = '{MALLORY}';", ana.id));
        let now = store.contact(ana.id).unwrap().unwrap();
        assert_eq!(now.keys.iter().map(|k| k.key.as_str()).collect::<Vec<_>>(), [ANA], "the key joined beside the gate is not Ana's");
        assert!(!now.intact);
        let history: Vec<String> = store.inbox(&InboxFilter { contact: Some(ana.id), ..Default::default() }).unwrap().into_iter().map(|i| i.receipt_id).collect();
        assert_eq!(history, ["from-ana"], "nor is what it sent");
        store.contact_rename(ana.id, "Ana B.").unwrap();
        assert_eq!(store.trust_get(MALLORY).unwrap().unwrap().name, "Mallory", "renaming Ana renames only her keys");
        assert_eq!(store.trust_get(ANA).unwrap().unwrap().name, "Ana B.");

        behind_its_back(&place, &format!("UPDATE contact_keys SET verified_at = NULL WHERE key = '{ANA}';"));
        assert!(store.holds_new_keys(ANA).unwrap(), "the mark taken out may have been there: her next key is held");
        assert_eq!(store.contact_of(ANA).unwrap(), None, "her key's row is not as the gate wrote it");
        assert_eq!(changes(&store), [("contact_keys".into(), ANA.into(), ChangeKind::Changed), ("contact_keys".into(), MALLORY.into(), ChangeKind::Changed)]);
        // Verified again by the user: sealed, and whole again for that key.
        store.contact_key_verified(ANA, "2026-11-29T11:00:00Z").unwrap();
        assert!(store.contact_of(ANA).unwrap().unwrap().verified());
        assert_eq!(changes(&store), [("contact_keys".into(), MALLORY.into(), ChangeKind::Changed)]);
    }
}

on_both_engines! {
    /// Opened by this release, a database sealed before contacts were has its contacts
    /// sealed once, as they were; after that, a contact row changed and the list of sealed
    /// tables taken out are reported, never sealed over.
    fn contacts_kept_before_they_were_sealed_are_sealed_once_when_opened(place) {
        let sealer = TestSealer::node();
        let store = open(&place, &sealer);
        store.trust_add(&entry(ANA, "Ana")).unwrap();
        store.contact_key_verified(ANA, "2026-11-29T10:05:00Z").unwrap();
        drop(store);
        as_sealed_before_contacts(&place, &sealer);
        let before = open(&place, &TestSealer::node()).state_check().unwrap();
        assert!(before.broken.is_none(), "{before:?}");

        let store = open(&place, &sealer);
        assert!(store.state_check().unwrap().intact(), "{:?}", store.state_check().unwrap());
        let ana = store.contact_of(ANA).unwrap().expect("Ana's contact, sealed as it was");
        assert!(ana.verified() && ana.intact);
        assert_eq!(rows(&place, "SELECT value FROM settings WHERE key = 'sealed_tables'").len(), 1);
        drop(store);

        behind_its_back(&place, &format!("UPDATE contact_keys SET verified_at = NULL WHERE key = '{ANA}'; DELETE FROM settings WHERE key = 'sealed_tables';"));
        let store = open(&place, &sealer);
        assert_eq!(
            changes(&store),
            [("contact_keys".into(), ANA.into(), ChangeKind::Changed), ("settings".into(), "sealed_tables".into(), ChangeKind::Removed)],
            "nothing was sealed over on opening"
        );
        assert!(store.holds_new_keys(ANA).unwrap());
    }
}
