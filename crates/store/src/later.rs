//! Consent the user put off: prompts deferred with "ask me later", and what an "always
//! allow" would have let in from a sender's past.

use crate::sql::args;
use serde::Serialize;

use crate::receipts::{RECEIPT_SELECT, SEQS_OF_SENDER_1};
use crate::{sender_key, Result, Store};

/// One past message a grant for its sender and scope would have let through.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Covered {
    pub envelope_id: Option<String>,
    pub received_at: String,
    /// The start of its prompt (the whole is in the inbox).
    pub excerpt: Option<String>,
    /// What became of it: "refused" (the sender was not trusted), "held" or "denied".
    pub outcome: String,
}

/// Past messages counted at most (a flooding sender's history is not walked whole at every
/// prompt); past this the count says "more than".
pub const MAX_COUNTED: i64 = 1000;

/// How much of a covered message's prompt is shown.
const EXCERPT_CHARS: usize = 120;

impl Store {
    /// Puts a prompt out of the way until `until` (a later "ask me later" moves it again).
    pub fn later_defer(&self, target: &str, until: &str, at: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO consent_later (target, until, deferred_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(target) DO UPDATE SET until = ?2, deferred_at = ?3",
            args![target, until, at],
        )?;
        Ok(())
    }

    /// Every deferred prompt, (target, until); the caller decides which are still away.
    pub fn later_list(&self) -> Result<Vec<(String, String)>> {
        self.read(|c| {
            let stmt = c.prepare_cached("SELECT target, until FROM consent_later")?;
            let rows = stmt.query_map(args![], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// A decided prompt is no longer deferred.
    pub fn later_forget(&self, target: &str) -> Result<()> {
        self.conn()?.execute("DELETE FROM consent_later WHERE target = ?1", args![target])?;
        Ok(())
    }

    /// The sender's past messages in `scope`, newest first (at most `limit`), that an
    /// "always allow" would have let through: knocks refused because it was not trusted,
    /// and envelopes held for consent or denied. `except`: the message the prompt is about.
    /// Also returns how many there are in all, up to [`MAX_COUNTED`] + 1.
    pub fn covered_by_grant(&self, sender: &str, scope: &str, except: Option<&str>, limit: usize) -> Result<(Vec<Covered>, i64)> {
        // Two arrivals in one millisecond are told apart by the order they were kept in.
        let with_seq = RECEIPT_SELECT.replace(" FROM receipts", ", seq FROM receipts");
        self.read(|conn| {
            let stmt = conn.prepare_cached(&format!(
                "SELECT r.*, e.exec_status FROM ({with_seq} WHERE scope = ?2 AND seq IN ({SEQS_OF_SENDER_1})) r
                 LEFT JOIN envelopes e ON e.id = r.envelope_row
                 WHERE (r.outcome = 'knock' OR e.exec_status IN ('held', 'denied'))
                   AND (CAST(?3 AS TEXT) IS NULL OR r.envelope_id IS DISTINCT FROM ?3)
                 ORDER BY r.received_ms DESC, r.seq DESC LIMIT ?4"
            ))?;
            let rows = stmt.query_map(args![sender_key(sender), scope, except, MAX_COUNTED + 1], |row| {
                Ok((crate::receipts::receipt_from_row(row)?, row.get::<Option<String>>(17)?))
            })?;
            let (mut out, mut total) = (Vec::new(), 0i64);
            for row in rows {
                let (receipt, status) = row?;
                total += 1;
                if out.len() >= limit {
                    continue;
                }
                out.push(Covered {
                    envelope_id: receipt.envelope_id,
                    received_at: receipt.received_at,
                    excerpt: receipt.prompt.map(|p| p.chars().take(EXCERPT_CHARS).collect()),
                    outcome: status.filter(|_| receipt.code.is_none()).unwrap_or_else(|| "refused".into()),
                });
            }
            Ok((out, total))
        })
    }
}
