//! The one pipeline every envelope goes through, whatever its transport (spec 5.1).
//! Each rule lives in exactly one place: format, version, recipient, expiry and signature
//! in `gatehouse_epp::check`; replay, trust and policy here; durability in the store.

use chrono::{DateTime, Utc};
use gatehouse_epp::{Envelope, ErrorCode, Form, Receipt, Rejection, MAX_ENVELOPE_BYTES};
use gatehouse_store::{AcceptRefusal, Knock, ReceiptRow, TrustEntry};
use sha2::{Digest, Sha256};

use gatehouse_gate::state::{ArrivalEvent, Gate};

mod admit;
use admit::{unsigned, Unsigned, Wait};

/// Bodies up to this size are read and verified on the async worker (tens of
/// microseconds); larger ones off it.
const INLINE_CHECK_BYTES: usize = 64 * 1024;

/// Rejected input is kept for the user up to this many bytes.
const KEEP_REJECTED_BYTES: usize = 64 * 1024;
/// A correctly signed knock from an unknown sender is kept whole up to this size, so the
/// user's "allow" can still deliver it (a prompt is at most 1 MiB).
const KEEP_KNOCK_BYTES: usize = 2 * 1024 * 1024;

/// What the transport needs to answer the sender.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub receipt: Receipt,
    /// Seconds until the sender may try again (RATE_LIMITED only).
    pub retry_after: Option<u64>,
    /// The stored envelope's row id when accepted.
    pub row_id: Option<i64>,
}

impl Outcome {
    pub fn http_status(&self) -> u16 {
        // An inbox error with a time to come back is the database being unreachable:
        // 503, so that senders and load balancers try again (docs/interop.md).
        match (self.receipt.code(), self.retry_after) {
            (Some(ErrorCode::InternalError), Some(_)) => 503,
            _ => self.receipt.http_status(),
        }
    }
}

/// The EPP door's way in, on the gate's inbox: an envelope's bytes through the pipeline
/// of spec 5.1, its receipt recorded.
pub trait Submit {
    /// Runs the whole pipeline on one submission and records its receipt. Blocking (SQLite).
    fn submit(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>) -> Outcome {
        self.submit_as(bytes, transport, now, None)
    }

    /// Like [`Submit::submit`], but with the user's one-time consent standing in for a
    /// trust entry (the "allow once" of an unknown sender). Every other check still runs.
    fn submit_as(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>, consent: Option<&TrustEntry>) -> Outcome;

    /// [`Submit::submit`] for async transports: the same pipeline, but waiting for the
    /// commit does not hold a thread (the checks themselves take microseconds).
    fn submit_async(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>) -> impl std::future::Future<Output = Outcome> + Send;

    /// Records a rejection decided by a transport before the pipeline could run (body
    /// too large, unreadable file, ...), so it shows up like every other receipt.
    fn submit_failure_async(&self, code: ErrorCode, message: String, transport: &str, now: DateTime<Utc>) -> impl std::future::Future<Output = Outcome> + Send;
}

impl Submit for Gate {
    fn submit_as(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>, consent: Option<&TrustEntry>) -> Outcome {
        Pipeline(self).submit_as(bytes, transport, now, consent)
    }

    #[allow(clippy::manual_async_fn)]
    fn submit_async(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>) -> impl std::future::Future<Output = Outcome> + Send {
        async move { Pipeline(self).submit_async(bytes, transport, now).await }
    }

    #[allow(clippy::manual_async_fn)]
    fn submit_failure_async(&self, code: ErrorCode, message: String, transport: &str, now: DateTime<Utc>) -> impl std::future::Future<Output = Outcome> + Send {
        async move { Pipeline(self).submit_failure_async(code, message, transport, now).await }
    }
}

/// The pipeline's steps, on the gate's inbox.
struct Pipeline<'a>(&'a Gate);

impl std::ops::Deref for Pipeline<'_> {
    type Target = Gate;
    fn deref(&self) -> &Gate {
        self.0
    }
}

impl Pipeline<'_> {
    fn submit_as(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>, consent: Option<&TrustEntry>) -> Outcome {
        let received_at = gatehouse_epp::crypto::utc_string_ms(now);
        let receipt_id = receipt_id();
        let ctx = Ctx { bytes, transport, now, received_at: &received_at, receipt_id: &receipt_id, consent };
        let failure = match self.check(&ctx) {
            Ok((env, form, unsigned)) => {
                let mut admitted = self.admit(&ctx, env, form, unsigned, false, Wait::Here);
                let mut tries = 0;
                loop {
                    let (record, limits, p) = match admitted {
                        Ok(a) => a,
                        Err(f) => break f,
                    };
                    let stored = self.store().accept(record, &limits);
                    match self.settle(&ctx, p, stored, &mut tries) {
                        Settled::Done(outcome) => return outcome,
                        Settled::Failed(f) => break f,
                        Settled::Stale(p) => admitted = self.admit(&ctx, p.env, p.form, p.unsigned, true, Wait::Here),
                    }
                }
            }
            Err(f) => f,
        };
        let r = self.rejection(&ctx, failure);
        let stored = self.record(&r);
        self.rejected(r, stored)
    }

    // A Failure is built once per refused request and becomes its receipt; boxing it
    // would cost an allocation on the path floods take and save nothing.
    #[allow(clippy::result_large_err)]
    async fn submit_async(&self, bytes: &[u8], transport: &str, now: DateTime<Utc>) -> Outcome {
        let received_at = gatehouse_epp::crypto::utc_string_ms(now);
        let receipt_id = receipt_id();
        let ctx = Ctx { bytes, transport, now, received_at: &received_at, receipt_id: &receipt_id, consent: None };
        // Reading and verifying a large body takes milliseconds: the worker hands its other
        // tasks (health checks, other senders) to the rest of the pool meanwhile.
        let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let checked = if bytes.len() > INLINE_CHECK_BYTES && multi_thread { tokio::task::block_in_place(|| self.check(&ctx)) } else { self.check(&ctx) };
        // Admission may ask the database (a view not cached, a refusal read again): on a
        // team's gate that is a network round trip, which a slow database can make long,
        // so the worker's other tasks (health checks, other senders) move on meanwhile.
        let wait = if multi_thread && self.store().is_shared() { Wait::OffWorker } else { Wait::Here };
        let admit = |env, form, unsigned, fresh| self.admit(&ctx, env, form, unsigned, fresh, wait);
        let failure = match checked {
            Ok((env, form, unsigned)) => {
                let mut admitted = admit(env, form, unsigned, false);
                let mut tries = 0;
                loop {
                    let (record, limits, p) = match admitted {
                        Ok(a) => a,
                        Err(f) => break f,
                    };
                    let stored = self.store().accept_async(record, &limits).await;
                    match self.settle(&ctx, p, stored, &mut tries) {
                        Settled::Done(outcome) => return outcome,
                        Settled::Failed(f) => break f,
                        Settled::Stale(p) => admitted = admit(p.env, p.form, p.unsigned, true),
                    }
                }
            }
            Err(f) => f,
        };
        let r = self.rejection(&ctx, failure);
        let stored = self.record_async(&r).await;
        self.rejected(r, stored)
    }

    async fn submit_failure_async(&self, code: ErrorCode, message: String, transport: &str, now: DateTime<Utc>) -> Outcome {
        let received_at = gatehouse_epp::crypto::utc_string_ms(now);
        let receipt_id = receipt_id();
        let ctx = Ctx { bytes: &[], transport, now, received_at: &received_at, receipt_id: &receipt_id, consent: None };
        let r = self.rejection(&ctx, Failure::new(Rejection::new(code, message)));
        let stored = self.record_async(&r).await;
        self.rejected(r, stored)
    }

    /// The receipt of a failure, and (for an unknown sender's knock) the request to ask
    /// the user about, to be stored together.
    fn rejection(&self, ctx: &Ctx<'_>, Failure { rejection, env, retry_after, knock }: Failure) -> Rejected {
        let receipt = Receipt::rejected(&rejection, ctx.received_at.to_string(), ctx.receipt_id.to_string());
        let row = ctx.receipt_row(&receipt, env.as_ref(), Some(&rejection));
        let knock = knock.then_some(env.as_ref()).flatten().map(|e| Knock {
            door: crate::DOOR,
            sender: e.sender_key(),
            scope: e.scope.clone(),
            envelope_id: e.envelope_id.clone(),
            at: ctx.received_at.to_string(),
        });
        let kind = if knock.is_some() { gatehouse_gate::flood::Kind::Knock } else { gatehouse_gate::flood::Kind::Refusal };
        let kept = self.keep(kind, ctx.now);
        Rejected { outcome: Outcome { receipt, retry_after, row_id: None }, row, env, knock, transport: ctx.transport.to_string(), kept }
    }

    /// Stores a rejection within the flood budget; one past it is only counted.
    fn record(&self, r: &Rejected) -> gatehouse_store::Result<()> {
        if r.kept {
            self.store().record_rejection(&r.row, r.knock.as_ref())
        } else {
            Ok(())
        }
    }

    async fn record_async(&self, r: &Rejected) -> gatehouse_store::Result<()> {
        if r.kept {
            self.store().record_rejection_async(&r.row, r.knock.as_ref()).await
        } else {
            Ok(())
        }
    }

    fn rejected(&self, r: Rejected, stored: gatehouse_store::Result<()>) -> Outcome {
        if let Err(e) = stored {
            tracing::error!(error = %e, "could not record a rejection receipt");
        }
        // A flood's uncounted rest is announced at most once a second (so the window's
        // count keeps up), not one by one.
        if r.kept || self.announce_unkept(chrono::Utc::now()) {
            self.emit(&r.outcome.receipt, r.env.as_ref(), &r.transport, r.knock.is_some());
        }
        r.outcome
    }

    /// Steps 1–6: size, structure, version, recipient, expiry, signature; then the
    /// unsigned v1.1 fields are read (judged later, in `judge`). All the work on the body
    /// is here, so a large one is done in one place off the async worker.
    // A Failure is built once per refused request and becomes its receipt; boxing it
    // would cost an allocation on the path floods take and save nothing.
    #[allow(clippy::result_large_err)]
    fn check(&self, ctx: &Ctx<'_>) -> Result<(Envelope, Form, Box<Unsigned>), Failure> {
        // Inbox-wide size limit before parsing anything.
        if ctx.bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(Failure::new(Rejection::new(
                ErrorCode::SizeExceeded,
                format!("envelope is {} bytes; this inbox accepts at most {MAX_ENVELOPE_BYTES}", ctx.bytes.len()),
            )));
        }
        // Steps 2–3.
        let env = Envelope::parse(ctx.bytes).map_err(Failure::new)?;
        // Scopes Gatehouse keeps for its own doors (guardian agents, IntentSite keys): an
        // envelope in one could ask for what only those doors record.
        if self.reserved_scope(&env.scope) {
            let r = Rejection::new(ErrorCode::InvalidFormat, format!("scope \"{}\" is reserved for Gatehouse's own agents and sites", env.scope))
                .with_envelope_id(Some(env.envelope_id.clone()));
            return Err(Failure { rejection: r, env: Some(env), retry_after: None, knock: false });
        }
        // Steps 4–6: what the sender signed, and its freshness. EPP v1.1's fields are
        // covered by no signature of the sender's: they are judged in `judge`, after
        // replay and revocation, so a copy with a field changed on the way is still
        // told apart as a replay or a revoked key (docs/threat-model.md 17).
        let checked = gatehouse_epp::check_parsed_with(&env, self.public_key(), ctx.now, &freshness(self.freshness()), |k| {
            self.verifying_key(k, gatehouse_epp::parse_public_key)
        });
        match checked {
            Ok(form) => {
                let unsigned = Box::new(unsigned(&env));
                Ok((env, form, unsigned))
            }
            Err(r) => Err(Failure { rejection: r, env: Some(env), retry_after: None, knock: false }),
        }
    }

    /// Turns the store's answer into the sender's outcome. `tries` counts the commits
    /// refused because the registry changed under them.
    fn settle(&self, ctx: &Ctx<'_>, p: Prepared, stored: gatehouse_store::Result<Result<i64, AcceptRefusal>>, tries: &mut u32) -> Settled {
        let fail = |p: Prepared, code: ErrorCode, msg: String| Failure {
            rejection: Rejection::new(code, msg).with_envelope_id(Some(p.env.envelope_id.clone())),
            env: Some(p.env),
            retry_after: None,
            knock: false,
        };
        match stored {
            Err(e) => Settled::Failed(Failure::store(fail(p, ErrorCode::InternalError, format!("could not store the envelope: {e}")), &e)),
            Ok(Err(AcceptRefusal::Replay)) => Settled::Failed(fail(p, ErrorCode::ReplayDetected, "this nonce has been used before".into())),
            Ok(Err(AcceptRefusal::RateLimited { window, limit, retry_after_secs })) => Settled::Failed(Failure {
                retry_after: Some(retry_after_secs),
                ..fail(p, ErrorCode::RateLimited, format!("this sender may send {limit} envelopes per {window}; try again in {retry_after_secs} s"))
            }),
            // Each retry reads the registry first; it only fails again if the registry
            // changes again before the commit, so a bound is only a guard.
            Ok(Err(AcceptRefusal::Stale)) if *tries < MAX_STALE_RETRIES => {
                *tries += 1;
                Settled::Stale(p)
            }
            Ok(Err(AcceptRefusal::Stale)) => Settled::Failed(fail(
                p,
                ErrorCode::InternalError,
                "the trust registry kept changing while this envelope was being stored; send it again".into(),
            )),
            Ok(Ok(row_id)) => {
                let Prepared { env, receipt, held, noop, .. } = p;
                if !held && !noop {
                    self.execute(row_id);
                }
                self.emit(&receipt, Some(&env), ctx.transport, held);
                Settled::Done(Outcome { receipt, retry_after: None, row_id: Some(row_id) })
            }
        }
    }
}

/// How many times an envelope is decided again because the registry changed before its
/// commit.
const MAX_STALE_RETRIES: u32 = 8;

/// What became of a record handed to the store.
enum Settled {
    Done(Outcome),
    Failed(Failure),
    /// The registry changed after the envelope was admitted: decide again.
    Stale(Prepared),
}

/// An envelope that passed every check, while its record is being stored.
struct Prepared {
    env: Envelope,
    form: Form,
    unsigned: Box<Unsigned>,
    receipt: Receipt,
    held: bool,
    noop: bool,
}

/// A rejection's receipt, ready to be stored, and what to tell listeners afterwards.
struct Rejected {
    outcome: Outcome,
    row: ReceiptRow,
    env: Option<Envelope>,
    knock: Option<Knock>,
    transport: String,
    /// Within the per-minute budget: stored and announced.
    kept: bool,
}

/// Receipt ids are UUIDv7: unique like v4, but time-ordered, so the indexes over them
/// grow at one end instead of touching a random page per receipt.
fn receipt_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

struct Ctx<'a> {
    bytes: &'a [u8],
    transport: &'a str,
    now: DateTime<Utc>,
    received_at: &'a str,
    receipt_id: &'a str,
    consent: Option<&'a TrustEntry>,
}

impl Ctx<'_> {
    fn receipt_row(&self, receipt: &Receipt, env: Option<&Envelope>, rejection: Option<&Rejection>) -> ReceiptRow {
        let keep = rejection.is_some();
        let knock = rejection.is_some_and(|r| r.code == ErrorCode::UntrustedSender);
        let cut = self.bytes.len().min(if knock { KEEP_KNOCK_BYTES } else { KEEP_REJECTED_BYTES });
        ReceiptRow {
            receipt_id: receipt.receipt_id.clone(),
            envelope_id: receipt.envelope_id.clone(),
            status: if keep { "rejected" } else { "accepted" }.into(),
            code: rejection.map(|r| r.code.as_str().to_string()),
            message: rejection.map(|r| r.message.clone()),
            received_at: self.received_at.to_string(),
            received_ms: self.now.timestamp_millis(),
            transport: self.transport.to_string(),
            sender: env.map(Envelope::sender_key),
            scope: env.map(|e| e.scope.clone()),
            body: (keep && !self.bytes.is_empty()).then(|| String::from_utf8_lossy(&self.bytes[..cut]).into_owned()),
            body_truncated: keep && cut < self.bytes.len(),
            receipt: serde_json::to_value(receipt).expect("receipts serialise"),
            prompt: env.map(|e| e.payload.prompt.clone()),
            envelope_row: None,
        }
    }
}

struct Failure {
    rejection: Rejection,
    env: Option<Envelope>,
    retry_after: Option<u64>,
    /// An unknown sender knocked with a valid signature: the user is asked.
    knock: bool,
}

impl Failure {
    fn new(rejection: Rejection) -> Self {
        Failure { rejection, env: None, retry_after: None, knock: false }
    }

    /// A failure of the store: when the database cannot be reached (a team's gate while
    /// PostgreSQL is down), nothing was accepted and the sender may try again shortly.
    fn store(self, e: &gatehouse_store::StoreError) -> Self {
        Failure { retry_after: e.is_unavailable().then_some(UNAVAILABLE_RETRY_SECS).or(self.retry_after), ..self }
    }
}

/// Retry-After while the gate's database cannot be reached.
pub const UNAVAILABLE_RETRY_SECS: u64 = 5;

/// The gate's freshness setting, as EPP reads an envelope's times by it.
fn freshness(f: gatehouse_gate::state::Freshness) -> gatehouse_epp::Freshness {
    gatehouse_epp::Freshness { max_clock_skew_secs: f.max_clock_skew_secs, max_lifetime_secs: f.max_lifetime_secs }
}

impl Pipeline<'_> {
    fn emit(&self, receipt: &Receipt, env: Option<&Envelope>, transport: &str, needs_consent: bool) {
        self.emit_event(ArrivalEvent {
            receipt_id: receipt.receipt_id.clone(),
            status: status(receipt.status),
            code: receipt.code().map(|c| c.as_str().to_string()),
            sender: env.map(Envelope::sender_key),
            scope: env.map(|e| e.scope.clone()),
            transport: transport.to_string(),
            needs_consent,
            key_change: false,
        });
    }
}

/// A receipt's status, as the gate's events say it.
fn status(s: gatehouse_epp::ReceiptStatus) -> gatehouse_gate::state::Status {
    match s {
        gatehouse_epp::ReceiptStatus::Accepted => gatehouse_gate::state::Status::Accepted,
        gatehouse_epp::ReceiptStatus::Rejected => gatehouse_gate::state::Status::Rejected,
    }
}
