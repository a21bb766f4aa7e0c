//! What only one door knows about a trust entry lives in that door's table, sealed like
//! the entry; entries a previous release kept with it in their policy are moved there,
//! and the move is sealed, on both engines.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_store::{EppFacts, Facts, Policy, Sealer, Store, TrustEntry, UampKey};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::Place;
use crate::on_both_engines;
use crate::sealed::{behind_its_back, open, TestSealer};

const EPP: &str = "1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e";
const DID: &str = "did:web:agents.example.com";
const PUT_IN: &str = "2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b";

/// One query's first column, read straight from the database.
fn raw(place: &Place, sql: &str) -> String {
    match place {
        Place::Lite(dir) => {
            let c = rusqlite::Connection::open(dir.path().join("gatehouse.db")).unwrap();
            c.query_row(sql, [], |r| r.get::<_, Option<String>>(0)).unwrap().unwrap_or_default()
        }
        Place::Pg(url) => {
            let db = url.rsplit('/').next().unwrap();
            gatehouse_pg_testserver::Postgres::shared().unwrap().psql_in(db, &format!("COPY ({sql}) TO STDOUT")).unwrap().trim().to_string()
        }
    }
}

/// The trust rows and their seals as the release before this one wrote them: the door's
/// facts inside the policy, no door recorded, each row's seal over its name, time and
/// policy, and one head over them all (`seal.rs`'s format then).
fn as_the_previous_release_left_it(place: &Place, sealer: &TestSealer, version: i64) {
    let rows = [
        (
            EPP,
            "Clinic",
            json!({"allowed_scopes": ["support"], "x-reply-endpoint": "https://clinic.example/epp/v1/submit",
            "x-mail-address": "agent@clinic.example", "x-capabilities": {"require": true, "allowed": {"actions": ["notify"]}}}),
        ),
        (DID, "Acme agent", json!({"allowed_scopes": ["ask"], "x-uamp-keys": [{"kid": "did:web:agents.example.com#k1", "jwk": {"kty": "OKP"}}]})),
    ];
    // (That release kept no list of the tables it sealed.)
    let mut sql = String::from("DELETE FROM seals; DELETE FROM seal_head; DELETE FROM trust; DELETE FROM settings WHERE key = 'sealed_tables';");
    let mut seals = BTreeMap::new();
    for (key, name, policy) in &rows {
        let policy = policy.to_string();
        let cols = vec![Some(name.to_string()), Some("2026-01-01T00:00:00Z".to_string()), Some(policy.clone())];
        let hash = hex::encode(Sha256::digest(serde_json::to_vec(&("trust", key, &cols)).unwrap()));
        let signature = sealer.sign(&serde_json::to_vec(&("gatehouse-seal/1", "trust", key, version, &hash)).unwrap());
        sql.push_str(&format!(
            "INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{key}', '{name}', '2026-01-01T00:00:00Z', '{policy}');
             INSERT INTO seals (tbl, id, version, hash, signer, signature) VALUES ('trust', '{key}', {version}, '{hash}', '{}', '{signature}');",
            sealer.signer()
        ));
        seals.insert(("trust".to_string(), key.to_string()), hash);
    }
    let mut digest = Sha256::new();
    for ((tbl, id), hash) in &seals {
        digest.update(serde_json::to_vec(&(tbl, id, version, hash)).unwrap());
        digest.update(b"\n");
    }
    let digest = hex::encode(digest.finalize());
    let head = sealer.sign(&serde_json::to_vec(&("gatehouse-seal-head/1", version, seals.len() as i64, &digest)).unwrap());
    sql.push_str(&format!(
        "INSERT INTO seal_head (version, rows, digest, signer, signature) VALUES ({version}, {}, '{digest}', '{}', '{head}');",
        seals.len(),
        sealer.signer()
    ));
    // And one row nobody sealed: put there outside Gatehouse, it must stay nobody's.
    sql.push_str(&format!(
        "INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{PUT_IN}', 'Mallory', '2026-01-01T00:00:00Z', '{}');",
        json!({"allowed_scopes": ["*"], "x-reply-endpoint": "https://mallory.example/epp/v1/submit"})
    ));
    behind_its_back(place, &sql);
}

on_both_engines! {
    /// An upgraded store: each sealed entry records its door and what only its door knows
    /// sits in that door's table, sealed; nothing else is made the gate's by the move.
    fn entries_kept_before_doors_kept_their_own_are_moved_to_their_doors_and_sealed(place) {
        let sealer = TestSealer::node();
        drop(open(&place, &sealer));
        as_the_previous_release_left_it(&place, &sealer, 5);
        let store = open(&place, &sealer);

        let clinic = store.trust_get(EPP).unwrap().expect("the clinic's sealed entry still lets it in");
        assert_eq!(clinic.door, "epp");
        let epp = clinic.facts.epp.clone().expect("what EPP knows about it moved with it");
        assert_eq!(epp.reply_endpoint.as_deref(), Some("https://clinic.example/epp/v1/submit"));
        assert_eq!(epp.mail_address.as_deref(), Some("agent@clinic.example"));
        assert_eq!(epp.capabilities.map(|c| (c.require, c.allowed)), Some((true, json!({"actions": ["notify"]}))));
        assert_eq!(clinic.policy.allowed_scopes, ["support"]);
        let acme = store.trust_get(DID).unwrap().expect("the agent's sealed entry still lets it in");
        assert_eq!((acme.door.as_str(), acme.facts.uamp_keys().len()), ("uamp", 1));
        assert_eq!(acme.facts.uamp_keys()[0].kid, "did:web:agents.example.com#k1");
        // The admission view reads the same, in one snapshot.
        let seen = store.admission(EPP, "executors").unwrap().trust.unwrap();
        assert_eq!(seen.facts.reply_endpoint(), Some("https://clinic.example/epp/v1/submit"));

        // The entries themselves no longer carry protocol words.
        for key in [EPP, DID] {
            let policy = raw(&place, &format!("SELECT policy FROM trust WHERE public_key = '{key}'"));
            assert!(!policy.contains("x-reply-endpoint") && !policy.contains("x-uamp-keys") && !policy.contains("x-capabilities"), "{policy}");
        }
        assert_eq!(raw(&place, &format!("SELECT reply_endpoint FROM epp_entries WHERE public_key = '{EPP}'")), "https://clinic.example/epp/v1/submit");

        // The move was sealed by the gate; the row put in outside it was not moved, lets
        // nobody in, and is reported.
        let report = store.state_check().unwrap();
        assert!(report.broken.is_none(), "{report:?}");
        assert_eq!(report.changes.len(), 1, "{report:?}");
        assert_eq!((report.changes[0].table.as_str(), report.changes[0].id.as_str()), ("trust", PUT_IN));
        assert!(store.trust_get(PUT_IN).unwrap().is_none());
        assert_eq!(raw(&place, &format!("SELECT door FROM trust WHERE public_key = '{PUT_IN}'")), if matches!(place, Place::Pg(_)) { "\\N" } else { "" });
        assert_eq!(raw(&place, &format!("SELECT CAST(count(*) AS TEXT) FROM epp_entries WHERE public_key = '{PUT_IN}'")), "0");
        // Opened again, nothing moves twice.
        drop(store);
        let again = open(&place, &sealer);
        assert_eq!(again.trust_get(EPP).unwrap().unwrap(), clinic);
        assert!(again.state_check().unwrap().changes.len() == 1);
    }
}

on_both_engines! {
    /// What a door keeps about an entry decides like the entry: changed or taken out
    /// behind the gate's back (a capability limit removed, a UAMP key swapped), the entry
    /// lets nobody in.
    fn a_door_fact_changed_outside_gatehouse_takes_its_entry_out(place) {
        let sealer = TestSealer::node();
        let store = open(&place, &sealer);
        let limit = gatehouse_store::CapabilityLimit { require: true, allowed: json!({"actions": ["notify"]}) };
        let entry = TrustEntry {
            public_key: EPP.into(),
            name: "Clinic".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            door: "epp".into(),
            policy: Policy { allowed_scopes: vec!["support".into()], ..Policy::default() },
            facts: Facts::epp(EppFacts { capabilities: Some(limit), ..EppFacts::default() }),
        };
        store.trust_add(&entry).unwrap();
        let agent = TrustEntry {
            public_key: DID.into(),
            name: "Acme".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            door: "uamp".into(),
            policy: Policy { allowed_scopes: vec!["ask".into()], ..Policy::default() },
            facts: Facts::uamp(vec![UampKey { kid: format!("{DID}#k1"), jwk: json!({"kty": "OKP", "x": "a"}) }]),
        };
        store.trust_add(&agent).unwrap();
        assert_eq!(store.trust_get(EPP).unwrap().as_ref(), Some(&entry));
        assert!(store.state_check().unwrap().intact());

        behind_its_back(&place, &format!("DELETE FROM epp_entries WHERE public_key = '{EPP}'"));
        behind_its_back(&place, &format!("UPDATE uamp_entries SET keys = '[]' WHERE public_key = '{DID}'"));
        assert!(store.trust_get(EPP).unwrap().is_none(), "a limit taken out must not open what it closed");
        assert!(store.admission(EPP, "executors").unwrap().trust.is_none());
        assert!(store.trust_get(DID).unwrap().is_none());
        let report = store.state_check().unwrap();
        let mut seen: Vec<(String, String)> = report.changes.iter().map(|c| (c.table.clone(), c.id.clone())).collect();
        seen.sort();
        assert_eq!(seen, [("epp_entries".to_string(), EPP.to_string()), ("uamp_entries".to_string(), DID.to_string())]);
    }
}

/// A store a previous release never sealed (opened without the gate's key first): moved
/// as it is, then sealed as moved.
#[test]
fn an_unsealed_store_from_before_is_moved_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gatehouse.db");
    {
        let old = gatehouse_store::create_at_schema(&path, 43).unwrap();
        let policy = json!({"allowed_scopes": ["support"], "x-reply-endpoint": "mailto:agent@clinic.example"});
        old.execute("INSERT INTO trust (public_key, name, added_at, policy) VALUES (?1, 'Clinic', 't', ?2)", rusqlite::params![EPP, policy.to_string()])
            .unwrap();
        // One that never read: it must not keep the store from opening.
        old.execute("INSERT INTO trust (public_key, name, added_at, policy) VALUES (?1, 'Broken', 't', '{\"x-capabilities\": 7')", rusqlite::params![PUT_IN])
            .unwrap();
    }
    let store = Store::open(&path).unwrap().with_sealer(TestSealer::node() as Arc<dyn Sealer>).unwrap();
    let clinic = store.trust_get(EPP).unwrap().unwrap();
    assert_eq!((clinic.door.as_str(), clinic.facts.mail_to().as_deref()), ("epp", Some("agent@clinic.example")));
    assert!(store.trust_get(PUT_IN).is_err(), "the broken row is left as it was, and still does not read");
    assert!(store.state_check().unwrap().intact(), "what was moved is sealed");
}

on_both_engines! {
    /// The runner's one small read per envelope: the entry's name, only from a row as the
    /// gate sealed it.
    fn a_senders_name_is_read_from_its_sealed_row_only(place) {
        let store = open(&place, &TestSealer::node());
        let entry = TrustEntry {
            public_key: EPP.into(),
            name: "Clinic".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            door: "epp".into(),
            policy: Policy { allowed_scopes: vec!["support".into()], ..Policy::default() },
            facts: Facts::default(),
        };
        store.trust_add(&entry).unwrap();
        assert_eq!(store.trust_name(EPP).unwrap().as_deref(), Some("Clinic"));
        assert_eq!(store.trust_name(PUT_IN).unwrap(), None);
        behind_its_back(&place, &format!("UPDATE trust SET name = 'Your bank' WHERE public_key = '{EPP}'"));
        assert_eq!(store.trust_name(EPP).unwrap(), None, "a name changed outside Gatehouse is not shown as the user's");
    }
}
