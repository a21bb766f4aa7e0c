//! The audit log: every change to trust, consent, settings and secrets, with when and what,
//! as a chain no one can quietly edit. Each entry carries the hash of the one before it
//! (`prev_hash`) and its own (`hash`, over its id, time, action, subject, detail and
//! `prev_hash`), so a changed, deleted or reordered entry no longer fits the next. Anyone
//! with the database can recompute a chain; what they cannot make is the gate's signature
//! on a checkpoint (`audit_checkpoints`, signed by the application layer), which names an
//! entry and its hash.
//!
//! Entries are appended one at a time, in the order of `audit_head` (one row, updated in
//! the appending transaction: on a team's gate, nodes append in turn), with the id the head
//! gives. Retention drops only the oldest entries, and says so in the chain
//! (`audit.pruned`, naming the last entry dropped and its hash), so the new first entry's
//! `prev_hash` is accounted for.

use sha2::{Digest, Sha256};

use crate::sql::{args, Db, Optional};
use crate::*;

/// The `prev_hash` of the first entry of a chain.
pub const AUDIT_GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The action of the entry retention appends when it drops the oldest entries.
pub const AUDIT_PRUNED: &str = "audit.pruned";

/// An entry's hash: SHA-256 over its fields, each length-prefixed (no field can run into
/// the next), as lowercase hex. `detail` is the detail as stored (compact JSON).
pub fn audit_entry_hash(id: i64, at: &str, action: &str, subject: Option<&str>, detail: &str, prev_hash: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"gatehouse-audit-entry/1");
    let subject_field = subject.map(|s| format!("+{s}")).unwrap_or_else(|| "-".into());
    for field in [id.to_string().as_str(), at, action, &subject_field, detail, prev_hash] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Appends one entry in the transaction `tx` is in (the head row is locked until it ends).
pub(crate) fn append(tx: &Db<'_>, at: &str, action: &str, subject: Option<&str>, detail: &str) -> Result<i64> {
    let (id, prev): (i64, String) = tx.query_row("UPDATE audit_head SET id = id + 1 RETURNING id, hash", args![], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let hash = audit_entry_hash(id, at, action, subject, detail, &prev);
    tx.execute(
        "INSERT INTO audit (id, at, action, subject, detail, prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        args![id, at, action, subject, detail, prev, hash],
    )?;
    tx.execute("UPDATE audit_head SET hash = ?1", args![hash])?;
    Ok(id)
}

/// Chains the entries written before the chain existed (an upgraded log), in id order,
/// once: after this every entry has its hashes.
pub(crate) fn seal(tx: &Db<'_>) -> Result<usize> {
    let (mut head, mut prev): (i64, String) = tx.query_row("UPDATE audit_head SET id = id RETURNING id, hash", args![], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let rows: Vec<(i64, String, String, Option<String>, String)> = tx
        .query_map("SELECT id, at, action, subject, detail FROM audit WHERE id > ?1 ORDER BY id", args![head], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_>>()?;
    for (id, at, action, subject, detail) in &rows {
        // Stored as the compact JSON it was written as; hashed as entries are from now on.
        let detail = serde_json::from_str::<serde_json::Value>(detail).map(|v| v.to_string()).unwrap_or_else(|_| detail.clone());
        let hash = audit_entry_hash(*id, at, action, subject.as_deref(), &detail, &prev);
        tx.execute("UPDATE audit SET prev_hash = ?2, hash = ?3, detail = ?4 WHERE id = ?1", args![id, prev, hash, detail])?;
        (head, prev) = (*id, hash);
    }
    if !rows.is_empty() {
        tx.execute("UPDATE audit_head SET id = ?1, hash = ?2", args![head, prev])?;
    }
    Ok(rows.len())
}

fn entry(r: &crate::sql::Row<'_>) -> Result<AuditEntry> {
    let detail: String = r.get(4)?;
    Ok(AuditEntry {
        id: r.get(0)?,
        at: r.get(1)?,
        action: r.get(2)?,
        subject: r.get(3)?,
        detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
        prev_hash: r.get::<Option<String>>(5)?.unwrap_or_default(),
        hash: r.get::<Option<String>>(6)?.unwrap_or_default(),
    })
}

const ENTRY: &str = "SELECT id, at, action, subject, detail, prev_hash, hash FROM audit";

impl Store {
    pub fn audit(&self, action: &str, subject: Option<&str>, detail: &serde_json::Value, now: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        append(&tx.db(), now, action, subject, &detail.to_string())?;
        tx.commit()
    }

    /// Chains entries written before the chain existed (see [`seal`]); called on open.
    pub(crate) fn seal_audit(&self) -> Result<usize> {
        // Read first: every open would otherwise wait for the write lock (or the head
        // row) for nothing once the log is chained.
        let unsealed = self.read(|c| c.query_row("SELECT count(*) FROM audit WHERE id > (SELECT id FROM audit_head)", args![], |r| r.get::<i64>(0)))?;
        if unsealed == 0 {
            return Ok(0);
        }
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let n = seal(&tx.db())?;
        tx.commit()?;
        Ok(n)
    }

    /// Newest first.
    pub fn audit_list(&self, limit: u32) -> Result<Vec<AuditEntry>> {
        self.audit_page(None, None, limit)
    }

    /// Newest first, one page: entries at or after `since` (RFC 3339, as entries are
    /// written) and below `before_id` (the last id of the page before), at most `limit`.
    pub fn audit_page(&self, since: Option<&str>, before_id: Option<i64>, limit: u32) -> Result<Vec<AuditEntry>> {
        let sql = format!("{ENTRY} WHERE (CAST(?1 AS TEXT) IS NULL OR at >= ?1) AND (CAST(?2 AS BIGINT) IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3");
        self.read(|conn| conn.query_map(&sql, args![since, before_id, limit], entry)?.collect())
    }

    /// Up to `limit` entries after `after_id`, oldest first (the chain in its order).
    pub fn audit_chain(&self, after_id: i64, limit: u32) -> Result<Vec<AuditEntry>> {
        self.read(|conn| conn.query_map(&format!("{ENTRY} WHERE id > ?1 ORDER BY id LIMIT ?2"), args![after_id, limit], entry)?.collect())
    }

    /// The last entry's id and hash ([`AUDIT_GENESIS`] and 0 before the first).
    pub fn audit_head(&self) -> Result<(i64, String)> {
        self.read(|conn| conn.query_row("SELECT id, hash FROM audit_head", args![], |r| Ok((r.get(0)?, r.get(1)?))))
    }

    /// Keeps a signed checkpoint (the application layer signs it).
    pub fn audit_checkpoint_add(&self, c: &AuditCheckpoint) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO audit_checkpoints (at, through_id, hash, public_key, signature) VALUES (?1, ?2, ?3, ?4, ?5)",
            args![c.at, c.through_id, c.hash, c.public_key, c.signature],
        )?;
        Ok(())
    }

    /// Keeps the newest checkpoint approver device `approver` holds (a witness of the log
    /// out of the database's reach: the device sends it again at its next contact, so a
    /// row taken out here is put back then).
    pub fn audit_witness_keep(&self, approver: &str, c: &AuditCheckpoint, seen_at: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO audit_witnesses (approver_id, at, through_id, hash, public_key, signature, seen_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (approver_id) DO UPDATE SET at = ?2, through_id = ?3, hash = ?4, public_key = ?5, signature = ?6, seen_at = ?7
             WHERE audit_witnesses.through_id <= ?3",
            args![approver, c.at, c.through_id, c.hash, c.public_key, c.signature, seen_at],
        )?;
        Ok(())
    }

    /// The checkpoints approver devices hold, as they last sent them.
    pub fn audit_witnessed(&self) -> Result<Vec<AuditCheckpoint>> {
        self.read(|conn| {
            conn.query_map("SELECT at, through_id, hash, public_key, signature FROM audit_witnesses ORDER BY approver_id", args![], |r| {
                Ok(AuditCheckpoint { at: r.get(0)?, through_id: r.get(1)?, hash: r.get(2)?, public_key: r.get(3)?, signature: r.get(4)? })
            })?
            .collect()
        })
    }

    /// Every checkpoint, oldest first.
    pub fn audit_checkpoints(&self) -> Result<Vec<AuditCheckpoint>> {
        self.read(|conn| {
            conn.query_map("SELECT at, through_id, hash, public_key, signature FROM audit_checkpoints ORDER BY id", args![], |r| {
                Ok(AuditCheckpoint { at: r.get(0)?, through_id: r.get(1)?, hash: r.get(2)?, public_key: r.get(3)?, signature: r.get(4)? })
            })?
            .collect()
        })
    }

    /// Drops the entries older than `cutoff` (RFC 3339 UTC), oldest first and only while
    /// they are the oldest: an entry is never dropped from the middle of the chain. The
    /// chain records what was dropped ([`AUDIT_PRUNED`]). Returns how many.
    pub(crate) fn prune_audit(&self, cutoff: &str, now: &str) -> Result<usize> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let db = tx.db();
        // The head's row first: appending waits for this, so the range cannot move.
        db.query_row("UPDATE audit_head SET id = id RETURNING id", args![], |r| r.get::<i64>(0))?;
        let through: Option<(i64, String)> = db
            .query_row(
                "SELECT id, hash FROM audit WHERE at < ?1 AND id < coalesce((SELECT min(id) FROM audit WHERE at >= ?1), (SELECT id + 1 FROM audit_head))
                 ORDER BY id DESC LIMIT 1",
                args![cutoff],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((through_id, hash)) = through else { return Ok(0) };
        let removed = db.execute("DELETE FROM audit WHERE id <= ?1", args![through_id])?;
        let detail = serde_json::json!({"through_id": through_id, "hash": hash, "removed": removed});
        append(&db, now, AUDIT_PRUNED, None, &detail.to_string())?;
        tx.commit()?;
        Ok(removed)
    }
}
