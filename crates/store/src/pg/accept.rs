//! Acceptance on PostgreSQL: the same checks as SQLite's (`replay::accept_one`), in the
//! same order, in two statements instead of six, and for a batch of senders without rate
//! limits, each of the two sent for the whole batch at once (pipelined on the node's
//! connection). Every statement waits for the database; a node's committer runs its
//! batch's acceptances in one transaction, so round trips, not CPU, bounded a node
//! (docs/performance.md).

use crate::replay::{minute_of, over_rate, refusal, AcceptRefusal, AcceptResult, Serialized};
use crate::sql::{args, Arg, Db};
use crate::{NewEnvelope, RateLimit, Result};

/// The admission version (share-locked until the commit: a change made on any node waits
/// for this acceptance, or this read for that change) and whether the nonce was used.
const CHECK: &str = "SELECT (SELECT n FROM admission_version FOR SHARE), EXISTS (SELECT 1 FROM nonces WHERE nonce = ?1)";

/// The envelope, its nonce, its receipt (and its entry by sender) and its count, as
/// SQLite's path writes them, in one statement.
const INSERT: &str = "WITH e AS (INSERT INTO envelopes (envelope_id, sender, recipient, scope, payload_type, conversation_id,
        in_reply_to, on_behalf_of, prompt, timestamp, expires_at, received_at, received_ms,
        transport, signed_form, raw, raw_sha256, receipt_id, executor, exec_status, exec_result,
        exec_updated_at, executor_spec)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
        ?21, CASE WHEN CAST(?21 AS TEXT) IS NULL THEN NULL ELSE ?12 END, ?22) RETURNING id),
 n AS (INSERT INTO nonces (nonce, expires_at_ms, envelope_row) SELECT ?23, ?24, id FROM e),
 r AS (INSERT INTO receipts (receipt_id, envelope_id, status, code, message, received_at, received_ms,
        transport, sender, scope, body, body_truncated, receipt, prompt, envelope_row)
     SELECT ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, id FROM e RETURNING sender, seq),
 b AS (INSERT INTO receipts_by_sender (sender, seq) SELECT sender, seq FROM r WHERE sender IS NOT NULL),
 u AS (INSERT INTO usage_minutes (sender, minute, n) VALUES (?2, ?39, 1)
     ON CONFLICT (sender, minute) DO UPDATE SET n = usage_minutes.n + 1)
 SELECT id FROM e";

/// What [`INSERT`] binds for one acceptance.
struct Insert<'a> {
    rec: &'a NewEnvelope,
    json: &'a Serialized,
    status: &'static str,
    minute: i64,
}

impl<'a> Insert<'a> {
    fn new(rec: &'a NewEnvelope, json: &'a Serialized) -> Self {
        Insert { rec, json, status: rec.exec_status.as_str(), minute: minute_of(rec.received_ms) }
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
            &self.minute,
        ]
    }
}

/// One acceptance (a sender with rate limits, which are counted under its lock).
pub(crate) fn accept_one(tx: &Db<'_>, rec: &NewEnvelope, limits: &RateLimit, json: &Serialized) -> AcceptResult {
    let (version, replayed) = tx.query_row(CHECK, args![rec.nonce], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if let Some(refused) = refusal(rec, Some(version), replayed) {
        return Ok(Err(refused));
    }
    if let Some(over) = over_rate(tx, &rec.sender, rec.received_ms, limits)? {
        return Ok(Err(over.into()));
    }
    let insert = Insert::new(rec, json);
    Ok(Ok(tx.query_row(INSERT, &insert.args(), |r| r.get::<i64>(0))?))
}

/// Acceptances of senders without rate limits, in batch order: the checks of all sent
/// at once, then the inserts of those that pass. A nonce twice in the batch is a replay
/// the second time, as one after the other would find it.
pub(crate) fn accept_many(tx: &Db<'_>, recs: &[(&NewEnvelope, &Serialized)]) -> Result<Vec<AcceptResult>> {
    let check_args: Vec<Vec<&dyn Arg>> = recs.iter().map(|(rec, _)| vec![&rec.nonce as &dyn Arg]).collect();
    let checks = tx.query_all(CHECK, &check_args, |r| Ok((r.get::<i64>(0)?, r.get::<bool>(1)?)))?;
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Option<AcceptResult>> = Vec::with_capacity(recs.len());
    let mut inserts = Vec::new();
    for ((rec, json), checked) in recs.iter().zip(checks) {
        let refused = refusal(rec, Some(checked.0), checked.1).or_else(|| (!seen.insert(&rec.nonce)).then_some(AcceptRefusal::Replay));
        match refused {
            Some(r) => out.push(Some(Ok(Err(r)))),
            None => {
                inserts.push((out.len(), Insert::new(rec, json)));
                out.push(None);
            }
        }
    }
    let insert_args: Vec<Vec<&dyn Arg>> = inserts.iter().map(|(_, i)| i.args()).collect();
    let ids = tx.query_all(INSERT, &insert_args, |r| r.get::<i64>(0))?;
    for ((at, _), id) in inserts.iter().zip(ids) {
        out[*at] = Some(Ok(Ok(id)));
    }
    Ok(out.into_iter().map(|r| r.expect("every acceptance was checked or inserted")).collect())
}
