//! Acceptance on PostgreSQL: the same checks as SQLite's (`replay::accept_one`), in the
//! same order, and the rows written by one statement ([`insert_many`]). A sender with rate
//! limits is checked and counted first, under its lock; a batch of senders without is
//! that one statement alone, sent with the transaction's BEGIN and the admission lock:
//! the committer's transaction is two round trips, this and its COMMIT
//! (docs/performance.md).

use std::collections::HashSet;

use crate::replay::{minute_of, over_rate, refusal, AcceptResult, Serialized};
use crate::sql::{Arg, Db};
use crate::value::Val;
use crate::{NewEnvelope, RateLimit, Result, StoreError};

/// What [`insert_many`] binds for one acceptance (all but its last column).
struct Insert<'a> {
    rec: &'a NewEnvelope,
    json: &'a Serialized,
    status: &'static str,
    outcome: Option<&'static str>,
    minute: i64,
}

impl<'a> Insert<'a> {
    fn new(rec: &'a NewEnvelope, json: &'a Serialized) -> Self {
        Insert {
            rec,
            json,
            status: rec.exec_status.as_str(),
            outcome: rec.receipt.outcome.map(gatehouse_code::Outcome::as_str),
            minute: minute_of(rec.received_ms),
        }
    }

    fn args(&self) -> Vec<&dyn Arg> {
        let (rec, r, json) = (self.rec, &self.rec.receipt, self.json);
        vec![
            &rec.envelope_id,
            &rec.sender,
            &rec.recipient,
            &rec.scope,
            &rec.payload_type,
            &rec.conversation_id,
            &rec.in_reply_to,
            &rec.on_behalf_of,
            &rec.prompt,
            &rec.timestamp,
            &rec.expires_at,
            &rec.received_at,
            &rec.received_ms,
            &rec.transport,
            &rec.signed_form,
            &rec.raw,
            &rec.raw_sha256,
            &r.receipt_id,
            &rec.executor,
            &self.status,
            &json.exec_result,
            &rec.executor_spec,
            &rec.door,
            &rec.nonce,
            &rec.expires_at_ms,
            &r.receipt_id,
            &r.envelope_id,
            &r.status,
            &r.code,
            &r.message,
            &r.received_at,
            &r.received_ms,
            &r.transport,
            &r.sender,
            &r.scope,
            &r.body,
            &r.body_truncated,
            &json.receipt,
            &r.prompt,
            &self.outcome,
            &self.minute,
        ]
    }
}

/// One acceptance (a sender with rate limits, which are counted under its lock).
pub(crate) fn accept_one(tx: &Db<'_>, rec: &NewEnvelope, limits: &RateLimit, json: &Serialized) -> AcceptResult {
    let (version, used) = check(tx, vec![Val::Blob(&rec.nonce)], false)?;
    if let Some(refused) = refusal(rec, Some(version), used.contains(&rec.nonce)) {
        return Ok(Err(refused));
    }
    if let Some(over) = over_rate(tx, &rec.sender, rec.received_ms, limits)? {
        return Ok(Err(over.into()));
    }
    let mut judged = insert(tx, None, &[Insert::new(rec, json)])?;
    judged.pop().ok_or_else(|| StoreError::Invalid("the acceptance was not judged".into()))?
}

/// The columns [`insert_many`] unnests: [`Insert::args`] in order, and last the admission
/// version each envelope was admitted under.
const COLUMNS: [(&str, &str); 42] = [
    ("envelope_id", "text"),
    ("sender", "text"),
    ("recipient", "text"),
    ("scope", "text"),
    ("payload_type", "text"),
    ("conversation_id", "text"),
    ("in_reply_to", "text"),
    ("on_behalf_of", "text"),
    ("prompt", "text"),
    ("sent_at", "text"),
    ("expires_at", "text"),
    ("received_at", "text"),
    ("received_ms", "bigint"),
    ("transport", "text"),
    ("signed_form", "text"),
    ("raw", "text"),
    ("raw_sha256", "text"),
    ("receipt_id", "text"),
    ("executor", "text"),
    ("exec_status", "text"),
    ("exec_result", "text"),
    ("executor_spec", "text"),
    ("door", "text"),
    ("nonce", "bytea"),
    ("expires_at_ms", "bigint"),
    ("r_receipt_id", "text"),
    ("r_envelope_id", "text"),
    ("r_status", "text"),
    ("r_code", "text"),
    ("r_message", "text"),
    ("r_received_at", "text"),
    ("r_received_ms", "bigint"),
    ("r_transport", "text"),
    ("r_sender", "text"),
    ("r_scope", "text"),
    ("r_body", "text"),
    ("r_body_truncated", "bigint"),
    ("r_receipt", "text"),
    ("r_prompt", "text"),
    ("r_outcome", "text"),
    ("minute", "bigint"),
    ("admitted", "bigint"),
];

/// A batch's envelopes, nonces, receipts and counts, as SQLite's path writes them (its
/// receipts by sender are an index here: `schema`, step 7), in one statement with its
/// checks: each argument is a column of the batch (an array); an envelope whose nonce was used or whose admission
/// changed is left out (each nonce looked up by itself in the unique index: a plan kept
/// from when the table was small scanned every row for `nonce = ANY(…)`, measured). A
/// sender's usage is counted once per minute for the batch, so its row is written once,
/// not once per envelope. Returns the place in the batch (1-based) and the envelope's id
/// of each row inserted.
fn insert_many() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(insert_many_sql)
}

fn insert_many_sql() -> String {
    let unnest: Vec<String> = COLUMNS.iter().enumerate().map(|(i, (_, ty))| format!("?{}::{ty}[]", i + 1)).collect();
    let names: Vec<&str> = COLUMNS.iter().map(|(n, _)| *n).collect();
    format!(
        "WITH t AS (SELECT t.* FROM unnest({}) WITH ORDINALITY AS t({}, ord)
        LEFT JOIN LATERAL (SELECT 1 AS seen FROM nonces WHERE nonces.nonce = t.nonce LIMIT 1) AS used ON true
     WHERE used.seen IS NULL AND (t.admitted IS NULL OR t.admitted = (SELECT n FROM admission_version))),
 e AS (INSERT INTO envelopes (envelope_id, sender, recipient, scope, payload_type, conversation_id,
        in_reply_to, on_behalf_of, prompt, timestamp, expires_at, received_at, received_ms,
        transport, signed_form, raw, raw_sha256, receipt_id, executor, exec_status, exec_result,
        exec_updated_at, executor_spec, door)
     SELECT envelope_id, sender, recipient, scope, payload_type, conversation_id, in_reply_to,
        on_behalf_of, prompt, sent_at, expires_at, received_at, received_ms, transport, signed_form,
        raw, raw_sha256, receipt_id, executor, exec_status, exec_result,
        CASE WHEN exec_result IS NULL THEN NULL ELSE received_at END, executor_spec, door
     FROM t ORDER BY ord RETURNING id, receipt_id),
 j AS (SELECT t.*, e.id AS row FROM t JOIN e USING (receipt_id)),
 n AS (INSERT INTO nonces (nonce, expires_at_ms, envelope_row) SELECT nonce, expires_at_ms, row FROM j ORDER BY ord),
 r AS (INSERT INTO receipts (receipt_id, envelope_id, status, code, message, received_at, received_ms,
        transport, sender, scope, body, body_truncated, receipt, prompt, envelope_row, outcome)
     SELECT r_receipt_id, r_envelope_id, r_status, r_code, r_message, r_received_at, r_received_ms,
        r_transport, r_sender, r_scope, r_body, r_body_truncated, r_receipt, r_prompt, row, r_outcome
     FROM j ORDER BY ord),
 u AS (INSERT INTO usage_minutes (sender, minute, writer, n)
     SELECT sender, minute, pg_backend_pid(), count(*) FROM t GROUP BY sender, minute ORDER BY sender, minute
     ON CONFLICT (sender, minute, writer) DO UPDATE SET n = usage_minutes.n + excluded.n)
 SELECT ord, row FROM j",
        unnest.join(", "),
        names.join(", ")
    )
}

/// The admission lock taken shared ([`super::ADMISSION_LOCK`]): a change made on any node
/// takes it exclusively, so it waits for this acceptance's commit, or this acceptance's
/// reads for that change's.
fn admission_lock() -> String {
    format!("SELECT pg_advisory_xact_lock_shared({})", super::ADMISSION_LOCK)
}

/// The admission version and which of the nonces were used before, read once the
/// admission lock is held.
const CHECK: &str = "SELECT (SELECT n FROM admission_version),
    ARRAY(SELECT q.nonce FROM unnest(?1::bytea[]) AS q(nonce)
          CROSS JOIN LATERAL (SELECT 1 FROM nonces WHERE nonces.nonce = q.nonce LIMIT 1) AS used)";

/// [`CHECK`], after the admission lock unless `locked`.
fn check(tx: &Db<'_>, nonces: Vec<Val<'_>>, locked: bool) -> Result<(i64, HashSet<Vec<u8>>)> {
    let Db::Pg(conn) = tx else {
        return Err(StoreError::Invalid("this acceptance is PostgreSQL's".into()));
    };
    let lock = admission_lock();
    let rows = conn.query_columns((!locked).then_some(lock.as_str()), CHECK, &[nonces])?;
    let row = rows.first().ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    let (version, used): (i64, Vec<Vec<u8>>) = (row.try_get(0)?, row.try_get(1)?);
    Ok((version, used.into_iter().collect()))
}

/// `inserts` in one statement after `first` (see [`super::Conn::after`]), and why any was
/// left out: one result each, in order.
fn insert(tx: &Db<'_>, first: Option<&str>, inserts: &[Insert<'_>]) -> Result<Vec<AcceptResult>> {
    let Db::Pg(conn) = tx else {
        return Err(StoreError::Invalid("this acceptance is PostgreSQL's".into()));
    };
    let mut columns: Vec<Vec<Val<'_>>> = (0..COLUMNS.len()).map(|_| Vec::with_capacity(inserts.len())).collect();
    for insert in inserts {
        let admitted = insert.rec.admission_version.map_or(Val::Null, Val::Int);
        for (column, val) in columns.iter_mut().zip(insert.args().into_iter().map(|a| a.val()).chain([admitted])) {
            column.push(val);
        }
    }
    let mut out: Vec<Option<AcceptResult>> = inserts.iter().map(|_| None).collect();
    for row in conn.query_columns(first, insert_many(), &columns)? {
        let (ord, id): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        if let Some(slot) = usize::try_from(ord - 1).ok().and_then(|k| out.get_mut(k)) {
            *slot = Some(Ok(Ok(id)));
        }
    }
    let left_out: Vec<usize> = (0..inserts.len()).filter(|k| out[*k].is_none()).collect();
    if !left_out.is_empty() {
        let (version, used) = check(tx, left_out.iter().map(|k| Val::Blob(&inserts[*k].rec.nonce)).collect(), true)?;
        for k in left_out {
            let rec = inserts[k].rec;
            // Under the lock the version cannot have moved, and a used nonce stays used:
            // what left the envelope out is still there to be named.
            let refused = refusal(rec, Some(version), used.contains(&rec.nonce))
                .ok_or_else(|| StoreError::Invalid("an acceptance of the batch was left out for no reason found".into()))?;
            out[k] = Some(Ok(Err(refused)));
        }
    }
    out.into_iter().map(|r| r.ok_or_else(|| StoreError::Invalid("an acceptance of the batch was not judged".into()))).collect()
}

/// Acceptances of senders without rate limits, in batch order, in one statement sent
/// with the admission lock (and the transaction's BEGIN): one round trip for the batch.
/// Why one was left out is read only when one was. A nonce twice in the batch is judged
/// the second time after the rest, as one after the other would find it.
pub(crate) fn accept_many(tx: &Db<'_>, recs: &[(&NewEnvelope, &Serialized)]) -> Result<Vec<AcceptResult>> {
    if recs.is_empty() {
        return Ok(Vec::new());
    }
    let mut seen = HashSet::new();
    let (mut places, mut inserts, mut again) = (Vec::new(), Vec::new(), Vec::new());
    for (at, (rec, json)) in recs.iter().enumerate() {
        if seen.insert(&rec.nonce) {
            places.push(at);
            inserts.push(Insert::new(rec, json));
        } else {
            again.push(at);
        }
    }
    let mut out: Vec<Option<AcceptResult>> = recs.iter().map(|_| None).collect();
    for (at, judged) in places.into_iter().zip(insert(tx, Some(&admission_lock()), &inserts)?) {
        out[at] = Some(judged);
    }
    for at in again {
        let (rec, json) = recs[at];
        out[at] = Some(accept_one(tx, rec, &RateLimit::default(), json));
    }
    out.into_iter().map(|r| r.ok_or_else(|| StoreError::Invalid("an acceptance of the batch was not judged".into()))).collect()
}
