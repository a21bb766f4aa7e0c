//! The deciding state, sealed: what someone with only the database can no longer do.
//! Each test writes through the store (sealed by the gate's key), then changes the database
//! behind its back as a DBA, a leaked URL or a restored backup would, and checks what the
//! gate acts on and what it reports.

use std::sync::{Arc, Mutex};

use gatehouse_store::{ChangeKind, Policy, Sealer, Store, StoreError, TrustEntry};
use sha2::{Digest, Sha256};

use crate::common::{refusal, Place};
use crate::on_both_engines;

/// A sealer for the store's own tests: a keyed hash stands in for the gate's Ed25519 key
/// (the app's `GateSealer` is tested with the real one). Nodes of one gate share the key
/// and each keeps its own witness.
pub(crate) struct TestSealer {
    key: &'static str,
    kept: Mutex<Option<i64>>,
}

impl TestSealer {
    pub(crate) fn node() -> Arc<TestSealer> {
        Arc::new(TestSealer { key: "the gate's key", kept: Mutex::new(None) })
    }
}

impl Sealer for TestSealer {
    fn signer(&self) -> String {
        format!("{:x}", Sha256::digest(self.key))
    }
    fn sign(&self, message: &[u8]) -> String {
        format!("{:x}", Sha256::new().chain_update(self.key).chain_update(message).finalize())
    }
    fn verify(&self, message: &[u8], signature: &str) -> bool {
        self.sign(message) == signature
    }
    fn kept(&self) -> Option<i64> {
        *self.kept.lock().unwrap()
    }
    fn keep(&self, version: i64) {
        let mut k = self.kept.lock().unwrap();
        *k = Some(k.unwrap_or(0).max(version));
    }
}

pub(crate) fn open(place: &Place, sealer: &Arc<TestSealer>) -> Store {
    place.open().with_sealer(sealer.clone()).unwrap()
}

/// SQL run straight on the database, outside Gatehouse.
pub(crate) fn behind_its_back(place: &Place, sql: &str) {
    match place {
        Place::Lite(dir) => rusqlite::Connection::open(dir.path().join("gatehouse.db")).unwrap().execute_batch(sql).unwrap(),
        Place::Pg(url) => {
            let db = url.rsplit('/').next().unwrap();
            gatehouse_pg_testserver::Postgres::shared().unwrap().psql_in(db, sql).unwrap();
        }
    }
}

/// One value read straight from the database.
fn read_back(place: &Place, sql: &str) -> String {
    match place {
        Place::Lite(dir) => rusqlite::Connection::open(dir.path().join("gatehouse.db")).unwrap().query_row(sql, [], |r| r.get::<_, String>(0)).unwrap(),
        Place::Pg(url) => {
            let db = url.rsplit('/').next().unwrap();
            gatehouse_pg_testserver::Postgres::shared().unwrap().psql_in(db, sql).unwrap()
        }
    }
}

const ANA: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const MALLORY: &str = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";

fn entry(key: &str, scopes: &[&str]) -> TrustEntry {
    let policy: Policy = serde_json::from_value(serde_json::json!({ "allowed_scopes": scopes })).unwrap();
    TrustEntry { door: "epp".into(), facts: Default::default(), public_key: key.into(), name: "Ana".into(), added_at: "2026-11-28T10:00:00Z".into(), policy }
}

fn changes(store: &Store) -> Vec<(String, String, ChangeKind)> {
    store.state_check().unwrap().changes.into_iter().map(|c| (c.table, c.id, c.what)).collect()
}

on_both_engines! {
    /// The attack of issue 56: a trust row INSERTed with psql for one's own key, a
    /// setting UPDATEd to run a program. Neither is acted on; both are reported.
    fn rows_written_outside_gatehouse_let_nobody_in_and_run_nothing(place) {
        let sealer = TestSealer::node();
        let store = open(&place, &sealer);
        store.trust_add(&entry(ANA, &["support"])).unwrap();
        store.set_setting("executors", &serde_json::json!({"default": "noop"})).unwrap();
        assert!(store.state_check().unwrap().intact());
        behind_its_back(
            &place,
            &format!(
                "INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{MALLORY}', 'me', '2026-11-28T10:00:00Z', '{{\"allowed_scopes\":[\"support\"]}}');
                 UPDATE settings SET value = '{{\"default\": {{\"command\": [\"/bin/sh\", \"-c\", \"touch /tmp/owned\"]}}}}' WHERE key = 'executors';"
            ),
        );
        let view = store.admission(MALLORY, "executors").unwrap();
        assert!(view.trust.is_none(), "a trust row nobody sealed lets nobody in");
        assert_eq!(view.setting, None, "an executor setting nobody sealed runs nothing: its default");
        assert!(store.trust_get(MALLORY).unwrap().is_none());
        assert_eq!(store.trust_list().unwrap().iter().map(|t| t.public_key.as_str()).collect::<Vec<_>>(), [ANA]);
        assert!(store.admission(ANA, "").unwrap().trust.is_some(), "what the gate sealed still holds");
        assert_eq!(
            changes(&store),
            [("settings".into(), "executors".into(), ChangeKind::Changed), ("trust".into(), MALLORY.into(), ChangeKind::Added)]
        );
        // Another node of the same gate, started after, sees the same.
        let other = open(&place, &TestSealer::node());
        assert!(other.admission(MALLORY, "").unwrap().trust.is_none());
        // The user's own entry for that key replaces the one put there, and is sealed.
        store.trust_add(&entry(MALLORY, &["billing"])).unwrap();
        assert_eq!(store.trust_get(MALLORY).unwrap().unwrap().policy.allowed_scopes, ["billing"]);
    }
}

on_both_engines! {
    /// A revocation or a block DELETEd with psql still keeps its key out (a revocation
    /// undone by a backup is the issue's example), and the hole is reported.
    fn a_block_or_revocation_taken_out_still_holds(place) {
        let store = open(&place, &TestSealer::node());
        store.trust_add(&entry(ANA, &["support"])).unwrap();
        store.revoke(ANA, "lost laptop", "2026-11-28T10:00:00Z").unwrap();
        store.block(MALLORY, "spam", "2026-11-28T10:00:00Z").unwrap();
        behind_its_back(&place, "DELETE FROM revoked; DELETE FROM blocked;");
        let view = store.admission(ANA, "").unwrap();
        assert!(view.revoked.as_deref().is_some_and(|r| r.contains("outside Gatehouse")), "{:?}", view.revoked);
        assert!(store.admission(MALLORY, "").unwrap().blocked);
        assert!(store.is_blocked(MALLORY).unwrap());
        let mut found = changes(&store);
        found.sort();
        assert_eq!(found, [("blocked".into(), MALLORY.into(), ChangeKind::Removed), ("revoked".into(), ANA.into(), ChangeKind::Removed)]);
    }
}

on_both_engines! {
    /// An older signed row put back over a newer one (seal and all): the head no longer
    /// covers it, nothing sealed is acted on, and no change is made until an operator
    /// accepts the state as it is.
    fn an_older_signed_row_put_back_is_refused(place) {
        let store = open(&place, &TestSealer::node());
        store.trust_add(&entry(ANA, &["support", "billing", "admin"])).unwrap();
        let old_policy = read_back(&place, "SELECT policy FROM trust");
        let old_seal = read_back(&place, "SELECT version || ' ' || hash || ' ' || signature FROM seals WHERE tbl = 'trust'");
        store.trust_update(ANA, None, &entry(ANA, &["support"]).policy, None).unwrap();
        let parts: Vec<&str> = old_seal.split(' ').collect();
        behind_its_back(
            &place,
            &format!(
                "UPDATE trust SET policy = '{old_policy}'; UPDATE seals SET version = {}, hash = '{}', signature = '{}' WHERE tbl = 'trust';",
                parts[0], parts[1], parts[2]
            ),
        );
        let report = store.state_check().unwrap();
        assert!(report.broken.as_deref().is_some_and(|b| b.contains("taken out or put back")), "{report:?}");
        assert!(store.admission(ANA, "").unwrap().trust.is_none(), "the broader old grant is not acted on");
        let refused = store.trust_add(&entry(MALLORY, &["support"]));
        assert!(matches!(refused, Err(StoreError::StateChanged(_))), "{refused:?}");
        // The operator, having read the report, takes the state as it is.
        assert!(store.state_accept().unwrap().intact());
        assert_eq!(store.admission(ANA, "").unwrap().trust.unwrap().policy.allowed_scopes, ["support", "billing", "admin"]);
    }
}

on_both_engines! {
    /// The whole deciding state put back to an older copy, every seal and the head with
    /// it (a restored backup): consistent in itself, refused by a machine that saw a newer
    /// head; emptied with its seals: refused too, not sealed anew.
    fn a_whole_older_copy_or_an_emptied_one_is_refused_where_a_newer_was_seen(place) {
        let sealer = TestSealer::node();
        let store = open(&place, &sealer);
        store.trust_add(&entry(ANA, &["support"])).unwrap();
        let backup = [
            read_back(&place, "SELECT public_key || '|' || name || '|' || added_at || '|' || policy FROM trust"),
            read_back(&place, "SELECT version || '|' || hash || '|' || signature FROM seals"),
            read_back(&place, "SELECT version || '|' || rows || '|' || digest || '|' || signer || '|' || signature FROM seal_head"),
        ];
        store.revoke(ANA, "lost laptop", "2026-11-28T10:00:00Z").unwrap();
        let t: Vec<&str> = backup[0].split('|').collect();
        let s: Vec<&str> = backup[1].split('|').collect();
        let h: Vec<&str> = backup[2].split('|').collect();
        behind_its_back(
            &place,
            &format!(
                "DELETE FROM revoked; DELETE FROM trust; DELETE FROM seals; DELETE FROM seal_head;
                 INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{}', '{}', '{}', '{}');
                 INSERT INTO seals (tbl, id, version, hash, signer, signature) VALUES ('trust', '{ANA}', {}, '{}', '{}', '{}');
                 INSERT INTO seal_head (version, rows, digest, signer, signature) VALUES ({}, {}, '{}', '{}', '{}');",
                t[0], t[1], t[2], t[3], s[0], s[1], sealer.signer(), s[2], h[0], h[1], h[2], h[3], h[4]
            ),
        );
        let report = store.state_check().unwrap();
        assert!(report.broken.as_deref().is_some_and(|b| b.contains("older copy")), "{report:?}");
        assert!(store.admission(ANA, "").unwrap().trust.is_none(), "the revoked key's old trust is not acted on");
        // A node started again on the same data dir (the same witness) says the same.
        let again = open(&place, &sealer);
        assert!(again.state_check().unwrap().broken.is_some());
        // Emptied, seals and head gone: not sealed anew as if it were a new database.
        behind_its_back(&place, "DELETE FROM trust; DELETE FROM seals; DELETE FROM seal_head;");
        let again = open(&place, &sealer);
        let report = again.state_check().unwrap();
        assert!(report.broken.as_deref().is_some_and(|b| b.contains("gone")), "{report:?}");
    }
}

on_both_engines! {
    /// An approver device, a mail address for its notices, an invitation: rows put in
    /// outside Gatehouse enrol nobody, count no vote and are told nothing.
    fn approvers_and_invitations_put_in_outside_gatehouse_count_for_nothing(place) {
        let store = open(&place, &TestSealer::node());
        store.approver_invite_add(&"11".repeat(32), "Ana's phone", "2026-11-28T10:00:00Z", 4_000_000_000_000, "https://gate.example/approve").unwrap();
        behind_its_back(
            &place,
            &format!(
                "INSERT INTO approvers (id, name, public_key, added_at) VALUES ('forged', 'Ana''s phone', 'BXYZ', '2026-11-28T10:00:00Z');
                 INSERT INTO approver_mail (approver_id, email, per_hour) VALUES ('forged', 'mallory@example.org', 60);
                 INSERT INTO approver_invites (code_sha256, name, created_at, expires_ms) VALUES ('{}', 'x', '2026-11-28T10:00:00Z', 4000000000000);",
                "22".repeat(32)
            ),
        );
        assert!(store.approver("forged").unwrap().is_none());
        assert!(store.approvers().unwrap().is_empty());
        assert!(store.approver_mails().unwrap().is_empty(), "no notice goes to an address put in outside Gatehouse");
        assert!(store.approver_invite_open(&"11".repeat(32), 1_800_000_000_000).unwrap());
        assert!(!store.approver_invite_open(&"22".repeat(32), 1_800_000_000_000).unwrap(), "an invitation put in enrols nobody");
        let ballot = gatehouse_store::quorum::Ballot { item: "k", digest: "d", approver: "forged", decision: "allow", needed: 1, ends: false, proof: "" };
        let vote = store.quorum_vote(&ballot, "2026-11-28T10:00:00Z", &|_| true).unwrap();
        assert!(matches!(vote, gatehouse_store::quorum::Vote::Counted { agreeing: 0 }), "{vote:?}");
    }
}

on_both_engines! {
    /// A quorum rule lowered or taken out outside Gatehouse is an error, not a rule less.
    fn a_quorum_rule_changed_outside_gatehouse_stops_decisions(place) {
        let store = open(&place, &TestSealer::node());
        let rule = gatehouse_store::quorum::QuorumRule {
            id: 0,
            scope: None,
            sender: None,
            need: 2,
            approvers: vec!["a".into(), "b".into()],
            deny_ends: false,
            created_at: "2026-11-28T10:00:00Z".into(),
        };
        store.quorum_rule_add(&rule).unwrap();
        assert_eq!(store.quorum_rules().unwrap().len(), 1);
        behind_its_back(&place, "UPDATE quorum_rules SET need = 1");
        assert!(matches!(store.quorum_rules(), Err(StoreError::StateChanged(_))));
        behind_its_back(&place, "DELETE FROM quorum_rules");
        assert!(matches!(store.quorum_rules(), Err(StoreError::StateChanged(_))));
    }
}

on_both_engines! {
    /// What only counts (a flood's tally) is written without a seal, and read as it is.
    fn settings_that_only_count_are_not_sealed(place) {
        let store = open(&place, &TestSealer::node());
        behind_its_back(&place, "INSERT INTO settings (key, value) VALUES ('flood', '{\"n\": 3}')");
        assert_eq!(store.setting::<serde_json::Value>("flood").unwrap(), Some(serde_json::json!({"n": 3})));
        assert!(store.state_check().unwrap().intact());
    }
}

on_both_engines! {
    /// A seal's own signature changed: reads rest on the head (which still covers the
    /// seal's content), the audit's check verifies each seal and says so, and from then
    /// on nothing sealed is acted on.
    fn a_seals_signature_changed_is_found_by_the_check(place) {
        let store = open(&place, &TestSealer::node());
        store.trust_add(&entry(ANA, &["support"])).unwrap();
        behind_its_back(&place, "UPDATE seals SET signature = 'ab' || signature WHERE tbl = 'trust'");
        let report = store.state_check().unwrap();
        assert!(report.broken.as_deref().is_some_and(|b| b.contains("does not verify")), "{report:?}");
        assert!(store.admission(ANA, "").unwrap().trust.is_none());
    }
}

on_both_engines! {
    /// A UAMP bearer token's hash or a guardian rule put in outside Gatehouse: the token
    /// lets nobody in, the rule lets no agent act without asking.
    fn a_token_or_a_guardian_rule_put_in_outside_gatehouse_counts_for_nothing(place) {
        let store = open(&place, &TestSealer::node());
        store.trust_add(&entry(ANA, &["support"])).unwrap();
        store.uamp_token_add(&"aa".repeat(32), ANA, "2026-11-28T10:00:00Z").unwrap();
        assert_eq!(store.uamp_token_sender(&"aa".repeat(32)).unwrap().as_deref(), Some(ANA));
        behind_its_back(
            &place,
            &format!(
                "INSERT INTO uamp_tokens (token_sha256, sender, created_at) VALUES ('{}', '{ANA}', '2026-11-28T10:00:00Z');
                 INSERT INTO asop_rules (agent, method, tool, action, source, created_at) VALUES ('*', '*', '*', 'allow', 'user', '2026-11-28T10:00:00Z');",
                "bb".repeat(32)
            ),
        );
        assert_eq!(store.uamp_token_sender(&"bb".repeat(32)).unwrap(), None);
        assert!(store.asop_rules().unwrap().is_empty());
        let mut found = changes(&store);
        found.sort();
        assert_eq!(found.iter().map(|c| (c.0.as_str(), c.2)).collect::<Vec<_>>(), [("asop_rules", ChangeKind::Added), ("uamp_tokens", ChangeKind::Added)]);
        // Revoking the sender's tokens with Gatehouse takes both out, sealed.
        assert_eq!(store.uamp_tokens_revoke(ANA).unwrap(), 2);
        assert_eq!(changes(&store).len(), 1);
    }
}

on_both_engines! {
    /// An MCP tool pinned with Gatehouse is the user's; one pinned, or changed, outside it
    /// pins nothing (the tool stays held), and an offer the user never saw is pinned only
    /// as it was when they saw it.
    fn an_mcp_pin_put_in_or_changed_outside_gatehouse_pins_nothing(place) {
        let store = open(&place, &TestSealer::node());
        let server = format!("mcp:files:{}", "ab".repeat(32));
        let tool = |name: &str, digest: &str| (name.to_string(), format!(r#"{{"name":"{name}","description":"{digest}"}}"#), digest.to_string());
        store.mcp_offer(&server, &[tool("read", "d1"), tool("send", "d2")], "2026-11-29T00:00:00Z").unwrap();
        // Accepted as seen (read at d1; send at a digest it no longer has): only read.
        let n = store.mcp_accept(&server, &[("read".into(), "d1".into()), ("send".into(), "d-old".into())], "2026-11-29T00:01:00Z").unwrap();
        assert_eq!(n, 1);
        let pinned = |s: &gatehouse_store::Store| s.mcp_pins(&server).unwrap().into_iter().map(|p| (p.tool, p.digest)).collect::<Vec<_>>();
        assert_eq!(pinned(&store), [("read".to_string(), "d1".to_string())]);
        // A call's check reads one tool: pinned as seen, or not pinned; offered otherwise;
        // and the server's name, in the same snapshot.
        let one = |s: &gatehouse_store::Store, t: &str| s.mcp_call(&server, t).unwrap().pin.map(|p| (p.digest, p.pin["name"].clone()));
        assert_eq!(one(&store, "read"), Some(("d1".to_string(), serde_json::json!("read"))));
        assert_eq!(one(&store, "send"), None);
        let (send, read) = (store.mcp_call(&server, "send").unwrap(), store.mcp_call(&server, "read").unwrap());
        assert_eq!((send.offered, read.offered, read.name.clone()), (true, false, None), "the tool listed otherwise is offered; no entry, no name");
        let policy = gatehouse_store::Policy { allowed_scopes: vec!["mcp".into()], ..Default::default() };
        let files = gatehouse_store::TrustEntry { door: "mcp".into(), facts: Default::default(), public_key: server.clone(), name: "Files".into(), added_at: "2026-11-29T00:02:00Z".into(), policy };
        store.trust_add(&files).unwrap();
        assert_eq!(store.mcp_call(&server, "read").unwrap().name.as_deref(), Some("Files"));
        // Another server's pins are not this one's.
        assert!(store.mcp_call(&format!("mcp:other:{}", "cd".repeat(32)), "read").unwrap().pin.is_none());
        assert_eq!(store.mcp_offers(Some(&server)).unwrap().iter().map(|o| o.tool.as_str()).collect::<Vec<_>>(), ["send"]);
        behind_its_back(
            &place,
            &format!(
                "INSERT INTO mcp_pins (id, server, tool, pin, digest, at) VALUES ('{server}\nsend', '{server}', 'send', '{{}}', 'd2', 'x');
                 UPDATE mcp_pins SET digest = 'd9' WHERE tool = 'read';"
            ),
        );
        assert!(pinned(&store).is_empty(), "neither the pin put in nor the one changed is taken");
        assert_eq!(store.mcp_call(&server, "read").unwrap().name.as_deref(), Some("Files"), "the entry's own row still stands");
        assert_eq!((one(&store, "read"), one(&store, "send")), (None, None), "a call of either is held");
        let mut found = changes(&store);
        found.sort();
        assert_eq!(found.iter().map(|c| (c.0.as_str(), c.2)).collect::<Vec<_>>(), [("mcp_pins", ChangeKind::Changed), ("mcp_pins", ChangeKind::Added)]);
    }
}

on_both_engines! {
    /// A name put into the database for a stranger's key shows no message of theirs as a
    /// friend's in the inbox list, and a friend's name changed there shows no name.
    fn the_inbox_shows_only_names_the_user_gave(place) {
        let sealer = TestSealer::node();
        let store = open(&place, &sealer);
        store.trust_add(&entry(ANA, &["support"])).unwrap();
        store.record_receipts(&[refusal("from-ana", ANA), refusal("from-mallory", MALLORY)]).unwrap();
        let shown = |s: &Store| {
            let mut rows: Vec<(String, Option<String>)> =
                s.inbox(&Default::default()).unwrap().into_iter().map(|i| (i.receipt_id, i.sender_name)).collect();
            rows.sort();
            rows
        };
        assert_eq!(shown(&store), [("from-ana".into(), Some("Ana".into())), ("from-mallory".into(), None)]);
        behind_its_back(
            &place,
            &format!("INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{MALLORY}', 'Ana', '2026-11-28T10:00:00Z', '{{\"allowed_scopes\":[]}}');"),
        );
        assert_eq!(shown(&store), [("from-ana".into(), Some("Ana".into())), ("from-mallory".into(), None)], "the name put in is not shown");
        behind_its_back(&place, &format!("UPDATE trust SET name = 'Bank' WHERE public_key = '{ANA}';"));
        assert_eq!(shown(&store), [("from-ana".into(), None), ("from-mallory".into(), None)], "nor a name changed outside Gatehouse");
        // Filtered by sender, the same.
        let by_sender = store.inbox(&gatehouse_store::InboxFilter { sender: Some(MALLORY.into()), ..Default::default() }).unwrap();
        assert_eq!(by_sender.iter().map(|i| i.sender_name.clone()).collect::<Vec<_>>(), [None]);
    }
}
