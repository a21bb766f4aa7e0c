//! The gate's state every door shares: the store, this inbox's key, the events the window
//! hears, the executor queue, the flood gate, caches of what is read per envelope, and the
//! doors the composition registered. Doors reach the store, events and executors through this; the
//! gate never names a door (whoever knows a door's type finds it with [`Gate::door`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use ed25519_dalek::VerifyingKey;
use gatehouse_store::Store;
use tokio::sync::mpsc;

use crate::executor::ExecutorConfig;

/// An arrival answered, told to whoever listens (the desktop shell) as it happens.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ArrivalEvent {
    pub receipt_id: String,
    pub status: Status,
    /// Why it was refused or knocks, in its door's words (`UNTRUSTED_SENDER`).
    pub code: Option<String>,
    pub sender: Option<String>,
    pub scope: Option<String>,
    pub transport: String,
    /// The user is asked: an unknown sender knocked, or an envelope is held.
    pub needs_consent: bool,
    /// A trusted sender signed with a key not kept for it: the user is asked to check its
    /// keys again.
    pub key_change: bool,
}

/// Whether an arrival was taken in (held for the user included) or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Accepted,
    Rejected,
}

/// How far ahead of this machine's clock a message's time may be, and how long it may
/// say it lasts (the `freshness` setting; each door reads its protocol's times by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Freshness {
    /// How far a message's time may be ahead of this machine's clock, in seconds.
    pub max_clock_skew_secs: u64,
    /// The longest validity taken, in seconds; 0: no bound.
    pub max_lifetime_secs: u64,
}

impl Default for Freshness {
    /// Gatehouse's default: five minutes of skew, thirty days of validity.
    fn default() -> Self {
        Freshness { max_clock_skew_secs: 300, max_lifetime_secs: 30 * 24 * 3600 }
    }
}

pub struct Gate {
    pub(crate) store: Arc<Store>,
    pub(crate) public_key: String,
    pub(crate) executions: Option<mpsc::UnboundedSender<i64>>,
    pub(crate) events: tokio::sync::broadcast::Sender<ArrivalEvent>,
    /// Rung when an arrival adds to what waits (a knock, a hold, a key change): followers
    /// of what waits wake for those only, not for every receipt.
    pub(crate) waiting: tokio::sync::broadcast::Sender<()>,
    pub(crate) progress: tokio::sync::broadcast::Sender<crate::runner::ExecProgress>,
    /// Senders' decompressed public keys (decompressing is a fifth of a verification).
    keys: Mutex<HashMap<String, VerifyingKey>>,
    /// The executor setting as last read, parsed once per change rather than per envelope.
    pub(crate) executors: Mutex<Option<(Option<String>, Arc<ExecutorConfig>)>>,
    /// The doors running on this inbox (weakly: a stopped door is gone, not kept alive).
    doors: Mutex<Vec<std::sync::Weak<dyn std::any::Any + Send + Sync>>>,
    /// Clock skew and validity this inbox takes (the `freshness` setting, read at start).
    pub(crate) freshness: Freshness,
    /// How many refusals and knocks are kept per minute (the rest is counted).
    pub(crate) flood: crate::flood::Gate,
    /// Scopes doors record for themselves (the composition names them): no sender may
    /// ask for one at a door that takes any scope.
    reserved: Vec<(&'static str, &'static str)>,
    /// What this machine's operator allowed to run here (programs, folders).
    runs_here: crate::executor::here::RunsHere,
    /// What this node found wrong with the state it shares (its activity log rewound),
    /// by what it is about: told on `/ready` until it is found right again.
    problems: Mutex<std::collections::BTreeMap<&'static str, String>>,
}

/// Distinct sender keys kept decompressed; past this the cache starts over.
const KEY_CACHE_ENTRIES: usize = 4096;

/// The setting that bounds clock skew and message lifetime ([`Freshness`]).
pub const FRESHNESS_SETTING: &str = "freshness";
/// Whether a trusted sender's message in a scope it is not allowed asks the user (true,
/// unless the user said otherwise) or is only refused.
pub const ASK_NEW_SCOPES_SETTING: &str = "ask_new_scopes";

/// The rule as `store` keeps it: asking unless the user said otherwise.
pub fn asks_new_scopes_in(store: &Store) -> Result<bool, gatehouse_store::StoreError> {
    Ok(store.setting::<bool>(ASK_NEW_SCOPES_SETTING)?.unwrap_or(true))
}

impl Gate {
    pub fn new(store: Arc<Store>, public_key: &str) -> Self {
        Gate {
            public_key: public_key.to_ascii_lowercase(),
            executions: None,
            events: tokio::sync::broadcast::channel(256).0,
            waiting: tokio::sync::broadcast::channel(16).0,
            progress: tokio::sync::broadcast::channel(256).0,
            keys: Mutex::new(HashMap::new()),
            executors: Mutex::new(None),
            runs_here: Default::default(),
            problems: Mutex::default(),
            doors: Mutex::new(Vec::new()),
            freshness: store.setting(FRESHNESS_SETTING).ok().flatten().unwrap_or_default(),
            flood: crate::flood::Gate::default(),
            reserved: Vec::new(),
            store,
        }
    }

    /// The scopes doors keep for what they record themselves (an agent registered, a site
    /// pinned), each with the door it is kept for: no other door's sender may ask for one.
    pub fn with_reserved_scopes(mut self, scopes: &[(&'static str, &'static str)]) -> Self {
        self.reserved = scopes.to_vec();
        self
    }

    /// Whether `scope` is one a door keeps for itself ([`Gate::with_reserved_scopes`]).
    pub fn reserved_scope(&self, scope: &str) -> bool {
        self.reserved.iter().any(|(_, s)| *s == scope)
    }

    /// Whether `scope` is kept for a door other than `door`: not for its senders to ask.
    pub fn reserved_against(&self, door: &str, scope: &str) -> bool {
        self.reserved.iter().any(|(d, s)| *s == scope && *d != door)
    }

    /// Whether one more refusal or knock may be kept now (see [`crate::flood`]).
    pub fn keep(&self, kind: crate::flood::Kind, now: DateTime<Utc>) -> bool {
        self.flood.keep(kind, now.timestamp_millis(), &self.store)
    }

    /// Whether a refusal that was not kept is announced anyway (at most once a second).
    pub fn announce_unkept(&self, now: DateTime<Utc>) -> bool {
        self.flood.announce(now.timestamp_millis())
    }

    /// Refusals and knocks that arrived beyond the per-minute budget and were only counted.
    pub fn unkept(&self) -> crate::flood::Unkept {
        self.flood.unkept(&self.store)
    }

    /// The clock skew and lifetime this inbox takes (every door alike).
    pub fn freshness(&self) -> Freshness {
        self.freshness
    }

    /// Whether a trusted sender writing about a scope it is not allowed asks the user: read
    /// on each such refusal (few, and bounded by the flood budget), so a change made at any
    /// node holds at once.
    pub fn asks_new_scopes(&self) -> bool {
        asks_new_scopes_in(&self.store).unwrap_or(true)
    }

    /// A door running on this inbox makes itself findable (as it starts, or when the
    /// composition starts it).
    pub fn register_door<T: std::any::Any + Send + Sync>(&self, door: &Arc<T>) {
        let weak: std::sync::Weak<dyn std::any::Any + Send + Sync> = Arc::downgrade(door) as _;
        let mut doors = self.doors.lock().unwrap_or_else(|p| p.into_inner());
        doors.retain(|d| d.strong_count() > 0);
        doors.push(weak);
    }

    /// A sender's Ed25519 key, decompressed once (`parse` reads it as its door spells it)
    /// and kept: decompressing is a fifth of a verification.
    pub fn verifying_key(&self, spelled: &str, parse: impl FnOnce(&str) -> Result<VerifyingKey, String>) -> Result<VerifyingKey, String> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keys.get(spelled) {
            return Ok(*k);
        }
        let k = parse(spelled)?;
        if keys.len() >= KEY_CACHE_ENTRIES {
            keys.clear();
        }
        keys.insert(spelled.to_string(), k);
        Ok(k)
    }

    /// Runs a failed envelope's executor again (the user asked), under the executor set
    /// now; false when this inbox's runner is not running (paused).
    pub fn retry(&self, row_id: i64) -> Result<bool, crate::runner::RetryError> {
        crate::runner::requeue_failed(self.store(), row_id)?;
        Ok(self.execute(row_id))
    }

    /// The running door of type `T` (the newest registered), if any.
    pub fn door<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let doors = self.doors.lock().unwrap_or_else(|p| p.into_inner());
        doors.iter().rev().filter_map(std::sync::Weak::upgrade).find_map(|d| d.downcast::<T>().ok())
    }

    /// Every receipt, as it is recorded.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ArrivalEvent> {
        self.events.subscribe()
    }

    /// Shares an existing event channel (so listeners survive a transport restart).
    /// Tells whoever listens that something arrived, at any door.
    pub fn emit_event(&self, ev: ArrivalEvent) {
        if ev.needs_consent || ev.key_change {
            let _ = self.waiting.send(());
        }
        let _ = self.events.send(ev);
    }

    /// A signal each time an arrival adds to what waits.
    pub fn subscribe_waiting(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.waiting.subscribe()
    }

    pub fn with_events(mut self, events: tokio::sync::broadcast::Sender<ArrivalEvent>) -> Self {
        self.events = events;
        self
    }

    /// Executors at work: a model's answer as it streams, and each result once stored.
    pub fn subscribe_progress(&self) -> tokio::sync::broadcast::Receiver<crate::runner::ExecProgress> {
        self.progress.subscribe()
    }

    pub fn progress_sender(&self) -> tokio::sync::broadcast::Sender<crate::runner::ExecProgress> {
        self.progress.clone()
    }

    /// Programs and folders run only as `here` allows (a machine's own list).
    pub fn with_runs_here(mut self, here: crate::executor::here::RunsHere) -> Self {
        self.runs_here = here;
        self
    }

    pub fn runs_here(&self) -> &crate::executor::here::RunsHere {
        &self.runs_here
    }

    /// Keeps (or, with None, clears) what this node found wrong about `what`.
    pub fn set_problem(&self, what: &'static str, problem: Option<String>) {
        let mut p = self.problems.lock().unwrap_or_else(|e| e.into_inner());
        match problem {
            Some(text) => p.insert(what, text),
            None => p.remove(what),
        };
    }

    /// What this node found wrong, by what it is about.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        self.problems.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    pub fn with_progress(mut self, progress: tokio::sync::broadcast::Sender<crate::runner::ExecProgress>) -> Self {
        self.progress = progress;
        self
    }

    /// Queues an accepted envelope's executor (used when the user releases a held one).
    pub fn execute(&self, row_id: i64) -> bool {
        self.executions.as_ref().is_some_and(|tx| tx.send(row_id).is_ok())
    }

    /// Hands accepted (not held) envelopes to an executor runner.
    pub fn with_executions(mut self, tx: mpsc::UnboundedSender<i64>) -> Self {
        self.executions = Some(tx);
        self
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    pub fn executor_config(&self, raw: Option<&str>) -> Result<Arc<ExecutorConfig>, serde_json::Error> {
        let mut cached = self.executors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, config)) = cached.as_ref() {
            if seen.as_deref() == raw {
                return Ok(config.clone());
            }
        }
        let config = Arc::new(ExecutorConfig::from_setting(raw)?);
        *cached = Some((raw.map(str::to_string), config.clone()));
        Ok(config)
    }
}

/// The identity key of the store's data dir, read from where the data dir records it
/// (the keychain, or the key file): for work done without a caller that holds the key.
pub fn identity_key(store: &gatehouse_store::Store) -> Result<ed25519_dalek::SigningKey, String> {
    let dir = store.data_dir().ok_or("this inbox has no data dir")?;
    gatehouse_keys::load_recorded(dir).map(|i| i.signing_key().clone()).map_err(|e| e.to_string())
}
