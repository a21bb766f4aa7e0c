//! Envelopes and receipts as stored: rejections, executor status, and the rows the app reads.

use crate::sql::{args, Db, Optional, Row};
use crate::*;

pub(crate) const RECEIPT_SELECT: &str = "SELECT receipt_id, envelope_id, status, code, message, received_at, received_ms,
    transport, sender, scope, body, body_truncated, receipt, prompt, envelope_row, outcome FROM receipts";

/// The seqs of the receipts of the sender bound to `?1`: from the index by sender, and
/// from the receipts stored since it was last filled.
pub(crate) const SEQS_OF_SENDER_1: &str = "SELECT seq FROM receipts_by_sender WHERE sender = ?1
    UNION ALL
    SELECT seq FROM receipts WHERE seq > (SELECT last_seq FROM search_progress) AND sender = ?1";

pub(crate) fn insert_receipt(conn: &Db<'_>, r: &ReceiptRow) -> Result<()> {
    insert_receipt_as(conn, r, r.envelope_row, &r.receipt.to_string())
}

/// Inserts `r` for the envelope row given, with its receipt already as JSON text.
pub(crate) fn insert_receipt_as(conn: &Db<'_>, r: &ReceiptRow, envelope_row: Option<i64>, receipt: &str) -> Result<()> {
    // SQLite indexes receipts by sender in batches (`commit::index_receipts`); PostgreSQL,
    // where nodes commit in any order, in an index of the receipts table itself.
    let sql = "INSERT INTO receipts (receipt_id, envelope_id, status, code, message, received_at, received_ms,
            transport, sender, scope, body, body_truncated, receipt, prompt, envelope_row, outcome)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";
    conn.prepare_cached(sql)?.execute(args![
        r.receipt_id,
        r.envelope_id,
        r.status,
        r.code,
        r.message,
        r.received_at,
        r.received_ms,
        r.transport,
        r.sender,
        r.scope,
        r.body,
        r.body_truncated,
        receipt,
        r.prompt,
        envelope_row,
        r.outcome.map(gatehouse_code::Outcome::as_str),
    ])?;
    Ok(())
}

pub(crate) fn receipt_from_row(r: &Row<'_>) -> Result<ReceiptRow> {
    let receipt: String = r.get(12)?;
    Ok(ReceiptRow {
        receipt_id: r.get(0)?,
        envelope_id: r.get(1)?,
        status: r.get(2)?,
        code: r.get(3)?,
        message: r.get(4)?,
        received_at: r.get(5)?,
        received_ms: r.get(6)?,
        transport: r.get(7)?,
        sender: r.get(8)?,
        scope: r.get(9)?,
        body: r.get(10)?,
        body_truncated: r.get(11)?,
        receipt: serde_json::from_str(&receipt).unwrap_or(serde_json::Value::Null),
        prompt: r.get(13)?,
        envelope_row: r.get(14)?,
        outcome: r.get::<Option<String>>(15)?.and_then(|o| serde_json::from_value(serde_json::Value::String(o)).ok()),
    })
}

pub(crate) const ENVELOPE_SELECT: &str = "SELECT id, envelope_id, sender, recipient, scope, payload_type, conversation_id,
    in_reply_to, on_behalf_of, prompt, timestamp, expires_at, received_at, transport, signed_form, raw,
    receipt_id, executor, exec_status, exec_result, exec_updated_at, executor_spec, door FROM envelopes";

pub(crate) fn envelope_from_row(r: &Row<'_>) -> Result<EnvelopeRow> {
    let exec_result: Option<String> = r.get(19)?;
    let status: String = r.get(18)?;
    Ok(EnvelopeRow {
        id: r.get(0)?,
        envelope_id: r.get(1)?,
        sender: r.get(2)?,
        recipient: r.get(3)?,
        scope: r.get(4)?,
        payload_type: r.get(5)?,
        conversation_id: r.get(6)?,
        in_reply_to: r.get(7)?,
        on_behalf_of: r.get(8)?,
        prompt: r.get(9)?,
        timestamp: r.get(10)?,
        expires_at: r.get(11)?,
        received_at: r.get(12)?,
        transport: r.get(13)?,
        signed_form: r.get(14)?,
        raw: r.get(15)?,
        receipt_id: r.get(16)?,
        executor: r.get(17)?,
        exec_status: ExecStatus::parse(&status).unwrap_or(ExecStatus::Failed),
        exec_result: exec_result.and_then(|s| serde_json::from_str(&s).ok()),
        exec_updated_at: r.get(20)?,
        executor_spec: r.get(21)?,
        door: r.get(22)?,
    })
}

impl Store {
    /// Records a rejection (every submission leaves a receipt the user can read). Shares
    /// the group commit with acceptances; returns once the receipt is durable.
    pub fn record_rejection(&self, receipt: &ReceiptRow, knock: Option<&Knock>) -> Result<()> {
        let (reply, answer) = blocking();
        self.enqueue(Job::receipt(receipt, knock, reply));
        self.commit_until_answered(&answer)
    }

    /// [`Store::record_rejection`] for async callers: awaits the commit without a thread.
    pub async fn record_rejection_async(&self, receipt: &ReceiptRow, knock: Option<&Knock>) -> Result<()> {
        let (reply, answer) = asynchronous();
        self.enqueue(Job::receipt(receipt, knock, reply));
        answer.await.unwrap_or_else(|_| Err(closing()))
    }

    /// Records many receipts in one transaction (imports, benchmarks, tests).
    pub fn record_receipts(&self, rows: &[ReceiptRow]) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        for r in rows {
            insert_receipt(&tx.db(), r)?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn receipt(&self, receipt_id: &str) -> Result<Option<ReceiptRow>> {
        self.read(|conn| {
            let stmt = conn.prepare(&format!("{RECEIPT_SELECT} WHERE receipt_id = ?1"))?;
            stmt.query_row(args![receipt_id], receipt_from_row).optional()
        })
    }

    /// Newest first.
    pub fn receipts(&self, limit: u32, offset: u32) -> Result<Vec<ReceiptRow>> {
        self.read(|conn| {
            let stmt = conn.prepare(&format!("{RECEIPT_SELECT} ORDER BY seq DESC LIMIT ?1 OFFSET ?2"))?;
            let rows = stmt.query_map(args![limit, offset], receipt_from_row)?;
            rows.collect::<Result<_>>()
        })
    }

    /// Newest first.
    pub fn envelopes(&self, limit: u32, offset: u32) -> Result<Vec<EnvelopeRow>> {
        self.read(|conn| {
            let stmt = conn.prepare(&format!("{ENVELOPE_SELECT} ORDER BY id DESC LIMIT ?1 OFFSET ?2"))?;
            let rows = stmt.query_map(args![limit, offset], envelope_from_row)?;
            rows.collect::<Result<_>>()
        })
    }

    pub fn envelope(&self, id: i64) -> Result<Option<EnvelopeRow>> {
        self.read(|conn| {
            let stmt = conn.prepare(&format!("{ENVELOPE_SELECT} WHERE id = ?1"))?;
            stmt.query_row(args![id], envelope_from_row).optional()
        })
    }

    pub fn envelopes_with_status(&self, status: ExecStatus) -> Result<Vec<EnvelopeRow>> {
        self.read(|conn| {
            let stmt = conn.prepare(&format!("{ENVELOPE_SELECT} WHERE exec_status = ?1 ORDER BY id"))?;
            let rows = stmt.query_map(args![status.as_str()], envelope_from_row)?;
            rows.collect::<Result<_>>()
        })
    }

    pub fn set_exec(&self, id: i64, status: ExecStatus, result: Option<&serde_json::Value>, now: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE envelopes SET exec_status = ?2, exec_result = ?3, exec_updated_at = ?4 WHERE id = ?1",
            args![id, status.as_str(), result.map(|r| r.to_string()), now],
        )?;
        Ok(())
    }

    /// Moves an envelope from `from` to `to` only if it is still in `from` (a sender
    /// cancelling what waits, while the user or a runner may be taking it): whether it moved.
    pub fn set_exec_from(&self, id: i64, from: ExecStatus, to: ExecStatus, result: Option<&serde_json::Value>, now: &str) -> Result<bool> {
        let n = self.conn()?.execute(
            "UPDATE envelopes SET exec_status = ?3, exec_result = ?4, exec_updated_at = ?5 WHERE id = ?1 AND exec_status = ?2",
            args![id, from.as_str(), to.as_str(), result.map(|r| r.to_string()), now],
        )?;
        Ok(n == 1)
    }

    /// Queues a failed envelope again under the executor chosen now (the user asked to
    /// run it again).
    pub fn requeue(&self, id: i64, executor: &str, executor_spec: &str, now: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE envelopes SET exec_status = 'queued', exec_result = NULL, exec_updated_at = ?4, executor = ?2, executor_spec = ?3 WHERE id = ?1",
            args![id, executor, executor_spec, now],
        )?;
        Ok(())
    }

    /// Several executor status changes (the runner works in batches), committed with
    /// whatever else is being committed at the time.
    pub fn set_exec_many(&self, updates: &[(i64, ExecStatus, Option<serde_json::Value>)], now: &str) -> Result<()> {
        if updates.is_empty() {
            return Ok(());
        }
        let (reply, answer) = blocking();
        self.enqueue(Job::SetExec { updates: updates.to_vec(), now: now.to_string(), reply });
        self.commit_until_answered(&answer)
    }

    /// Held envelopes plus pending sender requests: what waits for the user. Counted,
    /// not loaded, since the app asks on every inbox event.
    /// How many of each kind of waiting item there are, in one read (the application
    /// layer's holders each take their own count).
    pub fn waiting_counts(&self) -> Result<crate::WaitingCounts> {
        self.read(|c| {
            c.query_row(
                "SELECT (SELECT count(*) FROM envelopes WHERE exec_status = ?1),
                        (SELECT count(*) FROM pending_senders),
                        (SELECT count(*) FROM uamp_streams WHERE direction = 'in' AND state = 'NEW' AND detail = ?2),
                        (SELECT count(*) FROM asop_steps WHERE decision = 'pending'),
                        (SELECT count(*) FROM key_changes),
                        (SELECT count(DISTINCT server) FROM mcp_offers WHERE refused = 0 AND server IN (SELECT public_key FROM trust))",
                args![ExecStatus::Held.as_str(), crate::uamp::HELD_FOR_CONSENT],
                |r| {
                    let n = |i: usize| r.get::<i64>(i).map(|v| v.max(0) as usize);
                    Ok(crate::WaitingCounts { held: n(0)?, knocks: n(1)?, held_asks: n(2)?, steps: n(3)?, key_changes: n(4)?, tool_changes: n(5)? })
                },
            )
        })
    }

    pub fn count_envelopes(&self) -> Result<i64> {
        self.read(|c| c.query_row("SELECT count(*) FROM envelopes", args![], |r| r.get(0)))
    }

    /// The receipt of the knock a waiting sender left last: found by the sender's key and
    /// what its waiting row names, whatever door it knocked at and however that door words
    /// its refusals.
    pub fn knock_of(&self, pending: &crate::PendingSender) -> Result<Option<ReceiptRow>> {
        let Some(envelope_id) = &pending.last_envelope_id else { return Ok(None) };
        self.read(|conn| {
            let stmt = conn.prepare(&format!(
                "{RECEIPT_SELECT} WHERE status = 'rejected' AND envelope_id = ?2 AND seq IN ({SEQS_OF_SENDER_1})
                 ORDER BY seq DESC LIMIT 1"
            ))?;
            stmt.query_row(args![sender_key(&pending.public_key), envelope_id], receipt_from_row).optional()
        })
    }

    /// Accepted envelopes in one conversation, oldest first.
    pub fn conversation(&self, conversation_id: &str) -> Result<Vec<EnvelopeRow>> {
        self.read(|conn| {
            let stmt = conn.prepare_cached(&format!(
                // A conversation named after its first envelope (one that started without a
                // conversation_id and that this inbox answered, which named it) includes
                // that envelope, found through the answer: looking it up by its id would
                // walk every envelope, and an index of ids would cost every acceptance a
                // random page.
                "{ENVELOPE_SELECT} WHERE conversation_id = ?1
                 UNION ALL
                 {ENVELOPE_SELECT} WHERE id IN (SELECT envelope_row FROM replies WHERE conversation_id = ?1)
                    AND conversation_id IS NULL AND envelope_id = ?1
                 ORDER BY 1"
            ))?;
            let rows = stmt.query_map(args![conversation_id], envelope_from_row)?;
            rows.collect::<Result<_>>()
        })
    }
}
