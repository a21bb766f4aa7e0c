//! Answers going back to senders, from draft to sent (with the receipt their inbox gave).

use crate::sql::{args, Optional, Row};
use serde::Serialize;

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ReplyRow {
    pub id: i64,
    /// The envelope this answers (row in `envelopes`).
    pub envelope_row: i64,
    pub in_reply_to: String,
    pub conversation_id: String,
    /// The original sender's key.
    pub recipient: String,
    pub endpoint: String,
    pub scope: String,
    pub text: String,
    /// draft, sent, failed
    pub state: String,
    pub sent_envelope: Option<serde_json::Value>,
    pub receipt: Option<serde_json::Value>,
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

fn reply_row(r: &Row<'_>) -> Result<ReplyRow> {
    let j = |i: usize| -> Result<Option<serde_json::Value>> { Ok(r.get::<Option<String>>(i)?.and_then(|s| serde_json::from_str(&s).ok())) };
    Ok(ReplyRow {
        id: r.get(0)?,
        envelope_row: r.get(1)?,
        in_reply_to: r.get(2)?,
        conversation_id: r.get(3)?,
        recipient: r.get(4)?,
        endpoint: r.get(5)?,
        scope: r.get(6)?,
        text: r.get(7)?,
        state: r.get(8)?,
        sent_envelope: j(9)?,
        receipt: j(10)?,
        error: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
    })
}

const REPLY: &str = "SELECT id, envelope_row, in_reply_to, conversation_id, recipient, endpoint, scope, text, state, sent_envelope, receipt, error, created_at, updated_at FROM replies";

impl Store {
    /// Keeps a draft answer to the envelope at `envelope_row`.
    #[allow(clippy::too_many_arguments)]
    pub fn reply_draft(
        &self,
        envelope_row: i64,
        in_reply_to: &str,
        conversation_id: &str,
        recipient: &str,
        endpoint: &str,
        scope: &str,
        text: &str,
        at: &str,
    ) -> Result<i64> {
        let conn = self.conn()?;
        let inserted_id = conn.query_row(
            "INSERT INTO replies (envelope_row, in_reply_to, conversation_id, recipient, endpoint, scope, text, state, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'draft', ?8, ?8) RETURNING id",
            args![envelope_row, in_reply_to, conversation_id, recipient, endpoint, scope, text, at],
            |r| r.get::<i64>(0),
        )?;
        Ok(inserted_id)
    }

    pub fn reply(&self, id: i64) -> Result<Option<ReplyRow>> {
        self.read(|c| c.query_row(&format!("{REPLY} WHERE id = ?1"), args![id], reply_row).optional())
    }

    /// The text the user edited, while the reply is still a draft (or failed, to retry).
    pub fn reply_edit(&self, id: i64, text: &str, at: &str) -> Result<bool> {
        Ok(self.conn()?.execute("UPDATE replies SET text = ?2, updated_at = ?3 WHERE id = ?1 AND state IN ('draft', 'failed')", args![id, text, at])? > 0)
    }

    pub fn reply_finish(
        &self,
        id: i64,
        state: &str,
        envelope: Option<&serde_json::Value>,
        receipt: Option<&serde_json::Value>,
        error: Option<&str>,
        at: &str,
    ) -> Result<()> {
        self.conn()?.execute(
            "UPDATE replies SET state = ?2, sent_envelope = coalesce(?3, sent_envelope), receipt = ?4, error = ?5, updated_at = ?6 WHERE id = ?1",
            args![id, state, envelope.map(|e| e.to_string()), receipt.map(|r| r.to_string()), error, at],
        )?;
        Ok(())
    }

    pub fn replies_for_envelope(&self, envelope_row: i64) -> Result<Vec<ReplyRow>> {
        self.read(|c| {
            c.prepare_cached(&format!("{REPLY} WHERE envelope_row = ?1 ORDER BY id"))?.query_map(args![envelope_row], reply_row)?.collect::<Result<Vec<_>>>()
        })
    }

    pub fn replies_for_conversation(&self, conversation_id: &str) -> Result<Vec<ReplyRow>> {
        self.read(|c| {
            c.prepare_cached(&format!("{REPLY} WHERE conversation_id = ?1 ORDER BY id"))?
                .query_map(args![conversation_id], reply_row)?
                .collect::<Result<Vec<_>>>()
        })
    }

    /// Drafts waiting for the user's review, oldest first.
    pub fn reply_drafts(&self) -> Result<Vec<ReplyRow>> {
        self.read(|c| c.prepare_cached(&format!("{REPLY} WHERE state = 'draft' ORDER BY id"))?.query_map(args![], reply_row)?.collect::<Result<Vec<_>>>())
    }
}
