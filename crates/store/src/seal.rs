//! The deciding state, sealed. Every row that lets someone in or makes something run —
//! trust entries and their grants, blocks, revocations, the settings that decide, approver
//! devices, their invitations, quorum rules, UAMP bearer tokens, the guardian's rules for
//! the user's own agents, the MCP tools the user let in, the people behind keys and which
//! of their keys the user verified — has a seal: the row's hash and the version
//! it was written at, signed by the gate's key (the team's, on every node). One head,
//! signed too, covers every seal (their count and a digest of them all), so a row taken
//! out, or an older signed row put back, leaves a head that no longer matches. The head's
//! version only grows, and each machine keeps the newest it verified out of the database's
//! reach ([`Sealer::kept`]), so a whole older copy put back is refused as well.
//!
//! Reads that decide act only on rows that match their seal: a row added or changed
//! outside Gatehouse lets nobody in and runs nothing; a block or a revocation taken out
//! outside Gatehouse still keeps its key out. A write seals exactly the rows it changed,
//! in its own transaction (`seal_write.rs`). docs/threat-model-team.md 25.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::sql::{args, Db, Optional};
use crate::*;

/// What signs and verifies the gate's state, and remembers on this machine the newest
/// head it verified. The composition site gives the gate's identity and the data dir.
pub trait Sealer: Send + Sync {
    /// The key every seal must be signed by (the gate's own public key).
    fn signer(&self) -> String;
    fn sign(&self, message: &[u8]) -> String;
    /// Whether `signature` is the signer's over `message`.
    fn verify(&self, message: &[u8], signature: &str) -> bool;
    /// The newest head version this machine verified or wrote, if any.
    fn kept(&self) -> Option<i64>;
    /// Remembers `version` when it is newer than the one kept.
    fn keep(&self, version: i64);
}

/// Settings that only count or remember (a flood's tally, quiet hours, the first start):
/// written often, deciding nothing. Every other setting is sealed, new ones included.
pub const UNSEALED_SETTINGS: &[&str] = &["flood", "quiet_hours", "quiet_digest", "first_run_done"];

/// A table whose rows decide, and which of its columns are the row's content.
pub(crate) struct Table {
    pub(crate) name: &'static str,
    id: &'static str,
    /// Whether the id column is an integer (compared as text).
    int_id: bool,
    pub(crate) cols: &'static [&'static str],
}

pub(crate) const TRUST: &Table = &Table { name: "trust", id: "public_key", int_id: false, cols: &["name", "added_at", "policy", "door"] };
/// A trust entry's row as it was sealed before entries recorded their door (read only to
/// move it: `entry_facts`).
pub(crate) const LEGACY_TRUST: &Table = &Table { name: "trust", id: "public_key", int_id: false, cols: &["name", "added_at", "policy"] };
/// (What a door keeps about an entry decides too: a key that verifies its agent, where
/// answers go, a limit on what it may ask.)
pub(crate) const EPP_ENTRIES: &Table =
    &Table { name: "epp_entries", id: "public_key", int_id: false, cols: &["reply_endpoint", "mail_address", "capabilities"] };
pub(crate) const UAMP_ENTRIES: &Table = &Table { name: "uamp_entries", id: "public_key", int_id: false, cols: &["keys"] };
pub(crate) const BLOCKED: &Table = &Table { name: "blocked", id: "public_key", int_id: false, cols: &["blocked_at", "reason"] };
pub(crate) const REVOKED: &Table = &Table { name: "revoked", id: "public_key", int_id: false, cols: &["revoked_at", "reason"] };
pub(crate) const SETTINGS: &Table = &Table { name: "settings", id: "key", int_id: false, cols: &["value"] };
/// (`last_seen` is not the device's content: it changes with every request.)
pub(crate) const APPROVERS: &Table = &Table { name: "approvers", id: "id", int_id: false, cols: &["name", "public_key", "added_at", "page_url"] };
/// (Where a device's person is told that something waits: an address is an answer's way out.)
pub(crate) const APPROVER_MAIL: &Table =
    &Table { name: "approver_mail", id: "approver_id", int_id: false, cols: &["email", "per_hour", "quiet_from", "quiet_to"] };
pub(crate) const INVITES: &Table =
    &Table { name: "approver_invites", id: "code_sha256", int_id: false, cols: &["name", "created_at", "expires_ms", "used_by", "page_url"] };
pub(crate) const QUORUM_RULES: &Table =
    &Table { name: "quorum_rules", id: "id", int_id: true, cols: &["scope", "sender", "need", "approvers", "deny_ends", "created_at"] };

/// (A bearer token lets its holder in as the sender it was issued to.)
pub(crate) const UAMP_TOKENS: &Table = &Table { name: "uamp_tokens", id: "token_sha256", int_id: false, cols: &["sender", "created_at"] };
/// (A rule lets the user's own agent act without asking.)
pub(crate) const ASOP_RULES: &Table = &Table {
    name: "asop_rules",
    id: "id",
    int_id: true,
    cols: &["agent", "method", "tool", "condition", "action", "redact", "note", "source", "created_at", "until"],
};

/// (A pin lets an MCP server's tool, as the user saw it, reach the user's AI.)
pub(crate) const MCP_PINS: &Table = &Table { name: "mcp_pins", id: "id", int_id: false, cols: &["server", "tool", "pin", "digest", "at"] };

/// (Which keys are one person's, and which of them the user verified: a contact's verified
/// key holds every new key that joins it until that one is verified too.)
pub(crate) const CONTACTS: &Table = &Table { name: "contacts", id: "id", int_id: true, cols: &["name", "created_at"] };
pub(crate) const CONTACT_KEYS: &Table =
    &Table { name: "contact_keys", id: "key", int_id: false, cols: &["contact_id", "added_at", "verified_at", "changed_from", "reverify"] };

pub(crate) const TABLES: &[&Table] = &[
    TRUST,
    EPP_ENTRIES,
    UAMP_ENTRIES,
    BLOCKED,
    REVOKED,
    SETTINGS,
    APPROVERS,
    APPROVER_MAIL,
    INVITES,
    QUORUM_RULES,
    UAMP_TOKENS,
    ASOP_RULES,
    MCP_PINS,
    CONTACTS,
    CONTACT_KEYS,
];

/// The sealed setting naming the tables the seals cover ([`TABLES`]' names, as a JSON
/// list): a table added to them later is sealed once, as it is, on the first open that
/// finds it missing here ([`Store::with_sealer`]).
pub(crate) const SEALED_TABLES: &str = "sealed_tables";
/// The tables sealed before [`SEALED_TABLES`] was kept (a database sealed then has none).
pub(crate) const FIRST_SEALED: &[&str] = &[
    "trust",
    "epp_entries",
    "uamp_entries",
    "blocked",
    "revoked",
    "settings",
    "approvers",
    "approver_mail",
    "approver_invites",
    "quorum_rules",
    "uamp_tokens",
    "asop_rules",
    "mcp_pins",
];

/// A row's content as text, column by column (NULL as `None`), in the table's order.
pub(crate) type Cols = Vec<Option<String>>;

impl Table {
    pub(crate) fn columns(&self) -> String {
        self.cols.iter().map(|c| format!("CAST({c} AS TEXT)")).collect::<Vec<_>>().join(", ")
    }

    /// Only the rows that decide (settings: not the ones that only count).
    fn filter(&self) -> String {
        if self.name != SETTINGS.name {
            return String::new();
        }
        let names: Vec<String> = UNSEALED_SETTINGS.iter().map(|k| format!("'{k}'")).collect();
        format!(" AND key NOT IN ({})", names.join(", "))
    }

    fn id_expr(&self) -> String {
        if self.int_id {
            format!("CAST({} AS TEXT)", self.id)
        } else {
            self.id.to_string()
        }
    }

    /// The row `id`, if it is there.
    pub(crate) fn row(&self, db: &Db<'_>, id: &str) -> Result<Option<Cols>> {
        let sql = format!("SELECT {} FROM {} WHERE {} = ?1{}", self.columns(), self.name, self.id_expr(), self.filter());
        let n = self.cols.len();
        db.prepare_cached(&sql)?.query_row(args![id], |r| (0..n).map(|i| r.get::<Option<String>>(i)).collect()).optional()
    }

    /// The rows whose column `col` is `value`, by id (`col` is one of ours, never
    /// another's word).
    pub(crate) fn rows_with(&self, db: &Db<'_>, col: &'static str, value: &str) -> Result<BTreeMap<String, Cols>> {
        let sql = format!("SELECT {}, {} FROM {} WHERE {col} = ?1{}", self.id_expr(), self.columns(), self.name, self.filter());
        let n = self.cols.len();
        db.prepare_cached(&sql)?
            .query_map(args![value], |r| Ok((r.get::<String>(0)?, (1..=n).map(|i| r.get::<Option<String>>(i)).collect::<Result<Cols>>()?)))?
            .collect()
    }

    /// Every row, by id.
    pub(crate) fn rows(&self, db: &Db<'_>) -> Result<BTreeMap<String, Cols>> {
        let sql = format!("SELECT {}, {} FROM {} WHERE 1 = 1{}", self.id_expr(), self.columns(), self.name, self.filter());
        let n = self.cols.len();
        db.query_map(&sql, args![], |r| Ok((r.get::<String>(0)?, (1..=n).map(|i| r.get::<Option<String>>(i)).collect::<Result<Cols>>()?)))?.collect()
    }

    pub(crate) fn hash(&self, id: &str, cols: &[Option<String>]) -> String {
        hex::encode(Sha256::digest(serde_json::to_vec(&(self.name, id, cols)).unwrap_or_default()))
    }
}

/// One row's seal as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seal {
    pub(crate) version: i64,
    pub(crate) hash: String,
    pub(crate) signer: String,
    pub(crate) signature: String,
}

/// (table, id)
pub(crate) type Key = (String, String);

pub(crate) fn seal_message(key: &Key, version: i64, hash: &str) -> Vec<u8> {
    serde_json::to_vec(&("gatehouse-seal/1", &key.0, &key.1, version, hash)).unwrap_or_default()
}

pub(crate) fn head_message(version: i64, rows: i64, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&("gatehouse-seal-head/1", version, rows, digest)).unwrap_or_default()
}

/// The digest a head signs: every seal's table, id, version and hash, in order.
pub(crate) fn digest(seals: &BTreeMap<Key, Seal>) -> String {
    let mut h = Sha256::new();
    for (key, s) in seals {
        h.update(serde_json::to_vec(&(&key.0, &key.1, s.version, &s.hash)).unwrap_or_default());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// The seals as this process last read and checked them.
#[derive(Debug, Clone)]
pub(crate) struct View {
    /// The head's (version, signature) it was read at: the cache's key.
    pub(crate) head: Option<(i64, String)>,
    pub(crate) seals: BTreeMap<Key, Seal>,
    /// Why the seals are not to be trusted (then no sealed row is acted on).
    pub(crate) broken: Option<String>,
}

/// What a deciding read found for one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judged {
    /// There, and as the gate sealed it.
    Sealed,
    /// Not there, and no seal says it should be.
    Absent,
    /// There, but not as the gate sealed it (added or changed outside Gatehouse).
    Unsealed,
    /// Not there, though its seal says it should be (taken out outside Gatehouse).
    Removed,
}

impl View {
    pub(crate) fn version(&self) -> i64 {
        self.head.as_ref().map_or(0, |h| h.0)
    }

    pub(crate) fn judge(&self, table: &Table, id: &str, row: Option<&[Option<String>]>) -> Judged {
        let seal = if self.broken.is_none() { self.seals.get(&(table.name.to_string(), id.to_string())) } else { None };
        match (row, seal) {
            (Some(cols), Some(s)) if s.hash == table.hash(id, cols) => Judged::Sealed,
            (Some(_), _) => Judged::Unsealed,
            (None, Some(_)) => Judged::Removed,
            (None, None) => Judged::Absent,
        }
    }
}

/// [`Store::judge`] with the seals already read (several rows judged in one snapshot).
pub(crate) fn judge_in(db: &Db<'_>, view: Option<&View>, table: &Table, id: &str) -> Result<(Judged, Option<Cols>)> {
    let row = table.row(db, id)?;
    Ok((judge_row(view, table, id, row.as_deref()), row))
}

/// How a deciding read takes `row` (already read) of `table`: against the seals, or, in a
/// store that seals nothing, as it is.
pub(crate) fn judge_row(view: Option<&View>, table: &Table, id: &str, row: Option<&[Option<String>]>) -> Judged {
    match view {
        None if row.is_some() => Judged::Sealed,
        None => Judged::Absent,
        Some(view) => view.judge(table, id, row),
    }
}

/// Reads the head and every seal and checks them, in the snapshot `db` is in. The head's
/// signature covers every seal (its digest names each one's table, id, version and hash),
/// so reads rest on it alone; `thorough` also verifies each seal's own signature (the
/// audit's check: who signed each row).
pub(crate) fn load(db: &Db<'_>, sealer: &dyn Sealer, verified: &std::sync::Mutex<HashSet<String>>, thorough: bool) -> Result<View> {
    let heads: Vec<(i64, i64, String, String, String)> = db
        .query_map("SELECT version, rows, digest, signer, signature FROM seal_head", args![], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
        .collect::<Result<_>>()?;
    let seals: BTreeMap<Key, Seal> = db
        .query_map("SELECT tbl, id, version, hash, signer, signature FROM seals", args![], |r| {
            Ok(((r.get(0)?, r.get(1)?), Seal { version: r.get(2)?, hash: r.get(3)?, signer: r.get(4)?, signature: r.get(5)? }))
        })?
        .collect::<Result<_>>()?;
    let kept = sealer.kept();
    let me = sealer.signer();
    let head = heads.first().map(|h| (h.0, h.4.clone()));
    let broken = match heads.as_slice() {
        [] => Some(match kept {
            Some(v) => format!("the gate's sealed state is gone from the database (this machine saw version {v})"),
            None => "the gate's state has never been sealed".to_string(),
        }),
        [_, _, ..] => Some("the database holds more than one head of the gate's sealed state".to_string()),
        [(version, rows, digest_hex, signer, signature)] => {
            if *signer != me {
                Some(format!("the head of the gate's state is signed by {signer}, not by the gate's key"))
            } else if !sealer.verify(&head_message(*version, *rows, digest_hex), signature) {
                Some("the head of the gate's state does not verify with the gate's key".to_string())
            } else if kept.is_some_and(|k| *version < k) {
                Some(format!(
                    "the gate's state in the database (version {version}) is older than the one this machine saw (version {}): an older copy was put back",
                    kept.unwrap_or_default()
                ))
            } else if *rows != seals.len() as i64 || *digest_hex != digest(&seals) {
                Some("the seals in the database are not the ones the head of the gate's state covers: rows were taken out or put back".to_string())
            } else {
                check_seals(&seals, *version, &me, thorough.then_some((sealer, verified)))
            }
        }
    };
    if broken.is_none() {
        if let Some((version, _)) = &head {
            sealer.keep(*version);
        }
    }
    Ok(View { head, seals, broken })
}

/// Each seal the gate's, and none newer than its head; with `verify`, each one's own
/// signature checked too.
fn check_seals(seals: &BTreeMap<Key, Seal>, head: i64, me: &str, verify: Option<(&dyn Sealer, &std::sync::Mutex<HashSet<String>>)>) -> Option<String> {
    for (key, s) in seals {
        if s.signer != me || s.version > head {
            return Some(format!("the seal of {} {} is not the gate's", key.0, key.1));
        }
    }
    let (sealer, verified) = verify?;
    // Seals verified once are remembered by their signature (an Ed25519 signature names
    // one message under one key), so the next check verifies only the new ones.
    let mut known = verified.lock().unwrap_or_else(|p| p.into_inner());
    if known.len() > 1_000_000 {
        known.clear();
    }
    for (key, s) in seals {
        if known.contains(&s.signature) {
            continue;
        }
        if !sealer.verify(&seal_message(key, s.version, &s.hash), &s.signature) {
            return Some(format!("the seal of {} {} does not verify with the gate's key", key.0, key.1));
        }
        known.insert(s.signature.clone());
    }
    None
}

/// A row that is not as the gate sealed it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StateChange {
    /// The table (`trust`, `epp_entries`, `uamp_entries`, `blocked`, `revoked`, `settings`, `approvers`,
    /// `approver_mail`, `approver_invites`, `quorum_rules`, `uamp_tokens`, `asop_rules`, `mcp_pins`,
    /// `contacts`, `contact_keys`).
    pub table: String,
    /// The row's key (a sender's key, a setting's name, a device's id, …).
    pub id: String,
    pub what: ChangeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A row no seal covers.
    Added,
    /// A row whose content is not what its seal covers.
    Changed,
    /// A sealed row that is not there.
    Removed,
}

/// The gate's deciding state checked against its seals ([`Store::state_check`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StateReport {
    /// The head's version (0: never sealed).
    pub version: i64,
    /// Rows covered by a seal.
    pub sealed: u32,
    /// Why no seal can be trusted, if so.
    pub broken: Option<String>,
    /// Rows not as sealed (against the seals as stored, even when they are broken).
    pub changes: Vec<StateChange>,
}

impl StateReport {
    pub fn intact(&self) -> bool {
        self.broken.is_none() && self.changes.is_empty()
    }

    /// One line for an operator.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = &self.broken {
            parts.push(b.clone());
        }
        if !self.changes.is_empty() {
            let first: Vec<String> = self.changes.iter().take(3).map(|c| format!("{} {} {:?}", c.table, c.id, c.what).to_lowercase()).collect();
            parts.push(format!(
                "{} row(s) changed outside Gatehouse ({}{})",
                self.changes.len(),
                first.join(", "),
                if self.changes.len() > 3 { ", …" } else { "" }
            ));
        }
        if parts.is_empty() {
            format!("intact: {} sealed row(s), version {}", self.sealed, self.version)
        } else {
            parts.join("; ")
        }
    }
}

/// Every deciding row's hash, by (table, id).
pub(crate) fn all_rows(db: &Db<'_>) -> Result<BTreeMap<Key, String>> {
    let mut out = BTreeMap::new();
    for t in TABLES {
        for (id, cols) in t.rows(db)? {
            let hash = t.hash(&id, &cols);
            out.insert((t.name.to_string(), id), hash);
        }
    }
    Ok(out)
}

/// The rows against the seals.
pub(crate) fn changes(rows: &BTreeMap<Key, String>, seals: &BTreeMap<Key, Seal>) -> Vec<StateChange> {
    let mut out = Vec::new();
    for (key, hash) in rows {
        match seals.get(key) {
            None => out.push(StateChange { table: key.0.clone(), id: key.1.clone(), what: ChangeKind::Added }),
            Some(s) if s.hash != *hash => out.push(StateChange { table: key.0.clone(), id: key.1.clone(), what: ChangeKind::Changed }),
            Some(_) => {}
        }
    }
    for key in seals.keys().filter(|k| !rows.contains_key(*k)) {
        out.push(StateChange { table: key.0.clone(), id: key.1.clone(), what: ChangeKind::Removed });
    }
    out
}

impl Store {
    /// The seals as of `db`'s snapshot, read again only when the head changed; `None`
    /// when this store seals nothing (a store opened without the gate's key: tests).
    pub(crate) fn view(&self, db: &Db<'_>) -> Result<Option<Arc<View>>> {
        let Some(sealer) = self.sealer.as_deref() else { return Ok(None) };
        let head: Option<(i64, String)> =
            db.prepare_cached("SELECT version, signature FROM seal_head")?.query_row(args![], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        if let Some(v) = self.sealed.lock().unwrap_or_else(|p| p.into_inner()).as_ref().filter(|v| v.head == head) {
            return Ok(Some(v.clone()));
        }
        let view = Arc::new(load(db, sealer, &self.seals_verified, false)?);
        *self.sealed.lock().unwrap_or_else(|p| p.into_inner()) = Some(view.clone());
        Ok(Some(view))
    }

    /// How a deciding read should take the row `id` of `table` (`Sealed` for every row
    /// present when this store seals nothing).
    pub(crate) fn judge(&self, db: &Db<'_>, table: &Table, id: &str) -> Result<(Judged, Option<Cols>)> {
        let view = self.view(db)?;
        judge_in(db, view.as_deref(), table, id)
    }

    /// The ids of `table`'s rows that are as sealed (all of them when this store seals
    /// nothing), in the snapshot `db` is in.
    pub(crate) fn sealed_ids(&self, db: &Db<'_>, table: &Table) -> Result<HashSet<String>> {
        let rows = table.rows(db)?;
        let view = self.view(db)?;
        Ok(rows.into_iter().filter(|(id, cols)| view.as_ref().is_none_or(|v| v.judge(table, id, Some(cols)) == Judged::Sealed)).map(|(id, _)| id).collect())
    }

    /// The gate's deciding state against its seals, in one snapshot: what `audit verify`,
    /// a node's `/ready` and the window report. The seals are read afresh (not the copy
    /// kept by head), and what is found is what reads act on from then on.
    pub fn state_check(&self) -> Result<StateReport> {
        let Some(sealer) = self.sealer.as_deref() else {
            return Ok(StateReport { version: 0, sealed: 0, broken: Some("this store seals nothing".into()), changes: Vec::new() });
        };
        self.read(|c| {
            c.snapshot(|db| {
                let rows = all_rows(db)?;
                let view = Arc::new(load(db, sealer, &self.seals_verified, true)?);
                let before = self.sealed.lock().unwrap_or_else(|p| p.into_inner()).replace(view.clone());
                if view.broken.is_some() && before.is_none_or(|b| b.broken.is_none()) {
                    // Views read per sender while the seals looked whole are read again.
                    self.admissions.lock().unwrap_or_else(|p| p.into_inner()).clear();
                }
                Ok(StateReport {
                    version: view.version(),
                    sealed: u32::try_from(view.seals.len()).unwrap_or(u32::MAX),
                    broken: view.broken.clone(),
                    changes: changes(&rows, &view.seals),
                })
            })
        })
    }
}
