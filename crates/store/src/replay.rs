//! Replay, for every door (EPP nonces, UAMP message ids, IntentWeb attribution nonces),
//! and EPP acceptance: an envelope's nonce, the envelope and its receipt in one
//! transaction ([`accept_one`]), where a nonce seen before is refused ([`AcceptRefusal::Replay`])
//! and rate limits are counted per sender per minute.

use crate::sql::{args, Db, Optional};
use crate::*;

// ---- the replay checks of every door, each run inside the transaction that keeps
// what it admits (so two racing copies cannot both pass) ----

/// EPP (spec 5.1 step 7): an envelope's nonce, kept until the envelope expires.
pub(crate) fn epp_nonce_used(c: &Db<'_>, nonce: &[u8]) -> Result<bool> {
    Ok(c.prepare_cached("SELECT 1 FROM nonces WHERE nonce = ?1")?.query_row(args![nonce], |_| Ok(())).optional()?.is_some())
}

/// UAMP: a message id, unique for good.
pub(crate) fn uamp_message_seen(c: &Db<'_>, message_id: &str) -> Result<bool> {
    Ok(c.query_row("SELECT 1 FROM uamp_messages WHERE message_id = ?1", args![message_id], |_| Ok(())).optional()?.is_some())
}

/// IntentWeb: an attribution nonce, per IntentSite.
pub(crate) fn iw_nonce_used(c: &Db<'_>, origin: &str, nonce: &str) -> Result<bool> {
    Ok(c.query_row("SELECT 1 FROM iw_nonces WHERE origin = ?1 AND nonce = ?2", args![origin, nonce], |_| Ok(())).optional()?.is_some())
}

/// What an acceptance comes to: the envelope's row, or why it was refused.
pub(crate) type AcceptResult = Result<Result<i64, AcceptRefusal>>;

/// A write's JSON columns as text, serialized by the caller's thread: the committer is
/// the one thread every acceptance waits for, so it only binds and inserts.
pub(crate) struct Serialized {
    pub(crate) receipt: String,
    pub(crate) exec_result: Option<String>,
}

/// Why an acceptance was refused inside the transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptRefusal {
    Replay,
    /// What admitted the envelope (trust, blocks, settings) changed before its commit.
    Stale,
    RateLimited {
        window: &'static str,
        limit: u32,
        retry_after_secs: u64,
    },
}

/// What the checks inside the accepting transaction found, in the order they are judged
/// (both engines): what admitted the envelope changed since (`version` read now), then a
/// nonce used before.
pub(crate) fn refusal(rec: &NewEnvelope, version: Option<i64>, replayed: bool) -> Option<AcceptRefusal> {
    match (rec.admission_version, version) {
        (Some(admitted), Some(now)) if admitted != now => Some(AcceptRefusal::Stale),
        _ => replayed.then_some(AcceptRefusal::Replay),
    }
}

/// One acceptance on SQLite (PostgreSQL's is `pg::accept`).
pub(crate) fn accept_one(tx: &Db<'_>, rec: &NewEnvelope, limits: &RateLimit, json: &Serialized) -> AcceptResult {
    // The write lock is held: nothing can change admission until this commits.
    let version = match rec.admission_version {
        Some(_) => Some(tx.prepare_cached("SELECT n FROM admission_version")?.query_row(args![], |r| r.get::<i64>(0))?),
        None => None,
    };
    if let Some(refused) = refusal(rec, version, epp_nonce_used(tx, &rec.nonce)?) {
        return Ok(Err(refused));
    }
    if let Some(over) = over_rate(tx, &rec.sender, rec.received_ms, limits)? {
        return Ok(Err(over.into()));
    }
    let id = tx
        .prepare_cached(
            "INSERT INTO envelopes (envelope_id, sender, recipient, scope, payload_type, conversation_id,
            in_reply_to, on_behalf_of, prompt, timestamp, expires_at, received_at, received_ms,
            transport, signed_form, raw, raw_sha256, receipt_id, executor, exec_status, exec_result,
            exec_updated_at, executor_spec, door)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
            ?21, CASE WHEN CAST(?21 AS TEXT) IS NULL THEN NULL ELSE ?12 END, ?22, ?23) RETURNING id",
        )?
        .query_row(
            args![
                rec.envelope_id,
                rec.sender,
                rec.recipient,
                rec.scope,
                rec.payload_type,
                rec.conversation_id,
                rec.in_reply_to,
                rec.on_behalf_of,
                rec.prompt,
                rec.timestamp,
                rec.expires_at,
                rec.received_at,
                rec.received_ms,
                rec.transport,
                rec.signed_form,
                rec.raw,
                rec.raw_sha256,
                rec.receipt.receipt_id,
                rec.executor,
                rec.exec_status.as_str(),
                json.exec_result,
                rec.executor_spec,
                rec.door,
            ],
            |r| r.get::<i64>(0),
        )?;
    tx.prepare_cached("INSERT INTO nonces (nonce, expires_at_ms, envelope_row) VALUES (?1, ?2, ?3)")?.execute(args![rec.nonce, rec.expires_at_ms, id])?;
    insert_receipt_as(tx, &rec.receipt, Some(id), &json.receipt)?;
    count_use(tx, &rec.sender, rec.received_ms)?;
    Ok(Ok(id))
}

/// A sender's rate limits against what the gate let in from it, counted per minute
/// (`usage_minutes`): the refusal, if one more now would be over a limit. Run inside the
/// transaction that then counts it ([`count_use`]), so racing arrivals cannot both pass.
pub(crate) fn over_rate(tx: &Db<'_>, sender: &str, received_ms: i64, limits: &RateLimit) -> Result<Option<OverRate>> {
    if tx.is_pg() && limits.is_set() {
        // Nodes count one sender's arrivals one at a time (SQLite's write lock does the
        // same on one machine): held until this transaction ends.
        tx.prepare_cached("SELECT pg_advisory_xact_lock(hashtextextended(?1, 0))")?.query_row(args![sender], |_| Ok(()))?;
    }
    for (window, secs, limit) in [("hour", 3600i64, limits.max_per_hour), ("day", 86_400, limits.max_per_day)] {
        let Some(limit) = limit else { continue };
        // Whole minutes: the minute the window starts in counts in full, so a limit may
        // bite up to a minute early but never lets more through (docs/interop.md).
        let since = minute_of(received_ms - secs * 1000);
        let (count, oldest): (u32, Option<i64>) = tx
            .prepare_cached("SELECT CAST(coalesce(sum(n), 0) AS BIGINT), min(minute) FROM usage_minutes WHERE sender = ?1 AND minute >= ?2")?
            .query_row(args![sender, since], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if count >= limit {
            // The window frees a slot when its oldest minute falls out of it.
            let frees_at = oldest.map_or(received_ms, |m| (m + 1) * MINUTE_MS) + secs * 1000;
            let retry_after_secs = ((frees_at - received_ms).max(1000) as u64).div_ceil(1000);
            return Ok(Some(OverRate { window, limit, retry_after_secs }));
        }
    }
    Ok(None)
}

/// Whether what admits (trust, blocks, settings) changed since `admitted`, the version a
/// door's arrival was decided on, read inside the transaction that keeps it (on
/// PostgreSQL under the admission lock, as an envelope's acceptance: a change waits for
/// this commit). None: nothing to compare.
pub(crate) fn changed_since(tx: &Db<'_>, admitted: Option<i64>) -> Result<bool> {
    let Some(admitted) = admitted else { return Ok(false) };
    if tx.is_pg() {
        tx.query_row(&format!("SELECT pg_advisory_xact_lock_shared({})", crate::pg::ADMISSION_LOCK), args![], |_| Ok(()))?;
    }
    let now: i64 = tx.query_row("SELECT n FROM admission_version", args![], |r| r.get(0))?;
    Ok(now != admitted)
}

/// An arrival the gate let in whose count against its sender's rate is taken in the
/// transaction that records it (one write instead of two; [`crate::Store::asop_step_add_counted`]).
#[derive(Debug, Clone)]
pub struct RateCount {
    pub sender: String,
    pub received_ms: i64,
    pub limits: RateLimit,
    /// The registry's version it was let in on: changed since, nothing is counted or kept.
    pub version: i64,
}

/// Counts one arrival from `sender` in `tx`, unless the registry changed since
/// `admitted` (the version it was let in on) or it is over its sender's rate.
pub(crate) fn count_in(
    tx: &Db<'_>,
    sender: &str,
    received_ms: i64,
    limits: &RateLimit,
    admitted: Option<i64>,
) -> Result<std::result::Result<(), AcceptRefusal>> {
    if changed_since(tx, admitted)? {
        return Ok(Err(AcceptRefusal::Stale));
    }
    if let Some(over) = over_rate(tx, sender, received_ms, limits)? {
        return Ok(Err(over.into()));
    }
    count_use(tx, sender, received_ms)?;
    Ok(Ok(()))
}

/// The limit one more arrival would go over, and in how long a slot frees.
pub(crate) struct OverRate {
    pub window: &'static str,
    pub limit: u32,
    pub retry_after_secs: u64,
}

impl From<OverRate> for AcceptRefusal {
    fn from(OverRate { window, limit, retry_after_secs }: OverRate) -> Self {
        AcceptRefusal::RateLimited { window, limit, retry_after_secs }
    }
}

/// One more let in from `sender` this minute, counted in this writer's row (a sender's
/// usage is the sum of its writers' rows: nodes counting at once never wait on one row).
pub(crate) fn count_use(tx: &Db<'_>, sender: &str, received_ms: i64) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO usage_minutes (sender, minute, writer, n) VALUES (?1, ?2, ?3, 1)
         ON CONFLICT (sender, minute, writer) DO UPDATE SET n = usage_minutes.n + 1",
    )?
    .execute(args![sender, minute_of(received_ms), tx.writer()])?;
    Ok(())
}

/// How long per-minute usage is kept: the day window, and "today" on a 25-hour day.
pub(crate) const USAGE_KEPT_MS: i64 = 3 * 86_400_000;

pub(crate) const MINUTE_MS: i64 = 60_000;

/// The minute (since the epoch) a time in milliseconds falls in: usage_minutes' key.
pub(crate) fn minute_of(ms: i64) -> i64 {
    ms.div_euclid(MINUTE_MS)
}

impl Store {
    /// Commits an accepted envelope, unless its nonce was seen or the sender is over a
    /// rate limit counted over accepted envelopes.
    ///
    /// Group commit: callers queue their acceptance; whoever holds the connection next
    /// takes the whole queue into one IMMEDIATE transaction and one fsync, and only then
    /// answers each caller. So no caller returns (and no receipt goes out) before its
    /// acceptance is durable, and concurrent calls with the same nonce accept exactly
    /// one: later ones in the same transaction see the earlier insert, and the nonce is
    /// the primary key besides.
    pub fn accept(&self, rec: NewEnvelope, limits: &RateLimit) -> AcceptResult {
        let (reply, answer) = blocking();
        self.enqueue(Job::accept(rec, limits, reply));
        self.commit_until_answered(&answer)
    }

    /// [`Store::accept`] for async callers: awaits the commit without holding a thread.
    pub async fn accept_async(&self, rec: NewEnvelope, limits: &RateLimit) -> AcceptResult {
        let (reply, answer) = asynchronous();
        self.enqueue(Job::accept(rec, limits, reply));
        answer.await.unwrap_or_else(|_| Err(closing()))
    }

    /// [`Store::take_rate`] for what `count` says: for a door whose record is written
    /// elsewhere after all (no rule decided the step that was to keep it).
    pub fn take_rate_of(&self, count: &RateCount) -> Result<std::result::Result<(), AcceptRefusal>> {
        self.take_rate(&count.sender, count.received_ms, &count.limits, Some(count.version))
    }

    /// Counts one arrival the gate let in from `sender` against its rate limits, for a
    /// door that keeps nothing else per arrival (the guardian's steps); the refusal if it
    /// is over one, or if the registry changed since `admitted`, the version it was decided
    /// on (nothing is counted then).
    ///
    /// On SQLite its commit does not wait for the disk: the door that takes it records the
    /// arrival itself next (a guardian step, an MCP call), durably, before it answers, and
    /// that commit's sync makes this one durable too (the WAL is synced in order). One wait
    /// for the disk per arrival instead of two.
    pub fn take_rate(&self, sender: &str, received_ms: i64, limits: &RateLimit, admitted: Option<i64>) -> Result<std::result::Result<(), AcceptRefusal>> {
        self.conn()?.unsynced(|conn| {
            let tx = conn.transaction()?;
            let counted = count_in(&tx.db(), sender, received_ms, limits, admitted)?;
            if counted.is_ok() {
                tx.commit()?;
            }
            Ok(counted)
        })
    }

    pub fn nonce_seen(&self, nonce: &[u8]) -> Result<bool> {
        self.read(|c| epp_nonce_used(c, nonce))
    }

    /// The accepted envelope that used `nonce`, if its raw bytes hash to `sha` — used by
    /// the folder transport to recognise a file it accepted just before a crash. (Found
    /// through the nonce registry: an index over every envelope's hash would cost a
    /// random page write per acceptance for a lookup made only after a crash.)
    pub fn accepted_by_nonce(&self, nonce: &[u8], sha: &str) -> Result<Option<ReceiptRow>> {
        let receipt_id: Option<String> = self.read(|c| {
            let by_row = c
                .query_row(
                    "SELECT e.receipt_id FROM nonces n JOIN envelopes e ON e.id = n.envelope_row
                     WHERE n.nonce = ?1 AND e.raw_sha256 = ?2",
                    args![nonce, sha],
                    |r| r.get(0),
                )
                .optional()?;
            match by_row {
                Some(id) => Ok(Some(id)),
                // Nonces recorded before schema 3 have no row id: look the hard way.
                None => Ok(c.query_row("SELECT receipt_id FROM envelopes WHERE raw_sha256 = ?1 LIMIT 1", args![sha], |r| r.get(0)).optional()?),
            }
        })?;
        match receipt_id {
            Some(id) => self.receipt(&id),
            None => Ok(None),
        }
    }

    pub fn count_nonces(&self) -> Result<i64> {
        self.read(|c| c.query_row("SELECT count(*) FROM nonces", args![], |r| r.get(0)))
    }

    /// Drops nonces whose envelopes have expired: an expired envelope is rejected at
    /// step 5, before the replay check, so its nonce can no longer matter.
    pub fn gc_nonces(&self, now_ms: i64) -> Result<usize> {
        self.conn()?.execute("DELETE FROM nonces WHERE expires_at_ms < ?1", args![now_ms])
    }

    /// Accepted envelopes from `sender` since the minute `since_ms` falls in (for "usage
    /// today": midnight is a minute boundary, so that count is exact).
    pub fn accepted_since(&self, sender: &str, since_ms: i64) -> Result<i64> {
        self.read(|c| {
            c.query_row(
                "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM usage_minutes WHERE sender = ?1 AND minute >= ?2",
                args![sender_key(sender), minute_of(since_ms)],
                |r| r.get(0),
            )
        })
    }

    /// Forgets per-minute usage older than three days (no window or "today" reaches it).
    pub fn gc_usage(&self, now_ms: i64) -> Result<usize> {
        self.conn()?.execute("DELETE FROM usage_minutes WHERE minute < ?1", args![minute_of(now_ms - USAGE_KEPT_MS)])
    }
}
