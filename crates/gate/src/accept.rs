//! One acceptance for every door. A door turns its protocol's bytes into an [`Arrival`]
//! (who proved what, the scope, the size, what is kept) and, through [`Door`], a verdict
//! back into its protocol's words; [`Gate::accept`] does the rest, the same for all: the
//! registry view, the decision, the replay order, the executor chosen once, the record,
//! the commit with one stale-view rule, the flood budget, the knock, the event, the job.

use chrono::{DateTime, Utc};
use gatehouse_code::Outcome;
use gatehouse_store::{AcceptRefusal, Admission, Knock, RateLimit, ReceiptRow, StoreError, TrustEntry};
use serde_json::Value;

use crate::admit::{admit, admitted_under, Asked, Checks, Refusal, Verdict};
pub use crate::arrival::{Arrival, Kept};
use crate::executor::{ExecutorSpec, SETTINGS_KEY};
use crate::record::{receipt_row, record};
use crate::state::{ArrivalEvent, Gate, Status};

/// Rejected input is kept for the user up to this many bytes.
pub const KEEP_REFUSED_BYTES: usize = 64 * 1024;
/// A knock is kept whole up to this size, so the user's "allow" can still deliver it.
pub const KEEP_KNOCK_BYTES: usize = 2 * 1024 * 1024;
/// Retry-After while the gate's database cannot be reached.
pub const UNAVAILABLE_RETRY_SECS: u64 = 5;
/// How many times an arrival is decided again because the registry changed before its
/// commit. Each retry reads the registry first, so it only fails again if the registry
/// changes again before the commit: the bound is only a guard.
const MAX_STALE_RETRIES: u32 = 8;

/// Why an arrival was not let in.
#[derive(Debug)]
pub enum Why<R> {
    /// Its sender is unknown: the user is asked.
    Knock,
    Refused(Refusal<R>),
    /// It asks for a scope a door keeps for what it records itself.
    Reserved(String),
    Replay,
    RateLimited {
        window: &'static str,
        limit: u32,
        retry_after_secs: u64,
    },
    /// The registry kept changing while it was decided.
    Unsettled,
    /// The executor setting cannot be read.
    Executor(String),
    Store(StoreError),
}

impl<R> Why<R> {
    /// The outcome in the gate's words; `door` names a door's own refusal's.
    pub fn outcome(&self, door: impl FnOnce(&R) -> Outcome) -> Outcome {
        match self {
            Why::Knock => Outcome::Knock,
            Why::Refused(Refusal::Blocked) => Outcome::Blocked,
            Why::Refused(Refusal::Revoked(_)) => Outcome::Revoked,
            Why::Refused(Refusal::Door(r)) => door(r),
            Why::Refused(Refusal::Scope(_) | Refusal::Delegation) => Outcome::NotAllowed,
            Why::Refused(Refusal::Size { .. }) => Outcome::TooLarge,
            Why::Reserved(_) => Outcome::Malformed,
            Why::Replay => Outcome::Replay,
            Why::RateLimited { .. } => Outcome::RateLimited,
            Why::Store(e) if e.is_unavailable() => Outcome::Unavailable,
            Why::Unsettled | Why::Executor(_) | Why::Store(_) => Outcome::Internal,
        }
    }

    /// Seconds until the sender may try again, where waiting helps.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Why::RateLimited { retry_after_secs, .. } => Some(*retry_after_secs),
            Why::Store(e) if e.is_unavailable() => Some(UNAVAILABLE_RETRY_SECS),
            _ => None,
        }
    }
}

/// A verdict in a door's words: what its receipt says, and what the door answers with.
pub struct Words<A> {
    /// Its refusal's code on the door's wire (`UNTRUSTED_SENDER`); none when let in.
    pub code: Option<String>,
    pub message: Option<String>,
    /// The receipt as the door's sender reads it.
    pub receipt: Value,
    pub answer: A,
    /// Whether a refusal is kept as a receipt and announced (a door that answers a retry
    /// with the task it started, or a failure with an error of its own, keeps none); for
    /// an arrival let in, whether the gate announces it (a door whose arrivals wait on
    /// events of its own, an agent's steps, announces them itself).
    pub keep: bool,
}

/// What a door does for the gate: the checks only it can make ([`Checks`]) and its words
/// for a verdict. Implemented per arrival, so it may hold what it read.
pub trait Door: Checks {
    /// What the door answers its sender with.
    type Answer;
    fn accepted(&self, a: &Arrival<'_>, executor: &str, held: bool) -> Words<Self::Answer>;
    fn refused(&self, a: &Arrival<'_>, why: &Why<Self::Refusal>) -> Words<Self::Answer>;
    /// What one of its own refusals is, in no door's words.
    fn outcome(&self, refusal: &Self::Refusal) -> Outcome;
    /// Keeps what the gate let in in the door's own record (a stream's messages) instead
    /// of the gate's: in one transaction with its receipt, refusing a replay, a rate over
    /// the sender's limits, or a registry view that changed since `version`. `None` (the
    /// default): the gate keeps its record. A door that keeps its own runs what it let in
    /// itself, and calls [`Gate::accept`] off the async workers (this blocks).
    fn keep(&self, _store: &gatehouse_store::Store, _k: &Keep<'_>) -> Option<gatehouse_store::Result<Stored<Self::Refusal>>> {
        None
    }
}

/// What the gate decided, for a door that keeps its own record ([`Door::keep`]).
pub struct Keep<'a> {
    /// The receipt of the arrival let in, as the door worded it.
    pub receipt: &'a ReceiptRow,
    pub limits: &'a RateLimit,
    /// The registry's version the decision was made on.
    pub version: i64,
    /// The executor chosen for it, once.
    pub executor: &'a ExecutorSpec,
    /// Whether it waits for the user.
    pub held: bool,
}

impl Keep<'_> {
    /// For a door that keeps its arrivals itself and only has the gate count them: the
    /// arrival counted against its sender's rate, on the registry it was decided on.
    pub fn count<R>(&self, store: &gatehouse_store::Store) -> gatehouse_store::Result<Stored<R>> {
        let sender = self.receipt.sender.as_deref().unwrap_or_default();
        Ok(match store.take_rate(sender, self.receipt.received_ms, self.limits, Some(self.version))? {
            Ok(()) => Stored::Row { row: 0, held: self.held },
            Err(refused) => Stored::Refused(refused),
        })
    }
}

impl Keep<'_> {
    /// For a door that records the arrival in a transaction of its own after the gate let
    /// it in: its count against its sender's rate, to be taken in that transaction (the
    /// store counts it with the door's record). Until then the arrival is let in
    /// uncounted: the door keeps no record of it without its count, and a count refused
    /// there (the registry changed, or the rate is over) has it judged again by the gate.
    pub fn count_later(&self) -> gatehouse_store::RateCount {
        gatehouse_store::RateCount {
            sender: self.receipt.sender.clone().unwrap_or_default(),
            received_ms: self.receipt.received_ms,
            limits: self.limits.clone(),
            version: self.version,
        }
    }
}

/// What a door's own record answered.
pub enum Stored<R> {
    /// Kept as `row`; `held`: whether it waits for the user after all (the door may hold
    /// only what it can hold).
    Row { row: i64, held: bool },
    /// Refused by the store's checks (a replay, a rate, a registry that changed).
    Refused(AcceptRefusal),
    /// Refused by the door's own checks once the gate let it in.
    Door(R),
}

/// What became of an arrival.
pub struct Answered<A, R> {
    pub answer: A,
    /// The envelope kept, when it was let in.
    pub row: Option<i64>,
    /// Why not, when it was not.
    pub why: Option<Why<R>>,
    /// A refusal's receipt as kept (or as it would have been, past the flood budget).
    pub receipt: Option<ReceiptRow>,
}

impl<A, R> Answered<A, R> {
    pub fn retry_after(&self) -> Option<u64> {
        self.why.as_ref().and_then(Why::retry_after)
    }
}

/// Where admission waits for the database.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// On the caller's thread: SQLite on this machine, or a caller that is no async worker.
    Here,
    /// Off the async worker (a team's gate): its other tasks move to the rest of the pool
    /// while this one waits. Only around the reads themselves: handing the worker off
    /// costs thread switches, which a cached view never needs (measured: 40 CPU-µs per
    /// envelope on three nodes when every admission left the worker).
    OffWorker,
}

impl Wait {
    fn run<T>(self, f: impl FnOnce() -> T) -> T {
        match self {
            Wait::Here => f(),
            Wait::OffWorker => tokio::task::block_in_place(f),
        }
    }
}

/// An arrival the gate lets in: whether it waits for the user, what it may use, and the
/// registry's version it was decided on.
pub struct Admitted {
    pub held: bool,
    /// Its sender's rate limits (counted where the door keeps the arrival).
    pub limits: RateLimit,
    executors: std::sync::Arc<crate::executor::ExecutorConfig>,
    pub version: i64,
}

impl Admitted {
    /// The executor chosen for `scope`, once, here.
    pub fn executor(&self, scope: &str) -> &ExecutorSpec {
        self.executors.for_scope(scope)
    }
}

/// A decision ready for the commit, and what to say once it is durable.
struct Ready<A> {
    receipt: ReceiptRow,
    /// Whether the gate announces it once kept ([`Words::keep`]).
    announce: bool,
    spec: ExecutorSpec,
    version: i64,
    limits: RateLimit,
    answer: A,
    held: bool,
    noop: bool,
}

impl Gate {
    /// Decides, keeps and announces one arrival. Blocking (SQLite, or a thread that may
    /// wait for PostgreSQL).
    pub fn accept<D: Door>(&self, door: &D, a: &Arrival<'_>) -> Answered<D::Answer, D::Refusal> {
        let mut tries = 0;
        let mut fresh = false;
        let why = loop {
            let ready = match self.ready(door, a, fresh, Wait::Here) {
                Ok(r) => r,
                Err(why) => break why,
            };
            let Ready { receipt, announce, spec, version, limits, answer, held, noop } = ready;
            let k = Keep { receipt: &receipt, limits: &limits, version, executor: &spec, held };
            let (stored, own) = match door.keep(&self.store, &k) {
                Some(own) => (own, true),
                None => (self.store.accept(record(a, receipt, &spec, version, held, noop), &limits).map(|r| gate_stored(r, held)), false),
            };
            match settled(stored, &mut tries) {
                Ok((row, held)) => return self.let_in(a, answer, held, noop || own, announce, row),
                Err(Some(why)) => break why,
                Err(None) => fresh = true,
            }
        };
        let (answered, knock) = self.refusal(door, a, why, Wait::Here);
        if let Some(r) = &answered.receipt {
            let kept = self.keep_refusal(r, knock.as_ref(), a.at);
            self.announce_refusal(r, kept, knock.is_some(), false);
        }
        answered
    }

    /// [`Gate::accept`] on an async worker: waiting for the commit holds no thread, and on
    /// a team's gate the registry's reads leave the worker.
    pub async fn accept_async<D: Door>(&self, door: &D, a: &Arrival<'_>) -> Answered<D::Answer, D::Refusal> {
        let wait = if on_many_workers() && self.store.is_shared() { Wait::OffWorker } else { Wait::Here };
        let mut tries = 0;
        let mut fresh = false;
        let why = loop {
            let ready = match self.ready(door, a, fresh, wait) {
                Ok(r) => r,
                Err(why) => break why,
            };
            let Ready { receipt, announce, spec, version, limits, answer, held, noop } = ready;
            let k = Keep { receipt: &receipt, limits: &limits, version, executor: &spec, held };
            let (stored, own) = match door.keep(&self.store, &k) {
                Some(own) => (own, true),
                None => (self.store.accept_async(record(a, receipt, &spec, version, held, noop), &limits).await.map(|r| gate_stored(r, held)), false),
            };
            match settled(stored, &mut tries) {
                Ok((row, held)) => return self.let_in(a, answer, held, noop || own, announce, row),
                Err(Some(why)) => break why,
                Err(None) => fresh = true,
            }
        };
        let (answered, knock) = self.refusal(door, a, why, wait);
        if let Some(r) = &answered.receipt {
            let kept = self.keep_refusal_async(r, knock.as_ref(), a.at).await;
            self.announce_refusal(r, kept, knock.is_some(), false);
        }
        answered
    }

    /// Keeps a refusal its door decided before there was an arrival to judge (unreadable,
    /// a signature that fails), within the flood budget, and announces it.
    pub fn refused_early(&self, receipt: &ReceiptRow, now: DateTime<Utc>) {
        let kept = self.keep_refusal(receipt, None, now);
        self.announce_refusal(receipt, kept, false, false);
    }

    /// [`Gate::refused_early`] on an async worker.
    pub async fn refused_early_async(&self, receipt: &ReceiptRow, now: DateTime<Utc>) {
        let kept = self.keep_refusal_async(receipt, None, now).await;
        self.announce_refusal(receipt, kept, false, false);
    }

    /// Keeps a refusal's receipt (and its knock) within the flood budget; whether it was
    /// kept. A door that words its own refusals then announces it ([`Gate::announce_refusal`]).
    pub fn keep_refusal(&self, receipt: &ReceiptRow, knock: Option<&Knock>, now: DateTime<Utc>) -> bool {
        if !self.keep(flood_kind(knock), now) {
            return false;
        }
        recorded(self.store.record_rejection(receipt, knock));
        true
    }

    /// [`Gate::keep_refusal`] on an async worker: waiting for the commit holds no thread.
    pub async fn keep_refusal_async(&self, receipt: &ReceiptRow, knock: Option<&Knock>, now: DateTime<Utc>) -> bool {
        if !self.keep(flood_kind(knock), now) {
            return false;
        }
        recorded(self.store.record_rejection_async(receipt, knock).await);
        true
    }

    /// Tells listeners of an arrival let in (`held`: it waits for the user).
    pub fn announce_accepted(&self, receipt_id: &str, sender: &str, scope: &str, transport: &str, held: bool) {
        self.emit_event(ArrivalEvent {
            receipt_id: receipt_id.to_string(),
            status: Status::Accepted,
            code: None,
            sender: Some(sender.to_string()),
            scope: Some(scope.to_string()),
            transport: transport.to_string(),
            needs_consent: held,
            key_change: false,
        });
    }

    /// Tells listeners of a refusal: each one kept; of the rest past the flood budget, at
    /// most one a second. `asks`: the user is asked (a knock); `key_change`: to check a
    /// sender's keys again.
    pub fn announce_refusal(&self, receipt: &ReceiptRow, kept: bool, asks: bool, key_change: bool) {
        if kept || self.announce_unkept(chrono::Utc::now()) {
            self.emit_event(ArrivalEvent {
                receipt_id: receipt.receipt_id.clone(),
                status: Status::Rejected,
                code: receipt.code.clone(),
                sender: receipt.sender.clone(),
                scope: receipt.scope.clone(),
                transport: receipt.transport.clone(),
                needs_consent: asks || key_change,
                key_change,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn judged<C: Checks>(
        &self,
        checks: &C,
        sender: &str,
        asked: &Asked<'_>,
        consent: Option<&TrustEntry>,
        setting: &str,
        replay_key: Option<&[u8]>,
        fresh: bool,
        wait: Wait,
    ) -> Result<Admitted, Why<C::Refusal>> {
        let read = |fresh: bool| {
            let cached = if fresh { None } else { self.store.cached_admission(sender, setting) };
            match cached {
                Some(view) => Ok(view),
                None => wait.run(|| self.store.admission(sender, setting)),
            }
        };
        let judged = |v: &Admission| match admit(v, consent, asked, checks) {
            Verdict::Accept { held, .. } => Ok(held),
            Verdict::Knock => Err(Why::Knock),
            Verdict::Refuse(r) => Err(Why::Refused(r)),
        };
        let mut view = read(fresh).map_err(Why::Store)?;
        let mut verdict = judged(&view);
        if verdict.is_err() && !fresh {
            view = read(true).map_err(Why::Store)?;
            verdict = judged(&view);
        }
        let held = match verdict {
            Ok(held) => held,
            // Replay is decided inside the accepting transaction. An arrival about to be
            // refused for trust or policy is looked up here first, so a replay is told as
            // one (and never knocks) without a read per arrival let in.
            Err(why) => {
                let Some(nonce) = replay_key else { return Err(why) };
                return Err(match wait.run(|| self.store.nonce_seen(nonce)) {
                    Ok(true) => Why::Replay,
                    Ok(false) => why,
                    Err(e) => Why::Store(e),
                });
            }
        };
        let Some(entry) = admitted_under(&view, consent) else {
            return Err(Why::Executor("admitted without a trust entry".into()));
        };
        let limits = entry.policy.rate_limit.clone();
        let executors = self.executor_config(view.setting.as_deref()).map_err(|e| Why::Executor(format!("the executor setting is unreadable: {e}")))?;
        Ok(Admitted { held, limits, executors, version: view.version })
    }

    /// The decision on one view of the registry and the record it leaves. `fresh` reads
    /// the registry first; otherwise the view last read is used and the commit refuses the
    /// record if the registry has changed since. A refusal never rests on a cached view.
    fn ready<D: Door>(&self, door: &D, a: &Arrival<'_>, fresh: bool, wait: Wait) -> Result<Ready<D::Answer>, Why<D::Refusal>> {
        // Its sender names its scope: one a door keeps for what it records itself is not
        // the sender's to ask for.
        let scopes = a.asks.unwrap_or(std::slice::from_ref(&a.scope));
        if let Some(s) = std::iter::once(&a.scope).chain(scopes).find(|s| self.reserved_against(a.door, s)) {
            return Err(Why::Reserved(s.clone()));
        }
        let asked = Asked { scopes, size: a.size, delegated: a.on_behalf_of.is_some(), at: a.at };
        // A door that keeps no nonce with the gate's has none to look up.
        let replay_key = (!a.kept.nonce.is_empty()).then_some(a.kept.nonce.as_slice());
        let admitted = self.judged(door, &a.sender, &asked, a.consent, SETTINGS_KEY, replay_key, fresh, wait)?;
        let (held, spec) = (admitted.held, admitted.executor(&a.scope));
        // The no-op executor has nothing to run: its outcome is stored with the envelope,
        // which spares the runner two status commits per envelope.
        let noop = !held && *spec == ExecutorSpec::Noop;
        let said = door.accepted(a, spec.name(), held);
        let receipt = receipt_row(a, if held { Outcome::Held } else { Outcome::Accepted }, None, None, said.receipt, None);
        Ok(Ready { receipt, announce: said.keep, spec: spec.clone(), version: admitted.version, limits: admitted.limits, answer: said.answer, held, noop })
    }

    /// A record now durable: its job queued (`ran`: nothing for the runner, done at
    /// acceptance or run by its door), its arrival announced.
    fn let_in<A, R>(&self, a: &Arrival<'_>, answer: A, held: bool, ran: bool, announce: bool, row: i64) -> Answered<A, R> {
        if !held && !ran {
            self.execute(row);
        }
        if announce {
            self.announce_accepted(a.receipt_id, &a.sender, &a.scope, a.transport, held);
        }
        Answered { answer, row: Some(row), why: None, receipt: None }
    }

    /// A refusal in its door's words: its receipt (none when the door keeps none) and
    /// the knock to keep with it.
    fn refusal<D: Door>(&self, door: &D, a: &Arrival<'_>, why: Why<D::Refusal>, wait: Wait) -> (Answered<D::Answer, D::Refusal>, Option<Knock>) {
        let said = door.refused(a, &why);
        if !said.keep {
            return (Answered { answer: said.answer, row: None, why: Some(why), receipt: None }, None);
        }
        // A stranger knocks; so does a sender the user trusts, writing about a scope it is
        // not allowed, when the user asked to be asked (the question is about that scope).
        let (knocks, scope) = match &why {
            Why::Knock => (true, &a.scope),
            // The rule is read where the registry is (off the async worker on a team's gate).
            Why::Refused(Refusal::Scope(s)) if wait.run(|| self.asks_new_scopes()) => (true, s),
            _ => (false, &a.scope),
        };
        let body = a.keeps_refused.then(|| {
            let cut = a.kept.raw.len().min(if knocks { KEEP_KNOCK_BYTES } else { KEEP_REFUSED_BYTES });
            (String::from_utf8_lossy(a.kept.raw.get(..cut).unwrap_or_default()).into_owned(), cut < a.kept.raw.len())
        });
        let receipt = receipt_row(a, why.outcome(|r| door.outcome(r)), said.code, said.message, said.receipt, body);
        let knock = knocks.then(|| Knock {
            door: a.door,
            sender: a.sender.clone(),
            scope: scope.clone(),
            envelope_id: a.kept.id.clone(),
            at: a.received_at.to_string(),
        });
        (Answered { answer: said.answer, row: None, why: Some(why), receipt: Some(receipt) }, knock)
    }
}

/// Whether this runs on a multi-threaded async runtime, where work that waits or computes
/// long can hand the worker's other tasks to the rest of the pool (`block_in_place`).
pub fn on_many_workers() -> bool {
    tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// The flood budget a refusal is kept under: a knock's, or any other refusal's.
fn flood_kind(knock: Option<&Knock>) -> crate::flood::Kind {
    if knock.is_some() {
        crate::flood::Kind::Knock
    } else {
        crate::flood::Kind::Refusal
    }
}

/// A refusal's receipt that could not be written is logged: its sender has its answer.
fn recorded(stored: gatehouse_store::Result<()>) {
    if let Err(e) = stored {
        tracing::error!(error = %e, "could not record a refusal's receipt");
    }
}

/// The store's answer to a commit: the row (and whether it is held), why it was refused,
/// or None to decide again (the registry changed under it).
fn settled<R>(stored: gatehouse_store::Result<Stored<R>>, tries: &mut u32) -> Result<(i64, bool), Option<Why<R>>> {
    let refused = match stored {
        Ok(Stored::Row { row, held }) => return Ok((row, held)),
        Ok(Stored::Door(r)) => return Err(Some(Why::Refused(Refusal::Door(r)))),
        Err(e) => return Err(Some(Why::Store(e))),
        Ok(Stored::Refused(r)) => r,
    };
    match refused {
        AcceptRefusal::Replay => Err(Some(Why::Replay)),
        AcceptRefusal::RateLimited { window, limit, retry_after_secs } => Err(Some(Why::RateLimited { window, limit, retry_after_secs })),
        AcceptRefusal::Stale if *tries < MAX_STALE_RETRIES => {
            *tries += 1;
            Err(None)
        }
        AcceptRefusal::Stale => Err(Some(Why::Unsettled)),
    }
}

/// The gate's own commit's answer, as a door's record answers.
fn gate_stored<R>(r: Result<i64, AcceptRefusal>, held: bool) -> Stored<R> {
    match r {
        Ok(row) => Stored::Row { row, held },
        Err(refused) => Stored::Refused(refused),
    }
}
