//! How long what strangers sent is kept: the bytes of refused submissions (which the
//! user looks at for a few days, if ever), the receipts of refused submissions, the
//! audit log, and the steps of the user's agents (their calls' arguments and answers).
//! Receipts of accepted envelopes stay: they are the record of what reached the user's
//! AI, and only trusted senders make them.

use crate::sql::args;
use serde::{Deserialize, Serialize};

use crate::{Result, Store};

/// The setting holding [`Retention`].
pub const RETENTION_SETTING: &str = "retention";

/// The longest any retention may be set to (100 years); 0 means forever.
pub const MAX_RETENTION_DAYS: u32 = 36_500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct Retention {
    /// Days the body of a refused submission is kept (0: forever).
    pub rejected_body_days: u32,
    /// Days the receipt of a refused submission is kept (0: forever).
    pub rejected_receipt_days: u32,
    /// Days an audit entry is kept (0: forever).
    pub audit_days: u32,
    /// Days a decided step of the user's agents (an MCP server's call among them) is kept
    /// with its arguments and its answer (0: forever). Steps waiting for the user stay.
    pub steps_days: u32,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { rejected_body_days: 7, rejected_receipt_days: 90, audit_days: 365, steps_days: 365 }
    }
}

/// What one pruning removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    pub bodies_cleared: usize,
    pub receipts_removed: usize,
    pub audit_removed: usize,
    pub steps_removed: usize,
}

const DAY_MS: i64 = 24 * 3600 * 1000;

/// Refused receipts deleted per transaction, so the committer is never held up long.
const RECEIPT_BATCH: i64 = 2_000;

impl Store {
    /// The retention setting, or its default.
    pub fn retention(&self) -> Retention {
        self.setting(RETENTION_SETTING).ok().flatten().unwrap_or_default()
    }

    /// Changes the retention setting and audits the change: the one path both the
    /// window and the CLI take.
    pub fn set_retention(&self, r: &Retention, now: &str) -> Result<()> {
        for days in [r.rejected_body_days, r.rejected_receipt_days, r.audit_days, r.steps_days] {
            if days > MAX_RETENTION_DAYS {
                return Err(crate::StoreError::Invalid(format!("{days} days is more than {MAX_RETENTION_DAYS}; use 0 to keep forever")));
            }
        }
        self.set_setting(RETENTION_SETTING, r)?;
        self.audit("settings.retention", None, &serde_json::to_value(r)?, now)
    }

    /// Drops what is older than `r` allows, as of `now_ms`.
    pub fn prune(&self, now_ms: i64, r: &Retention) -> Result<Pruned> {
        let mut out = Pruned::default();
        if r.rejected_body_days > 0 {
            let cutoff = now_ms - i64::from(r.rejected_body_days) * DAY_MS;
            out.bodies_cleared = self.conn()?.execute(
                "UPDATE receipts SET body = NULL, body_truncated = 0 WHERE status = 'rejected' AND body IS NOT NULL AND received_ms < ?1",
                args![cutoff],
            )?;
            // Mail that went out (or was refused for good) keeps its row, not its bytes.
            let at = chrono::DateTime::from_timestamp_millis(cutoff).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            self.conn()?.execute(
                "UPDATE email_outbox SET message = substr(message, 1, 0) WHERE state != 'queued' AND length(message) > 0 AND created_at < ?1",
                args![at],
            )?;
        }
        if r.rejected_receipt_days > 0 {
            let cutoff = now_ms - i64::from(r.rejected_receipt_days) * DAY_MS;
            loop {
                let n = self.delete_rejected_receipts(cutoff)?;
                out.receipts_removed += n;
                if (n as i64) < RECEIPT_BATCH {
                    break;
                }
            }
        }
        if r.audit_days > 0 {
            let cutoff = chrono::DateTime::from_timestamp_millis(now_ms - i64::from(r.audit_days) * DAY_MS).unwrap_or_default();
            // Entries are written as RFC 3339 UTC, so text order is time order.
            let at = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default();
            let secs = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            out.audit_removed = self.prune_audit(&secs(cutoff), &secs(at))?;
        }
        if r.steps_days > 0 {
            let cutoff = chrono::DateTime::from_timestamp_millis(now_ms - i64::from(r.steps_days) * DAY_MS).unwrap_or_default();
            let cutoff = cutoff.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            loop {
                // Steps are written as RFC 3339 UTC, so text order is time order.
                let n = self.conn()?.execute(
                    "DELETE FROM asop_steps WHERE row IN (SELECT row FROM asop_steps WHERE decision != 'pending' AND created_at < ?1 ORDER BY row LIMIT ?2)",
                    args![cutoff.as_str(), RECEIPT_BATCH],
                )?;
                out.steps_removed += n;
                if (n as i64) < RECEIPT_BATCH {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// One batch of refused receipts older than `cutoff_ms`, with their entries in the
    /// search index and the index by sender. Only receipts the committer has indexed
    /// already are taken (the rest go in a later pruning), so no index entry is left
    /// pointing at a deleted receipt.
    fn delete_rejected_receipts(&self, cutoff_ms: i64) -> Result<usize> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        // Emptied again before the commit (or rolled back with it), so it starts empty.
        tx.execute("CREATE TEMP TABLE IF NOT EXISTS pruning (seq BIGINT PRIMARY KEY, sender TEXT, prompt TEXT, receipt_id TEXT)", args![])?;
        tx.execute(
            "INSERT INTO pruning (seq, sender, prompt, receipt_id)
             SELECT seq, sender, prompt, receipt_id FROM receipts
             WHERE status = 'rejected' AND received_ms < ?1 AND seq <= (SELECT last_seq FROM search_progress)
             ORDER BY seq LIMIT ?2",
            args![cutoff_ms, RECEIPT_BATCH],
        )?;
        // SQLite's own indexes of the receipts: an external-content FTS5 table forgets a
        // row only when told its old text, and receipts by sender are a table. (PostgreSQL
        // has no full-text table, see `inbox`, and its receipts by sender are an index of
        // the receipts, see `pg::schema`.)
        if !tx.db().is_pg() {
            tx.execute("INSERT INTO receipts_fts (receipts_fts, rowid, prompt) SELECT 'delete', seq, prompt FROM pruning WHERE prompt IS NOT NULL", args![])?;
            tx.execute("DELETE FROM receipts_by_sender WHERE (sender, seq) IN (SELECT sender, seq FROM pruning WHERE sender IS NOT NULL)", args![])?;
        }
        tx.execute("DELETE FROM email_arrivals WHERE receipt_id IN (SELECT receipt_id FROM pruning)", args![])?;
        let n = tx.execute("DELETE FROM receipts WHERE seq IN (SELECT seq FROM pruning)", args![])?;
        tx.execute("DELETE FROM pruning", args![])?;
        tx.commit()?;
        Ok(n)
    }
}
