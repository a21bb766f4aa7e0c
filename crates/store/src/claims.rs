//! Who runs an accepted envelope's executor: the runner claims each envelope before it
//! runs it, and only what it claimed runs. On one laptop that is the one process; on a
//! team's gate several nodes run executors from one table and a claim is taken once
//! (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so a node never waits on another's claim).
//!
//! A lease is a claim on a name for a while (one node reads a mail account for all):
//! renewed by its holder, taken over once it runs out.
//!
//! A claim names its node. A node that restarts marks what it was running failed (a
//! program may have had side effects, so nothing is re-run behind the user's back), and
//! any node marks the same of a claim older than [`STALE_AFTER_MS`]: its node died and
//! did not come back.

use crate::sql::args;
use crate::*;

/// The node name of a store no one named (a laptop's one process).
pub(crate) const LOCAL: &str = "local";

/// A claim this old belongs to a node that is gone: longer than any executor may run.
pub const STALE_AFTER_MS: i64 = 24 * 3600 * 1000;

impl Store {
    /// This store's runner claims what it runs as `node` (stable across restarts of one
    /// node, different on every node of a team's gate).
    pub fn with_node(mut self, node: &str) -> Store {
        self.node = node.to_string();
        self
    }

    /// Marks the queued envelopes among `ids` running, claimed by this node, and returns
    /// those it claimed: an envelope another node claimed (or is claiming) is not.
    pub fn claim_queued(&self, ids: &[i64], now: &str) -> Result<Vec<i64>> {
        let mut g = self.conn()?;
        let tx = g.transaction()?;
        let sql = if tx.db().is_pg() {
            "UPDATE envelopes SET exec_status = 'running', exec_updated_at = ?3, claimed_by = ?2
             WHERE id = (SELECT id FROM envelopes WHERE id = ?1 AND exec_status = 'queued' FOR UPDATE SKIP LOCKED)"
        } else {
            "UPDATE envelopes SET exec_status = 'running', exec_updated_at = ?3, claimed_by = ?2 WHERE id = ?1 AND exec_status = 'queued'"
        };
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            if tx.execute(sql, args![id, self.node, now])? == 1 {
                claimed.push(*id);
            }
        }
        tx.commit()?;
        Ok(claimed)
    }

    /// Envelopes claimed before `stale_before` and still running, whichever node claimed
    /// them: longer than any executor runs, so their node is gone (a team's gate sweeps
    /// them while it runs; a restart also takes its own fresh ones, `abandoned_claims`).
    pub fn stale_claims(&self, stale_before: &str) -> Result<Vec<EnvelopeRow>> {
        self.read(|c| {
            let sql = format!("{} WHERE exec_status = 'running' AND exec_updated_at < ?1 ORDER BY id", crate::receipts::ENVELOPE_SELECT);
            c.query_map(&sql, args![stale_before], crate::receipts::envelope_from_row)?.collect()
        })
    }

    /// Up to `limit` queued envelopes, oldest first (a node of a team's gate looks for
    /// what another process released).
    pub fn queued_ids(&self, limit: usize) -> Result<Vec<i64>> {
        self.read(|c| c.query_map("SELECT id FROM envelopes WHERE exec_status = 'queued' ORDER BY id LIMIT ?1", args![limit], |r| r.get(0))?.collect())
    }

    /// Envelopes left running by a run that cannot finish them: this node's own (it
    /// restarted), and any claimed before `stale_before` (its node never came back). On
    /// one laptop, every running envelope is this process's own.
    pub fn abandoned_claims(&self, stale_before: &str) -> Result<Vec<EnvelopeRow>> {
        if !self.is_shared() {
            return self.envelopes_with_status(ExecStatus::Running);
        }
        self.read(|c| {
            let sql = format!(
                "{} WHERE exec_status = 'running' AND (claimed_by IS NULL OR claimed_by = ?1 OR exec_updated_at < ?2) ORDER BY id",
                crate::receipts::ENVELOPE_SELECT
            );
            c.query_map(&sql, args![self.node, stale_before], crate::receipts::envelope_from_row)?.collect()
        })
    }

    /// Takes the lease on `name` for `ttl_ms` from `now_ms`, or renews it: true when this
    /// node holds it now, false while another node's lease runs.
    pub fn take_lease(&self, name: &str, now_ms: i64, ttl_ms: i64) -> Result<bool> {
        let changed = self.conn()?.execute(
            "INSERT INTO leases (name, holder, until_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
             WHERE leases.holder = excluded.holder OR leases.until_ms < ?4",
            args![name, self.node, now_ms + ttl_ms, now_ms],
        )?;
        Ok(changed == 1)
    }

    /// Gives the lease on `name` up (a node stopping), so another takes it over at once.
    pub fn release_lease(&self, name: &str) -> Result<()> {
        self.conn()?.execute("DELETE FROM leases WHERE name = ?1 AND holder = ?2", args![name, self.node])?;
        Ok(())
    }
}
