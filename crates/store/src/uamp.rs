//! UAMP messages, streams, deltas and bearer tokens.
//!
//! Low volume next to EPP ingest, so these write directly on the writer connection,
//! each call one transaction, instead of through the group committer.

use crate::sql::{args, Db, Optional, Row};
use serde::Serialize;

use crate::{insert_receipt, sender_key, RateLimit, ReceiptRow, Result, Store};

/// A UAMP envelope to store, as the inbox read it (or as Gatehouse sent it).
#[derive(Debug, Clone)]
pub struct NewUampMessage {
    /// The UUID, lower-case and bare, whatever form the envelope used: one message, one id.
    pub message_id: String,
    /// "in" or "out".
    pub direction: &'static str,
    pub sender: String,
    pub recipients: Vec<String>,
    pub intent: String,
    pub stream_id: Option<String>,
    pub reply_to: Option<String>,
    pub scope: Option<String>,
    pub body_type: String,
    pub content: String,
    pub ts: String,
    pub received_at: String,
    pub received_ms: i64,
    pub raw: String,
    pub receipt_id: String,
}

/// A stream opened by an `ask` / `subscribe` (spec 10).
#[derive(Debug, Clone)]
pub struct NewStream {
    pub stream_id: String,
    pub direction: &'static str,
    pub peer: String,
    pub delta_window: u32,
    /// The executor chosen when the ask was accepted, whole (JSON): what runs for it.
    pub executor_spec: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UampMessageRow {
    pub id: i64,
    pub message_id: String,
    pub direction: String,
    pub sender: String,
    pub recipients: Vec<String>,
    pub intent: String,
    pub stream_id: Option<String>,
    pub reply_to: Option<String>,
    pub thread: String,
    pub scope: Option<String>,
    pub body_type: String,
    pub content: String,
    pub ts: String,
    pub received_at: String,
    pub receipt_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StreamRow {
    pub stream_id: String,
    pub message_row: i64,
    pub direction: String,
    pub peer: String,
    /// NEW, IN_PROGRESS, COMPLETED, CANCELLED or ERROR.
    pub state: String,
    pub delta_window: u32,
    pub next_seq: i64,
    pub acked_seq: i64,
    pub updated_at: String,
    pub detail: Option<String>,
    /// Outgoing streams: the file the `chunk_b64` frames were reassembled into.
    pub file: Option<String>,
    pub mime: Option<String>,
    /// Bytes of chunk payload so far.
    pub bytes: i64,
}

/// A UAMP peer the user added to send to: where it is, the certificate pinned then, and
/// its signed manifest as shown to the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PeerRow {
    pub did: String,
    pub name: String,
    pub url: String,
    pub cert_sha256: String,
    pub manifest: serde_json::Value,
    pub added_at: String,
}

/// Why an envelope that passed every check was still not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UampRefusal {
    /// Its message id was accepted before.
    Replay,
    /// Its `stream_id` names a stream that exists.
    StreamExists,
    /// The sender's policy allows no more messages now.
    RateLimited { window: &'static str, limit: u32, retry_after_secs: u64 },
    /// What admitted it (trust, blocks, settings) changed since it was decided.
    Stale,
}

pub const STREAM_STATES: [&str; 5] = ["NEW", "IN_PROGRESS", "COMPLETED", "CANCELLED", "ERROR"];

/// The note on a NEW stream whose sender's policy says "ask me first": it waits for the
/// user, not for an executor.
pub const HELD_FOR_CONSENT: &str = "waiting for your consent";

fn message_from_row(r: &Row<'_>) -> Result<UampMessageRow> {
    let recipients: String = r.get(4)?;
    Ok(UampMessageRow {
        id: r.get(0)?,
        message_id: r.get(1)?,
        direction: r.get(2)?,
        sender: r.get(3)?,
        recipients: serde_json::from_str(&recipients).unwrap_or_default(),
        intent: r.get(5)?,
        stream_id: r.get(6)?,
        reply_to: r.get(7)?,
        thread: r.get(8)?,
        scope: r.get(9)?,
        body_type: r.get(10)?,
        content: r.get(11)?,
        ts: r.get(12)?,
        received_at: r.get(13)?,
        receipt_id: r.get(14)?,
    })
}

const MESSAGE_COLUMNS: &str = "id, message_id, direction, sender, recipients, intent, stream_id, reply_to, thread, scope,
    body_type, content, ts, received_at, receipt_id";

fn stream_from_row(r: &Row<'_>) -> Result<StreamRow> {
    Ok(StreamRow {
        stream_id: r.get(0)?,
        message_row: r.get(1)?,
        direction: r.get(2)?,
        peer: r.get(3)?,
        state: r.get(4)?,
        delta_window: r.get(5)?,
        next_seq: r.get(6)?,
        acked_seq: r.get(7)?,
        updated_at: r.get(8)?,
        detail: r.get(9)?,
        file: r.get(10)?,
        mime: r.get(11)?,
        bytes: r.get(12)?,
    })
}

const STREAM_COLUMNS: &str = "stream_id, message_row, direction, peer, state, delta_window, next_seq, acked_seq, updated_at, detail, file, mime, bytes";

fn peer_from_row(r: &Row<'_>) -> Result<PeerRow> {
    let manifest: String = r.get(4)?;
    Ok(PeerRow {
        did: r.get(0)?,
        name: r.get(1)?,
        url: r.get(2)?,
        cert_sha256: r.get(3)?,
        manifest: serde_json::from_str(&manifest).unwrap_or_default(),
        added_at: r.get(5)?,
    })
}

fn insert_message(tx: &Db<'_>, msg: &NewUampMessage) -> Result<i64> {
    let thread: String = match &msg.reply_to {
        Some(parent) => {
            tx.query_row("SELECT thread FROM uamp_messages WHERE message_id = ?1", args![parent], |r| r.get(0)).optional()?.unwrap_or_else(|| parent.clone())
        }
        None => msg.message_id.clone(),
    };
    let inserted_id = tx.query_row(
        "INSERT INTO uamp_messages (message_id, direction, sender, recipients, intent, stream_id, reply_to, thread, scope,
            body_type, content, ts, received_at, received_ms, raw, receipt_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) RETURNING id",
        args![
            msg.message_id,
            msg.direction,
            sender_key(&msg.sender),
            serde_json::to_string(&msg.recipients)?,
            msg.intent,
            msg.stream_id,
            msg.reply_to,
            thread,
            msg.scope,
            msg.body_type,
            msg.content,
            msg.ts,
            msg.received_at,
            msg.received_ms,
            msg.raw,
            msg.receipt_id,
        ],
        |r| r.get::<i64>(0),
    )?;
    Ok(inserted_id)
}

fn insert_stream(tx: &Db<'_>, s: &NewStream, row: i64, now: &str) -> Result<()> {
    tx.execute(
        "INSERT INTO uamp_streams (stream_id, message_row, direction, peer, state, delta_window, updated_at, executor_spec)
         VALUES (?1, ?2, ?3, ?4, 'NEW', ?5, ?6, ?7)",
        args![s.stream_id, row, s.direction, sender_key(&s.peer), s.delta_window, now, s.executor_spec],
    )?;
    Ok(())
}

impl Store {
    /// Stores an accepted message, its stream and its receipt in one transaction; the
    /// replay, stream and rate checks run inside it so two racing copies cannot both pass.
    /// `admitted`: the registry's version the gate decided on (as for an envelope, the
    /// commit refuses it if trust, blocks or settings changed since).
    pub fn uamp_accept(
        &self,
        msg: &NewUampMessage,
        stream: Option<&NewStream>,
        receipt: &ReceiptRow,
        limits: &RateLimit,
        admitted: Option<i64>,
    ) -> Result<std::result::Result<i64, UampRefusal>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if crate::replay::changed_since(&tx.db(), admitted)? {
            return Ok(Err(UampRefusal::Stale));
        }
        if crate::replay::uamp_message_seen(&tx.db(), &msg.message_id)? {
            return Ok(Err(UampRefusal::Replay));
        }
        if let Some(s) = stream {
            let exists = tx.query_row("SELECT 1 FROM uamp_streams WHERE stream_id = ?1", args![&s.stream_id], |_| Ok(())).optional()?.is_some();
            if exists {
                return Ok(Err(UampRefusal::StreamExists));
            }
        }
        // The sender's rate limits, counted as every door counts them (per minute, in
        // `usage_minutes`): acknowledging or cancelling a stream steers it and is not counted.
        let sender = sender_key(&msg.sender);
        if let Some(over) = crate::replay::over_rate(&tx.db(), &sender, msg.received_ms, limits)? {
            return Ok(Err(UampRefusal::RateLimited { window: over.window, limit: over.limit, retry_after_secs: over.retry_after_secs }));
        }
        if msg.direction == "in" && !matches!(msg.intent.as_str(), "progress" | "cancel") {
            crate::replay::count_use(&tx.db(), &sender, msg.received_ms)?;
        }
        let row = match insert_message(&tx.db(), msg) {
            // Another node stored the same id after this one looked (a team's gate).
            Err(e) if e.is_duplicate() => return Ok(Err(UampRefusal::Replay)),
            r => r?,
        };
        if let Some(s) = stream {
            insert_stream(&tx.db(), s, row, &msg.received_at)?;
        }
        insert_receipt(&tx.db(), receipt)?;
        tx.commit()?;
        Ok(Ok(row))
    }

    pub fn uamp_message(&self, message_id: &str) -> Result<Option<UampMessageRow>> {
        self.read(|c| {
            c.query_row(&format!("SELECT {MESSAGE_COLUMNS} FROM uamp_messages WHERE message_id = ?1"), args![message_id], message_from_row).optional()
        })
    }

    /// The envelope exactly as it arrived.
    pub fn uamp_message_raw(&self, row: i64) -> Result<Option<String>> {
        self.read(|c| c.query_row("SELECT raw FROM uamp_messages WHERE id = ?1", args![row], |r| r.get(0)).optional())
    }

    pub fn uamp_message_by_row(&self, row: i64) -> Result<Option<UampMessageRow>> {
        self.read(|c| c.query_row(&format!("SELECT {MESSAGE_COLUMNS} FROM uamp_messages WHERE id = ?1"), args![row], message_from_row).optional())
    }

    /// The messages of one conversation (a root message and everything replying to it), oldest first.
    pub fn uamp_thread(&self, thread: &str) -> Result<Vec<UampMessageRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!("SELECT {MESSAGE_COLUMNS} FROM uamp_messages WHERE thread = ?1 ORDER BY id"))?;
            let rows = stmt.query_map(args![thread], message_from_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// The newest messages first.
    pub fn uamp_messages(&self, limit: u32) -> Result<Vec<UampMessageRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!("SELECT {MESSAGE_COLUMNS} FROM uamp_messages ORDER BY id DESC LIMIT ?1"))?;
            let rows = stmt.query_map(args![limit], message_from_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub fn uamp_stream(&self, stream_id: &str) -> Result<Option<StreamRow>> {
        self.read(|c| c.query_row(&format!("SELECT {STREAM_COLUMNS} FROM uamp_streams WHERE stream_id = ?1"), args![stream_id], stream_from_row).optional())
    }

    /// The executor chosen when the stream's ask was accepted (JSON), if one was kept.
    pub fn uamp_stream_executor(&self, stream_id: &str) -> Result<Option<String>> {
        self.read(|c| {
            Ok(c.query_row("SELECT executor_spec FROM uamp_streams WHERE stream_id = ?1", args![stream_id], |r| r.get::<Option<String>>(0))
                .optional()?
                .flatten())
        })
    }

    pub fn uamp_streams(&self, limit: u32) -> Result<Vec<StreamRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!("SELECT {STREAM_COLUMNS} FROM uamp_streams ORDER BY message_row DESC LIMIT ?1"))?;
            let rows = stmt.query_map(args![limit], stream_from_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Moves a stream to `state` (with a note for the user).
    pub fn uamp_set_state(&self, stream_id: &str, state: &str, detail: Option<&str>, now: &str) -> Result<()> {
        debug_assert!(STREAM_STATES.contains(&state));
        self.conn()?.execute(
            "UPDATE uamp_streams SET state = ?2, detail = coalesce(?3, detail), updated_at = ?4 WHERE stream_id = ?1",
            args![stream_id, state, detail, now],
        )?;
        Ok(())
    }

    /// Keeps a frame (durably, before anyone sees it) and advances the stream's counter;
    /// a terminal frame also sets the final state.
    pub fn uamp_append_delta(&self, stream_id: &str, seq: u64, frame: &str, state: Option<&str>, now: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute("INSERT INTO uamp_deltas (stream_id, delta_seq, frame) VALUES (?1, ?2, ?3)", args![stream_id, seq as i64, frame])?;
        tx.execute(
            "UPDATE uamp_streams SET next_seq = ?2, state = coalesce(?3, state), updated_at = ?4 WHERE stream_id = ?1",
            args![stream_id, seq as i64 + 1, state, now],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records that the consumer has every frame up to `seq`; returns the acknowledged
    /// sequence number now in force (acknowledgements never move backwards).
    pub fn uamp_ack(&self, stream_id: &str, seq: i64) -> Result<i64> {
        let conn = self.conn()?;
        conn.execute("UPDATE uamp_streams SET acked_seq = CASE WHEN acked_seq > ?2 THEN acked_seq ELSE ?2 END WHERE stream_id = ?1", args![stream_id, seq])?;
        conn.query_row("SELECT acked_seq FROM uamp_streams WHERE stream_id = ?1", args![stream_id], |r| r.get(0))
    }

    /// Frames of a stream from `from_seq` on, in order.
    pub fn uamp_deltas(&self, stream_id: &str, from_seq: u64) -> Result<Vec<(u64, String)>> {
        self.read(|c| {
            let stmt = c.prepare_cached("SELECT delta_seq, frame FROM uamp_deltas WHERE stream_id = ?1 AND delta_seq >= ?2 ORDER BY delta_seq")?;
            let rows = stmt.query_map(args![stream_id, from_seq as i64], |r| Ok((r.get::<i64>(0)? as u64, r.get(1)?)))?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Streams a restart interrupted: incoming ones still NEW or IN_PROGRESS (not those
    /// waiting for the user, who may still decide).
    pub fn uamp_unfinished_streams(&self) -> Result<Vec<StreamRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!(
                "SELECT {STREAM_COLUMNS} FROM uamp_streams WHERE direction = 'in' AND state IN ('NEW', 'IN_PROGRESS')
                   AND coalesce(detail, '') <> ?1"
            ))?;
            let rows = stmt.query_map(args![HELD_FOR_CONSENT], stream_from_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Incoming streams waiting for the user's consent, oldest first.
    pub fn uamp_held_streams(&self) -> Result<Vec<StreamRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!(
                "SELECT {STREAM_COLUMNS} FROM uamp_streams WHERE direction = 'in' AND state = 'NEW' AND detail = ?1 ORDER BY message_row"
            ))?;
            let rows = stmt.query_map(args![HELD_FOR_CONSENT], stream_from_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Marks a NEW stream as waiting for the user; false if it is not NEW.
    pub fn uamp_hold(&self, stream_id: &str, now: &str) -> Result<bool> {
        Ok(self
            .conn()?
            .execute("UPDATE uamp_streams SET detail = ?2, updated_at = ?3 WHERE stream_id = ?1 AND state = 'NEW'", args![stream_id, HELD_FOR_CONSENT, now])?
            > 0)
    }

    /// Takes a held stream off the waiting list (the user decided); false if it was not
    /// waiting, so a decision is applied once.
    pub fn uamp_unhold(&self, stream_id: &str, now: &str) -> Result<bool> {
        Ok(self.conn()?.execute(
            "UPDATE uamp_streams SET detail = NULL, updated_at = ?3 WHERE stream_id = ?1 AND state = 'NEW' AND detail = ?2",
            args![stream_id, HELD_FOR_CONSENT, now],
        )? > 0)
    }

    // ---- outgoing: what Gatehouse sent to peers and what came back -------------------

    /// Keeps a message Gatehouse sent (and the stream its `ask` opened at the peer).
    pub fn uamp_record_out(&self, msg: &NewUampMessage, stream: Option<&NewStream>) -> Result<i64> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let row = insert_message(&tx.db(), msg)?;
        if let Some(s) = stream {
            insert_stream(&tx.db(), s, row, &msg.received_at)?;
        }
        tx.commit()?;
        Ok(row)
    }

    /// Keeps a frame received on an outgoing stream, with the chunk bytes it added.
    pub fn uamp_out_frame(&self, stream_id: &str, seq: u64, frame: &str, chunk_bytes: usize, state: Option<&str>, now: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute("INSERT INTO uamp_deltas (stream_id, delta_seq, frame) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING", args![stream_id, seq as i64, frame])?;
        tx.execute(
            "UPDATE uamp_streams SET next_seq = ?2, bytes = bytes + ?3, state = coalesce(?4, state), updated_at = ?5 WHERE stream_id = ?1",
            args![stream_id, seq as i64 + 1, chunk_bytes as i64, state, now],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records where an outgoing stream's chunks were reassembled, and as what.
    pub fn uamp_set_file(&self, stream_id: &str, file: &str, mime: Option<&str>) -> Result<()> {
        self.conn()?.execute("UPDATE uamp_streams SET file = ?2, mime = ?3 WHERE stream_id = ?1", args![stream_id, file, mime])?;
        Ok(())
    }

    // ---- peers Gatehouse sends to ----------------------------------------------------

    /// Adds a peer, or updates it (a new address or certificate the user confirmed).
    pub fn uamp_peer_put(&self, p: &PeerRow) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO uamp_peers (did, name, url, cert_sha256, manifest, added_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(did) DO UPDATE SET name = ?2, url = ?3, cert_sha256 = ?4, manifest = ?5",
            args![sender_key(&p.did), p.name, p.url, p.cert_sha256, p.manifest.to_string(), p.added_at],
        )?;
        Ok(())
    }

    pub fn uamp_peers(&self) -> Result<Vec<PeerRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached("SELECT did, name, url, cert_sha256, manifest, added_at FROM uamp_peers ORDER BY name")?;
            let rows = stmt.query_map(args![], peer_from_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// A peer by its DID, or by the name the user gave it.
    pub fn uamp_peer(&self, did_or_name: &str) -> Result<Option<PeerRow>> {
        self.read(|c| {
            c.query_row(
                "SELECT did, name, url, cert_sha256, manifest, added_at FROM uamp_peers WHERE did = ?1 OR name = ?2 ORDER BY did = ?1 DESC LIMIT 1",
                args![sender_key(did_or_name), did_or_name],
                peer_from_row,
            )
            .optional()
        })
    }

    pub fn uamp_peer_remove(&self, did: &str) -> Result<bool> {
        Ok(self.conn()?.execute("DELETE FROM uamp_peers WHERE did = ?1", args![sender_key(did)])? > 0)
    }

    // ---- bearer tokens (only hashes are stored) ---------------------------------------

    pub fn uamp_token_add(&self, token_sha256: &str, sender: &str, now: &str) -> Result<()> {
        self.sealed_write(|tx| {
            tx.execute("INSERT INTO uamp_tokens (token_sha256, sender, created_at) VALUES (?1, ?2, ?3)", args![token_sha256, sender_key(sender), now])?;
            Ok(())
        })
    }

    /// Whose token this is, if the gate issued it (a token's hash put into the database
    /// outside Gatehouse lets nobody in: `seal`).
    pub fn uamp_token_sender(&self, token_sha256: &str) -> Result<Option<String>> {
        self.read(|c| {
            c.snapshot(|db| match self.judge(db, crate::seal::UAMP_TOKENS, token_sha256)? {
                (crate::seal::Judged::Sealed, Some(mut cols)) => Ok(cols.first_mut().and_then(Option::take)),
                _ => Ok(None),
            })
        })
    }

    /// Revokes every token of a sender; returns how many there were.
    pub fn uamp_tokens_revoke(&self, sender: &str) -> Result<usize> {
        let sender = sender_key(sender);
        self.sealed_write(|tx| tx.execute("DELETE FROM uamp_tokens WHERE sender = ?1", args![sender]))
    }
}
