//! The inbox list: receipts filtered by sender (or a contact's keys), scope, status, transport and full-text
//! search, newest first.

use crate::sql::Optional;
use crate::value::{Arg, Owned};
use crate::*;

impl Store {
    /// Newest first, filtered, one keyset page.
    pub fn inbox(&self, f: &InboxFilter) -> Result<Vec<InboxItem>> {
        let columns = format!(
            "SELECT r.seq, r.receipt_id, r.envelope_id, r.status, r.code, r.message, r.received_at,
                    r.transport, r.sender, r.scope, substr(r.prompt, 1, 240), r.envelope_row,
                    e.exec_status, e.payload_type, e.conversation_id, e.on_behalf_of, {}",
            crate::story::COLUMNS
        );
        let joins = format!(
            "LEFT JOIN envelopes e ON e.id = r.envelope_row
             {}",
            crate::story::JOIN
        );
        // The filters common to every form of the query; `sql` is their text.
        let mut sql = String::new();
        let mut args: Vec<Owned> = Vec::new();
        // Appends a clause whose `?` is the next parameter.
        fn arg(sql: &mut String, args: &mut Vec<Owned>, clause: &str, v: Owned) {
            args.push(v);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        }
        // Which senders: one key, or every key of a contact. Either way the index by
        // sender is read, one range per key.
        let sender = match (f.contact, f.sender.as_deref().filter(|s| !s.is_empty())) {
            (Some(c), _) => {
                // The keys the gate sealed as the contact's (none: nothing is theirs).
                let mut marks = Vec::new();
                for key in self.contact_keys_of(c)? {
                    args.push(key.into());
                    marks.push(format!("?{}", args.len()));
                }
                Some(match marks.is_empty() {
                    true => "IN (NULL)".to_string(),
                    false => format!("IN ({})", marks.join(", ")),
                })
            }
            (None, Some(s)) => {
                args.push(sender_key(s).into());
                Some(format!("= ?{}", args.len()))
            }
            (None, None) => None,
        };
        // One row per arrival: a knock let in is the message it became.
        sql.push_str(crate::story::ONCE);
        if let Some(s) = f.scope.as_deref().filter(|s| !s.is_empty()) {
            arg(&mut sql, &mut args, " AND r.scope = ?", s.to_string().into());
        }
        match f.status.as_deref() {
            None | Some("") => {}
            Some(s @ ("accepted" | "rejected")) => arg(&mut sql, &mut args, " AND r.status = ?", s.to_string().into()),
            Some(s) => arg(&mut sql, &mut args, " AND e.exec_status = ?", s.to_string().into()),
        }
        if let Some(t) = f.transport.as_deref().filter(|s| !s.is_empty()) {
            // "folder" matches "folder:<file name>".
            arg(
                &mut sql,
                &mut args,
                " AND (r.transport = ? OR substr(r.transport, 1, length(CAST(? AS TEXT)) + 1) = CAST(? AS TEXT) || ':')",
                t.to_string().into(),
            );
        }
        if f.search.as_deref().is_some_and(|q| !q.trim().is_empty()) {
            // Receipts are indexed in batches; a search sees every one stored so far.
            let (reply, answer) = blocking();
            self.enqueue(Job::IndexSearch { reply });
            self.commit_until_answered(&answer)?;
        }
        if let Some(q) = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty()).filter(|_| self.is_shared()) {
            // PostgreSQL has no FTS5 index: each word is looked for in the prompt, its
            // LIKE wildcards escaped so user text never becomes a pattern.
            for w in q.split_whitespace().take(16) {
                let pattern = format!("%{}%", w.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
                arg(&mut sql, &mut args, " AND r.prompt LIKE ? ESCAPE '\\'", pattern.into());
            }
        } else if let Some(q) = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            // Each word a quoted FTS5 string: user text never becomes query syntax.
            let query = q.split_whitespace().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect::<Vec<_>>().join(" ");
            arg(&mut sql, &mut args, " AND r.seq IN (SELECT rowid FROM receipts_fts WHERE receipts_fts MATCH ?)", query.into());
        }
        if let Some(b) = f.before_seq {
            arg(&mut sql, &mut args, " AND r.seq < ?", b.into());
        }
        if let Some(a) = f.after_seq {
            arg(&mut sql, &mut args, " AND r.seq > ?", a.into());
        }
        let limit = f.limit.unwrap_or(100).clamp(1, 500);
        args.push((limit as i64).into());
        let l = args.len();
        let sql = match sender {
            None => format!("{columns} FROM receipts r {joins} WHERE 1 = 1{sql} ORDER BY r.seq DESC LIMIT ?{l}"),
            // Newest first from the index by sender, and from the receipts stored since it
            // was last filled; one statement, so both halves read the same snapshot.
            Some(s) => format!(
                "SELECT * FROM ({columns} FROM receipts_by_sender b JOIN receipts r ON r.seq = b.seq {joins}
                    WHERE b.sender {s}{sql} ORDER BY b.seq DESC LIMIT ?{l}) by_sender
                 UNION ALL
                 SELECT * FROM ({columns} FROM receipts r {joins}
                    WHERE r.seq > (SELECT last_seq FROM search_progress) AND r.sender {s}{sql}
                    ORDER BY r.seq DESC LIMIT ?{l}) not_yet_indexed
                 ORDER BY 1 DESC LIMIT ?{l}"
            ),
        };
        let mut items: Vec<InboxItem> = self.read(|conn| {
            let stmt = conn.prepare(&sql)?;
            let args: Vec<&dyn Arg> = args.iter().map(|a| a as &dyn Arg).collect();
            let rows = stmt.query_map(&args, |r| {
                let exec: Option<String> = r.get(12)?;
                Ok(InboxItem {
                    seq: r.get(0)?,
                    receipt_id: r.get(1)?,
                    envelope_id: r.get(2)?,
                    status: r.get(3)?,
                    code: r.get(4)?,
                    message: r.get(5)?,
                    received_at: r.get(6)?,
                    transport: r.get(7)?,
                    sender: r.get(8)?,
                    // Both names are filled in below, from sealed entries only.
                    sender_name: None,
                    scope: r.get(9)?,
                    prompt_preview: r.get(10)?,
                    envelope_row: r.get(11)?,
                    exec_status: exec.as_deref().and_then(ExecStatus::parse),
                    payload_type: r.get(13)?,
                    conversation_id: r.get(14)?,
                    on_behalf_of: r.get(15)?,
                    on_behalf_of_name: None,
                    story: crate::story::from_row(r, 16)?,
                    flags: 0,
                })
            })?;
            rows.collect::<Result<_>>()
        })?;
        // Names only from entries as the gate sealed them (read apart from the rows: a
        // join on the trust table would show whatever name the database holds).
        let names = self.trust_names(items.iter().flat_map(|i| [i.sender.as_deref(), i.on_behalf_of.as_deref()]).flatten())?;
        for it in &mut items {
            it.sender_name = it.sender.as_deref().and_then(|k| names.get(k)).cloned();
            it.on_behalf_of_name = it.on_behalf_of.as_deref().and_then(|k| names.get(k)).cloned();
        }
        Ok(items)
    }

    /// The whole prompt a receipt kept (the list shows the first 240 characters).
    pub fn prompt_of(&self, receipt_id: &str) -> Result<Option<String>> {
        self.read(|c| Ok(c.query_row("SELECT prompt FROM receipts WHERE receipt_id = ?1", crate::sql::args![receipt_id], |r| r.get(0)).optional()?.flatten()))
    }
}
