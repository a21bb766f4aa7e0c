//! One row per arrival: a knock's receipt keeps what the user decided on it, and the
//! receipt of the message a decision let in names that knock, so the inbox shows the
//! arrival once, with its story (knocked → allowed by you → done; denied; blocked).
//! Shown only: nothing is decided on these columns.

use serde::{Deserialize, Serialize};

use crate::sql::{args, Optional};
use crate::*;

/// What became of an arrival beyond its receipt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Story {
    /// What the user decided on it as a knock (`allow_once`, `always_allow_scope`, `deny`,
    /// `block`), or on the knock this message came as.
    pub decided: Option<String>,
    pub decided_at: Option<String>,
    /// On a message a decision let in: when it knocked, and that knock's receipt.
    pub knocked_at: Option<String>,
    pub after_knock: Option<String>,
    /// A knock whose sender waits for the user now.
    pub waiting: bool,
    /// What became of it in no door's words (a refusal of a blocked sender reads as one,
    /// whatever code its door answered with); none on receipts kept before it was recorded.
    #[serde(default)]
    pub outcome: Option<gatehouse_code::Outcome>,
}

/// The inbox query's story columns (after its own), over `r` (the receipt) and `k` (the
/// knock it came as, joined by [`JOIN`]).
pub(crate) const COLUMNS: &str = "COALESCE(r.decided, k.decided), COALESCE(r.decided_at, k.decided_at), k.received_at, r.after_knock,
    CASE WHEN r.status = 'rejected' AND r.decided IS NULL AND r.envelope_id IS NOT NULL AND EXISTS
        (SELECT 1 FROM pending_senders ps WHERE ps.public_key = r.sender AND ps.last_envelope_id = r.envelope_id) THEN 1 ELSE 0 END,
    r.outcome";
pub(crate) const JOIN: &str = "LEFT JOIN receipts k ON k.receipt_id = r.after_knock";
/// A knock let in is shown as the message it became.
pub(crate) const ONCE: &str = " AND NOT EXISTS (SELECT 1 FROM receipts d WHERE d.after_knock = r.receipt_id)";

pub(crate) fn from_row(r: &crate::sql::Row<'_>, at: usize) -> Result<Story> {
    Ok(Story {
        decided: r.get(at)?,
        decided_at: r.get(at + 1)?,
        knocked_at: r.get(at + 2)?,
        after_knock: r.get(at + 3)?,
        waiting: r.get::<i64>(at + 4)? != 0,
        outcome: r.get::<Option<String>>(at + 5)?.and_then(|o| serde_json::from_value(serde_json::Value::String(o)).ok()),
    })
}

impl Store {
    /// The user decided on `sender`'s knock `knock` (a receipt id): it keeps the decision;
    /// a deny or a block is also the answer to that sender's earlier knocks of the same
    /// kind not decided yet. `delivered`: the receipt of the message it let in.
    pub fn knock_decided(&self, sender: &str, knock: &str, decision: &str, at: &str, delivered: Option<&str>) -> Result<()> {
        let sender = sender_key(sender);
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let row: Option<(i64, Option<String>)> =
            tx.query_row("SELECT seq, code FROM receipts WHERE receipt_id = ?1", args![knock], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        let Some((seq, code)) = row else { return Ok(()) };
        tx.execute("UPDATE receipts SET decided = ?2, decided_at = ?3 WHERE receipt_id = ?1", args![knock, decision, at])?;
        if matches!(decision, "deny" | "block") {
            tx.execute(
                "UPDATE receipts SET decided = ?2, decided_at = ?3
                 WHERE sender = ?1 AND status = 'rejected' AND code = ?4 AND decided IS NULL AND seq < ?5",
                args![sender, decision, at, code, seq],
            )?;
        }
        if let Some(d) = delivered.filter(|d| *d != knock) {
            tx.execute("UPDATE receipts SET after_knock = ?2 WHERE receipt_id = ?1", args![d, knock])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The story of one receipt (its detail).
    pub fn story(&self, receipt_id: &str) -> Result<Story> {
        self.read(|conn| {
            let sql = format!("SELECT {COLUMNS} FROM receipts r {JOIN} WHERE r.receipt_id = ?1");
            let story = conn.prepare(&sql)?.query_row(args![receipt_id], |r| from_row(r, 0)).optional()?;
            Ok(story.unwrap_or_default())
        })
    }

    /// The receipt of the message a knock became, if a decision let it in.
    pub fn delivered_as(&self, knock: &str) -> Result<Option<String>> {
        self.read(|conn| conn.query_row("SELECT receipt_id FROM receipts WHERE after_knock = ?1", args![knock], |r| r.get(0)).optional())
    }
}
