//! The inbox every door shares: the store, this inbox's key, the events the window hears,
//! the executor queue, the flood gate, and caches of what is read per envelope. The EPP
//! admission steps are in [`crate::pipeline`]; the other doors reach the store, events and
//! executors through this.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use gatehouse_epp::{Envelope, Receipt, VerifyingKey};
use gatehouse_store::Store;
use tokio::sync::mpsc;

use crate::executor::ExecutorConfig;
use crate::pipeline::InboxEvent;

pub struct Inbox {
    pub(crate) store: Arc<Store>,
    pub(crate) public_key: String,
    pub(crate) executions: Option<mpsc::UnboundedSender<i64>>,
    pub(crate) events: tokio::sync::broadcast::Sender<InboxEvent>,
    pub(crate) progress: tokio::sync::broadcast::Sender<crate::runner::ExecProgress>,
    /// Senders' decompressed public keys (decompressing is a fifth of a verification).
    pub(crate) keys: Mutex<HashMap<String, VerifyingKey>>,
    /// The executor setting as last read, parsed once per change rather than per envelope.
    pub(crate) executors: Mutex<Option<(Option<String>, Arc<ExecutorConfig>)>>,
    /// The UAMP side of this inbox, when it runs (consent decisions release its held asks).
    pub(crate) uamp: std::sync::OnceLock<std::sync::Weak<crate::uamp::UampInbox>>,
    pub(crate) guardian: std::sync::OnceLock<std::sync::Weak<crate::guardian::Guardian>>,
    /// Clock skew and validity this inbox takes (the `freshness` setting, read at start).
    pub(crate) freshness: gatehouse_epp::Freshness,
    /// How many refusals and knocks are kept per minute (the rest is counted).
    pub(crate) flood: crate::flood::Gate,
}

/// The setting that bounds clock skew and envelope lifetime ([`gatehouse_epp::Freshness`]).
pub const FRESHNESS_SETTING: &str = "freshness";

/// Distinct sender keys kept decompressed; past this the cache starts over.
const KEY_CACHE_ENTRIES: usize = 4096;

impl Inbox {
    pub fn new(store: Arc<Store>, public_key: &str) -> Self {
        Inbox {
            public_key: public_key.to_ascii_lowercase(),
            executions: None,
            events: tokio::sync::broadcast::channel(256).0,
            progress: tokio::sync::broadcast::channel(256).0,
            keys: Mutex::new(HashMap::new()),
            executors: Mutex::new(None),
            uamp: std::sync::OnceLock::new(),
            guardian: std::sync::OnceLock::new(),
            freshness: store.setting(FRESHNESS_SETTING).ok().flatten().unwrap_or_default(),
            flood: crate::flood::Gate::default(),
            store,
        }
    }

    /// Whether one more refusal or knock may be kept now (see [`crate::flood`]).
    pub(crate) fn keep(&self, kind: crate::flood::Kind, now: DateTime<Utc>) -> bool {
        self.flood.keep(kind, now.timestamp_millis(), &self.store)
    }

    /// Whether a refusal that was not kept is announced anyway (at most once a second).
    pub(crate) fn announce_unkept(&self, now: DateTime<Utc>) -> bool {
        self.flood.announce(now.timestamp_millis())
    }

    /// Refusals and knocks that arrived beyond the per-minute budget and were only counted.
    pub fn unkept(&self) -> crate::flood::Unkept {
        self.flood.unkept(&self.store)
    }

    /// The clock skew and lifetime this inbox takes (EPP and UAMP alike).
    pub fn freshness(&self) -> gatehouse_epp::Freshness {
        self.freshness
    }

    pub(crate) fn link_uamp(&self, uamp: std::sync::Weak<crate::uamp::UampInbox>) {
        let _ = self.uamp.set(uamp);
    }

    /// The running UAMP side of this inbox, if any.
    pub fn uamp(&self) -> Option<Arc<crate::uamp::UampInbox>> {
        self.uamp.get().and_then(std::sync::Weak::upgrade)
    }

    pub(crate) fn link_guardian(&self, g: std::sync::Weak<crate::guardian::Guardian>) {
        let _ = self.guardian.set(g);
    }

    /// The ASOP guardian answering on this inbox's listener, while it runs.
    pub fn guardian(&self) -> Option<Arc<crate::guardian::Guardian>> {
        self.guardian.get().and_then(std::sync::Weak::upgrade)
    }

    /// Every receipt, as it is recorded.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<InboxEvent> {
        self.events.subscribe()
    }

    /// Shares an existing event channel (so listeners survive a transport restart).
    /// Tells the app something arrived through another protocol's transport (UAMP).
    pub fn emit_event(&self, ev: InboxEvent) {
        let _ = self.events.send(ev);
    }

    pub fn with_events(mut self, events: tokio::sync::broadcast::Sender<InboxEvent>) -> Self {
        self.events = events;
        self
    }

    /// Executors at work: a model's answer as it streams, and each result once stored.
    pub fn subscribe_progress(&self) -> tokio::sync::broadcast::Receiver<crate::runner::ExecProgress> {
        self.progress.subscribe()
    }

    pub(crate) fn progress_sender(&self) -> tokio::sync::broadcast::Sender<crate::runner::ExecProgress> {
        self.progress.clone()
    }

    pub fn with_progress(mut self, progress: tokio::sync::broadcast::Sender<crate::runner::ExecProgress>) -> Self {
        self.progress = progress;
        self
    }

    /// Queues an accepted envelope's executor (used when the user releases a held one).
    pub fn execute(&self, row_id: i64) -> bool {
        self.executions.as_ref().is_some_and(|tx| tx.send(row_id).is_ok())
    }

    pub(crate) fn emit(&self, receipt: &Receipt, env: Option<&Envelope>, transport: &str, needs_consent: bool) {
        let _ = self.events.send(InboxEvent {
            receipt_id: receipt.receipt_id.clone(),
            status: receipt.status,
            code: receipt.code(),
            sender: env.map(Envelope::sender_key),
            scope: env.map(|e| e.scope.clone()),
            transport: transport.to_string(),
            needs_consent,
        });
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

    pub(crate) fn sender_key(&self, hex_key: &str) -> Result<VerifyingKey, String> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = keys.get(hex_key) {
            return Ok(*k);
        }
        let k = gatehouse_epp::parse_public_key(hex_key)?;
        if keys.len() >= KEY_CACHE_ENTRIES {
            keys.clear();
        }
        keys.insert(hex_key.to_string(), k);
        Ok(k)
    }

    pub(crate) fn executor_config(&self, raw: Option<&str>) -> Result<Arc<ExecutorConfig>, serde_json::Error> {
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
