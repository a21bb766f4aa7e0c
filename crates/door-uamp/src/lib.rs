//! UAMP 1.0 on the same inbox: the same trust registry, pending senders, block list,
//! executors and receipts as EPP, over its own TLS 1.3 listener.
//!
//! - [`UampDoor::submit`]: one envelope from bytes to an answer; `admit`: its checks
//!   (their order is documented in docs/interop.md) and the transaction that stores it
//! - [`streams`]: streams opened by `ask` / `subscribe`, their executor and back-pressure
//! - [`http`]: the HTTP/2 + SSE binding and the signed manifest
//! - [`ws`]: the WebSocket binding (length-prefixed envelopes and deltas)
//! - [`tls`]: the certificate and the TLS 1.3 server
//! - [`client`]: Gatehouse sending to UAMP peers (manifest, pinning, asks, reassembly)
//! - [`peer`]: a new sender's keys, learnt when the user adds it
//! - [`executor`]: the peer executor (an EPP prompt asked of a UAMP peer), a delegate

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

mod admit;
mod at_gate;
pub mod client;
mod connect;
pub mod executor;
mod follow;
pub mod http;
pub mod peer;
pub mod streams;
pub mod tls;
pub mod ws;

/// This door's name, where it records what knocked at it.
pub const DOOR: &str = "uamp";

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ed25519_dalek::SigningKey;
use gatehouse_store::uamp::{NewStream, NewUampMessage, UampRefusal};
use gatehouse_store::{Knock, ReceiptRow, Store, TrustEntry};
use gatehouse_uamp::did::PublicKey;
use gatehouse_uamp::{captoken, manifest, sign, verify, Code, Envelope, Intent, UampError};
use serde_json::{json, Value};

use admit::{internal, scope_of, trust_keys, Failure, Refused, Start};
use gatehouse_gate::executor::ExecutorConfig;
use gatehouse_gate::state::Gate;

/// Streams running at once; beyond this an `ask` is answered 5.04 with Retry-After.
pub const MAX_ACTIVE_STREAMS: usize = 64;
/// The Retry-After given with 5.04 when the inbox is busy.
pub const BUSY_RETRY_AFTER_SECS: u64 = 5;
/// What is kept of a refused envelope for the user to see.
const KEEP_REJECTED_BYTES: usize = 16 * 1024;

/// What the transport sends back for an envelope.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// `Location` of the stream an `ask` / `subscribe` opened.
    pub location: Option<String>,
    pub retry_after: Option<u64>,
}

/// How the sender authenticated at the transport (spec 6.2): a bearer token the user issued
/// to it, or a client certificate on one of its keys (mTLS).
#[derive(Debug, Clone, Default)]
pub struct TransportAuth {
    /// The `Authorization: Bearer` token, if any.
    pub bearer: Option<String>,
    /// The key of the client certificate presented in the TLS handshake, if any.
    pub client_key: Option<PublicKey>,
}

/// Whether a client certificate's key may speak for `sender`: it is the sender's own
/// did:key, or one of the keys its trust entry holds (a did:web's DID document keys).
pub fn key_speaks_for(key: &PublicKey, sender: &str, trust: Option<&TrustEntry>) -> bool {
    let did = key.did_key();
    did == gatehouse_uamp::did::split_kid(sender).0 || trust_keys(trust).iter().any(|(_, k)| k.did_key() == did)
}

pub struct UampDoor {
    inbox: Arc<Gate>,
    key: SigningKey,
    did: String,
    pub streams: streams::Streams,
    /// Where the TLS listener is, for messages telling plain-HTTP callers where to go.
    pub tls_addr: std::sync::OnceLock<std::net::SocketAddr>,
}

impl UampDoor {
    pub fn new(inbox: Arc<Gate>, key: SigningKey) -> Arc<UampDoor> {
        let did = sign::did_of(&key);
        let uamp = Arc::new(UampDoor { inbox, key, did, streams: streams::Streams::default(), tls_addr: Default::default() });
        // Consent decisions reach held asks through the inbox.
        uamp.inbox.register_door(&uamp);
        uamp
    }

    pub fn inbox(&self) -> &Arc<Gate> {
        &self.inbox
    }

    /// The user allowed a held ask: its executor starts now. False when it was not
    /// waiting (decided already).
    pub fn release(self: &Arc<Self>, stream_id: &str, now: DateTime<Utc>) -> gatehouse_store::Result<bool> {
        let store = self.store();
        if !store.uamp_unhold(stream_id, &gatehouse_gate::clock::utc_string(now))? {
            return Ok(false);
        }
        let Some(s) = store.uamp_stream(stream_id)? else { return Ok(false) };
        let raw = store.uamp_message_raw(s.message_row)?.unwrap_or_default();
        let Ok(env) = Envelope::parse(raw.as_bytes()) else {
            // It was read once to be accepted; if it no longer reads, say so on the stream.
            store.uamp_set_state(stream_id, "ERROR", Some("the stored ask could not be read back"), &gatehouse_gate::clock::utc_string(now))?;
            return Ok(true);
        };
        let scope = scope_of(&env);
        let now_set = ExecutorConfig::load(store)?;
        let now_set = now_set.for_scope(&scope);
        // The executor chosen when the ask was accepted runs, not one set while it waited.
        let spec = match gatehouse_gate::executor::still_chosen(store.uamp_stream_executor(stream_id)?.as_deref(), now_set) {
            Ok(spec) => spec,
            Err(was) => {
                let why = format!(
                    "the executor for “{scope}” was changed after this ask was accepted (for {was}); it was not run. Ask again to use the executor set now ({})",
                    now_set.name()
                );
                self.streams.fail(self.clone(), stream_id.to_string(), why);
                return Ok(true);
            }
        };
        let job = streams::Job { spec, message_id: env.id.clone(), sender: env.from.clone(), scope, body: env.body.clone(), window: s.delta_window };
        self.streams.start(self.clone(), stream_id.to_string(), job);
        Ok(true)
    }

    /// The user refused a held ask: its stream ends with a `cancel` frame, nothing runs.
    pub fn refuse_held(self: &Arc<Self>, stream_id: &str, now: DateTime<Utc>) -> gatehouse_store::Result<bool> {
        if !self.store().uamp_unhold(stream_id, &gatehouse_gate::clock::utc_string(now))? {
            return Ok(false);
        }
        let this = self.clone();
        let sid = stream_id.to_string();
        tokio::spawn(async move { this.streams.refuse(this.clone(), sid).await });
        Ok(true)
    }

    /// Streams a restart interrupted end in ERROR with a last frame saying so, so their
    /// consumers are not left waiting.
    pub fn recover(&self) -> gatehouse_store::Result<usize> {
        let store = self.store();
        for held in store.uamp_held_streams()? {
            self.streams.hold(&held.stream_id);
        }
        let open = store.uamp_unfinished_streams()?;
        let now = gatehouse_gate::clock::utc_string(Utc::now());
        for s in &open {
            let frame = gatehouse_uamp::Delta {
                delta_seq: s.next_seq as u64,
                stream_id: s.stream_id.clone(),
                ts: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                kind: gatehouse_uamp::DeltaType::Error,
                payload: Some(json!({"message": "the inbox restarted while this stream ran"})),
            };
            store.uamp_append_delta(&s.stream_id, s.next_seq as u64, &frame.to_json().to_string(), Some("ERROR"), &now)?;
            store.uamp_set_state(&s.stream_id, "ERROR", Some("interrupted by a restart"), &now)?;
        }
        Ok(open.len())
    }

    /// This inbox's UAMP identity (the did:key of its Ed25519 key).
    pub fn did(&self) -> &str {
        &self.did
    }

    pub fn store(&self) -> &Arc<Store> {
        self.inbox.store()
    }

    /// The manifest this inbox serves (spec 8, schema A.3).
    pub fn manifest(&self) -> gatehouse_uamp::Manifest {
        gatehouse_uamp::Manifest {
            agent: "uamp/1.0".into(),
            description: format!("Gatehouse inbox {}", self.did),
            intents: Intent::ALL.iter().map(|i| i.as_str().to_string()).collect(),
            body_types: vec!["text/plain".into(), "text/markdown".into(), "application/json".into()],
            auth: vec!["oauth2".into(), "mtls".into()],
            limits: manifest::Limits { max_body_kb: Some((gatehouse_uamp::MAX_ENVELOPE_BYTES / 1024) as u64), rate_lph: None },
        }
    }

    pub fn signed_manifest(&self) -> String {
        self.manifest().sign(&self.key, &sign::kid_of(&self.key))
    }

    /// Issues a bearer token for `sender` (shown once; only its hash is kept).
    pub fn issue_token(store: &Store, sender: &str, now: DateTime<Utc>) -> gatehouse_store::Result<String> {
        use rand::RngCore as _;
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let token = format!("ghu_{}", hex::encode(bytes));
        store.uamp_token_add(&gatehouse_uamp::canonical::sha256_hex(token.as_bytes()), sender, &gatehouse_gate::clock::utc_string(now))?;
        Ok(token)
    }

    /// Runs one envelope through the checks, stores it, and answers. Every refusal is
    /// recorded as a receipt (an unknown sender's signed knock also as a pending sender).
    pub async fn submit(self: &Arc<Self>, bytes: &[u8], auth: &TransportAuth, now: DateTime<Utc>) -> Answer {
        let this = self.clone();
        let bytes = bytes.to_vec();
        let auth = auth.clone();
        // Store access blocks (fsync); keep it off the async workers.
        let (answer, start) = tokio::task::spawn_blocking(move || this.submit_blocking(&bytes, &auth, now))
            .await
            .unwrap_or_else(|e| (internal(format!("the inbox failed: {e}")), None));
        match start {
            Some(Start::Run(stream_id, job)) => self.streams.start(self.clone(), stream_id, *job),
            Some(Start::Hold(stream_id)) => self.streams.hold(&stream_id),
            None => {}
        }
        answer
    }

    fn submit_blocking(&self, bytes: &[u8], auth: &TransportAuth, now: DateTime<Utc>) -> (Answer, Option<Start>) {
        let receipt_id = uuid::Uuid::now_v7().to_string();
        match self.check_and_store(bytes, auth, now, &receipt_id) {
            Ok(accepted) => {
                let mut body = accepted.receipt.clone();
                let (status, location) = match &accepted.stream {
                    Some(s) => (202, Some(format!("/v1/stream/{}", s))),
                    None => (200, None),
                };
                if let Some(extra) = &accepted.effect {
                    body["effect"] = extra.clone();
                }
                let start = match (accepted.job, &accepted.stream) {
                    (Some((sid, job)), _) if !accepted.held => Some(Start::Run(sid, Box::new(job))),
                    (_, Some(sid)) if accepted.held => Some(Start::Hold(sid.clone())),
                    _ => None,
                };
                (Answer { status, body, location, retry_after: None }, start)
            }
            Err(Refused::Early(f)) => {
                let body = self.record_refusal(bytes, &f, now, &receipt_id);
                (Answer { status: f.error.code.http_status(), body, location: None, retry_after: f.retry_after }, None)
            }
            // The gate kept its receipt and announced it.
            Err(Refused::Judged(answer)) => (answer, None),
        }
    }

    fn record_refusal(&self, bytes: &[u8], f: &Failure, now: DateTime<Utc>, receipt_id: &str) -> Value {
        let mut body = f.error.body();
        body["receipt_id"] = receipt_id.into();
        body["status"] = "rejected".into();
        if let Some(id) = &f.message_id {
            body["message_id"] = id.clone().into();
        }
        let cut = bytes.len().min(KEEP_REJECTED_BYTES);
        let row = ReceiptRow {
            receipt_id: receipt_id.to_string(),
            envelope_id: f.message_id.clone(),
            status: "rejected".into(),
            code: Some(format!("UAMP_{}", f.error.code.as_str())),
            message: Some(f.error.message.clone()),
            received_at: gatehouse_gate::clock::utc_string(now),
            received_ms: now.timestamp_millis(),
            transport: "uamp".into(),
            sender: f.sender.clone(),
            scope: f.scope.clone(),
            body: (!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes[..cut]).into_owned()),
            body_truncated: cut < bytes.len(),
            receipt: body.clone(),
            prompt: f.prompt.clone(),
            envelope_row: None,
            outcome: Some(if f.knock.is_some() { gatehouse_code::Outcome::Knock } else { outcome_of(&f.error) }),
        };
        let kept = self.inbox.keep_refusal(&row, f.knock.as_ref(), now);
        if let (true, Some(kid), Some(sender)) = (kept, &f.key_change, &f.sender) {
            if let Err(e) = self.store().key_change_seen(sender, kid, f.error.reason, &row.received_at) {
                tracing::error!(error = %e, "could not note a sender's key change");
            }
        }
        self.inbox.announce_refusal(&row, kept, f.knock.is_some(), f.key_change.is_some());
        body
    }
}

/// What a UAMP refusal is, in no door's words (by its reason, else its code).
fn outcome_of(e: &UampError) -> gatehouse_code::Outcome {
    use gatehouse_code::Outcome;
    match e.reason {
        "untrusted_sender" => Outcome::Knock,
        "blocked" => Outcome::Blocked,
        "revoked" => Outcome::Revoked,
        "policy_denied" => Outcome::NotAllowed,
        "too_large" => Outcome::TooLarge,
        "replay" => Outcome::Replay,
        "rate_limited" => Outcome::RateLimited,
        "clock_skew" | "stale" => Outcome::Stale,
        "wrong_recipient" => Outcome::WrongRecipient,
        "storage" | "busy" => Outcome::Unavailable,
        "internal" => Outcome::Internal,
        _ => match e.code {
            Code::BadRequest | Code::MissingDeltaSeq => Outcome::Malformed,
            Code::PayloadTooLarge => Outcome::TooLarge,
            Code::Unauthenticated => Outcome::Unproven,
            Code::Unauthorized => match e.reason {
                "unknown_key" | "invalid_signature" => Outcome::Unproven,
                _ => Outcome::NotAllowed,
            },
            Code::BackendBusy => Outcome::Unavailable,
        },
    }
}
