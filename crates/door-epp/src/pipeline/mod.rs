//! The one pipeline every envelope goes through, whatever its transport (spec 5.1).
//! Each rule lives in exactly one place: format, version, recipient, expiry and signature
//! in `gatehouse_epp::check`; replay, trust and policy here; durability in the store.

use chrono::{DateTime, Utc};
use gatehouse_epp::{Envelope, ErrorCode, Form, Receipt, Rejection, MAX_ENVELOPE_BYTES};
use gatehouse_gate::{Answered, Arrival, Kept};
use gatehouse_store::{ReceiptRow, TrustEntry};
use sha2::{Digest, Sha256};

use gatehouse_gate::state::Gate;

mod admit;
use admit::{unsigned, EppDoor, EppRefusal, Unsigned};

/// Bodies up to this size are read and verified on the async worker (tens of
/// microseconds); larger ones off it.
const INLINE_CHECK_BYTES: usize = 64 * 1024;

/// What the transport needs to answer the sender.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub receipt: Receipt,
    /// Seconds until the sender may try again (RATE_LIMITED only).
    pub retry_after: Option<u64>,
    /// The stored envelope's row id when accepted.
    pub row_id: Option<i64>,
    /// What became of it, in the gate's words.
    pub arrival: gatehouse_code::Outcome,
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
        match self.check(&ctx) {
            Ok((env, form, unsigned)) => {
                let (arrival, door) = (ctx.arrival(&env, form), EppDoor { env: &env, unsigned: &unsigned });
                outcome(self.accept(&door, &arrival))
            }
            Err(f) => {
                let (outcome, row) = self.rejection(&ctx, f);
                self.refused_early(&row, now);
                outcome
            }
        }
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
        let checked = if bytes.len() > INLINE_CHECK_BYTES && gatehouse_gate::accept::on_many_workers() {
            tokio::task::block_in_place(|| self.check(&ctx))
        } else {
            self.check(&ctx)
        };
        match checked {
            Ok((env, form, unsigned)) => {
                let (arrival, door) = (ctx.arrival(&env, form), EppDoor { env: &env, unsigned: &unsigned });
                outcome(self.accept_async(&door, &arrival).await)
            }
            Err(f) => {
                let (outcome, row) = self.rejection(&ctx, f);
                self.refused_early_async(&row, now).await;
                outcome
            }
        }
    }

    async fn submit_failure_async(&self, code: ErrorCode, message: String, transport: &str, now: DateTime<Utc>) -> Outcome {
        let received_at = gatehouse_epp::crypto::utc_string_ms(now);
        let receipt_id = receipt_id();
        let ctx = Ctx { bytes: &[], transport, now, received_at: &received_at, receipt_id: &receipt_id, consent: None };
        let (outcome, row) = self.rejection(&ctx, Failure::new(Rejection::new(code, message)));
        self.refused_early_async(&row, now).await;
        outcome
    }

    /// The receipt of an envelope refused before the gate could judge it.
    fn rejection(&self, ctx: &Ctx<'_>, Failure { rejection, env }: Failure) -> (Outcome, ReceiptRow) {
        let receipt = Receipt::rejected(&rejection, ctx.received_at.to_string(), ctx.receipt_id.to_string());
        let row = ctx.receipt_row(&receipt, env.as_ref(), &rejection);
        let arrival = admit::outcome_of(rejection.code);
        (Outcome { receipt, retry_after: None, row_id: None, arrival }, row)
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
            return Err(Failure { rejection: r, env: Some(env) });
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
            Err(r) => Err(Failure { rejection: r, env: Some(env) }),
        }
    }
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
    /// The receipt of a refusal its door decided before the gate judged anything.
    fn receipt_row(&self, receipt: &Receipt, env: Option<&Envelope>, rejection: &Rejection) -> ReceiptRow {
        let cut = self.bytes.len().min(gatehouse_gate::accept::KEEP_REFUSED_BYTES);
        ReceiptRow {
            receipt_id: receipt.receipt_id.clone(),
            envelope_id: receipt.envelope_id.clone(),
            status: "rejected".into(),
            code: Some(rejection.code.as_str().to_string()),
            message: Some(rejection.message.clone()),
            received_at: self.received_at.to_string(),
            received_ms: self.now.timestamp_millis(),
            transport: self.transport.to_string(),
            sender: env.map(Envelope::sender_key),
            scope: env.map(|e| e.scope.clone()),
            body: (!self.bytes.is_empty()).then(|| String::from_utf8_lossy(&self.bytes[..cut]).into_owned()),
            body_truncated: cut < self.bytes.len(),
            receipt: serde_json::to_value(receipt).expect("receipts serialise"),
            prompt: env.map(|e| e.payload.prompt.clone()),
            envelope_row: None,
            outcome: Some(admit::outcome_of(rejection.code)),
        }
    }

    /// A verified envelope as the gate takes it.
    fn arrival<'e>(&'e self, env: &Envelope, form: Form) -> Arrival<'e> {
        Arrival {
            door: crate::DOOR,
            transport: self.transport,
            sender: env.sender_key(),
            scope: env.scope.clone(),
            asks: None,
            size: self.bytes.len() as u64,
            on_behalf_of: env.delegation.as_ref().map(|d| d.on_behalf_of.to_ascii_lowercase()),
            at: self.now,
            received_at: self.received_at,
            receipt_id: self.receipt_id,
            consent: self.consent,
            kept: Kept {
                id: env.envelope_id.clone(),
                recipient: env.recipient_key(),
                payload_type: env.payload.payload_type.clone(),
                conversation_id: env.conversation_id.clone(),
                in_reply_to: env.in_reply_to.clone(),
                prompt: env.payload.prompt.clone(),
                timestamp: env.timestamp.clone(),
                expires_at: env.expires_at.clone(),
                expires_at_ms: env.expires_at_utc.timestamp_millis(),
                nonce: env.nonce_bytes.clone(),
                signed_form: match form {
                    Form::Reference => "reference",
                    Form::Variant => "variant",
                },
                raw: self.bytes,
                raw_sha256: sha256_hex(self.bytes),
            },
            keeps_refused: true,
        }
    }
}

/// An envelope refused before the gate judged it, and what could be read of it.
struct Failure {
    rejection: Rejection,
    env: Option<Envelope>,
}

impl Failure {
    fn new(rejection: Rejection) -> Self {
        Failure { rejection, env: None }
    }
}

/// What the gate decided, as EPP answers it.
fn outcome(a: Answered<Receipt, EppRefusal>) -> Outcome {
    let arrival = match &a.why {
        Some(why) => why.outcome(|r| admit::outcome_of(r.code)),
        None if a.answer.held_for_consent => gatehouse_code::Outcome::Held,
        None => gatehouse_code::Outcome::Accepted,
    };
    Outcome { retry_after: a.retry_after(), row_id: a.row, receipt: a.answer, arrival }
}

/// EPP's reader for the gate's release ([`gatehouse_gate::release`]): a knock's kept
/// envelope read and verified again, every check but trust run anew, the user's "allow
/// once" standing for a trust entry.
pub struct Reader;

impl gatehouse_gate::Reread for Reader {
    fn deliver(&self, gate: &Gate, raw: &[u8], consent: Option<&TrustEntry>, now: DateTime<Utc>) -> gatehouse_gate::Delivered {
        let o = Pipeline(gate).submit_as(raw, "consent", now, consent);
        gatehouse_gate::Delivered {
            receipt_id: o.receipt.receipt_id,
            envelope_id: o.receipt.envelope_id,
            outcome: o.arrival,
            message: o.receipt.error.map(|e| e.message),
        }
    }
}

/// Retry-After while the gate's database cannot be reached.
pub const UNAVAILABLE_RETRY_SECS: u64 = gatehouse_gate::accept::UNAVAILABLE_RETRY_SECS;

/// The gate's freshness setting, as EPP reads an envelope's times by it.
fn freshness(f: gatehouse_gate::state::Freshness) -> gatehouse_epp::Freshness {
    gatehouse_epp::Freshness { max_clock_skew_secs: f.max_clock_skew_secs, max_lifetime_secs: f.max_lifetime_secs }
}
