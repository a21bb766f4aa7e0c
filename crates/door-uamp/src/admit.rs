//! Admitting one UAMP envelope: the door's checks in their documented order (schema,
//! signature and sender key, freshness, trust and scope, capability token, intent rules,
//! stream state) and the one transaction that stores it with its receipt, where a message
//! id seen before is refused as a replay (`Store::uamp_accept`).

use super::*;
use gatehouse_gate::{Refusal, Why};

impl UampDoor {
    // A Failure is built once per refused request and becomes its receipt; boxing it
    // would cost an allocation on the path floods take and save nothing.
    #[allow(clippy::result_large_err)]
    pub(super) fn check_and_store(&self, bytes: &[u8], auth: &TransportAuth, now: DateTime<Utc>, receipt_id: &str) -> Result<Accepted, Failure> {
        let env = Envelope::parse(bytes).map_err(Failure::from)?;
        let mut fail = |e: UampError| Failure::about(&env, e);
        if !env.is_for(&self.did) {
            return Err(fail(UampError::new(Code::Unauthorized, "wrong_recipient", format!("this inbox is {}, which `to` does not name", self.did))));
        }
        // Replays are caught by message id, kept as long as messages are: an envelope
        // must be recent enough for that, and not from a clock far ahead.
        let fresh = self.inbox.freshness();
        let ahead = (env.ts - now).num_seconds();
        if ahead > 0 && ahead as u64 > fresh.max_clock_skew_secs {
            return Err(fail(UampError::new(
                Code::BadRequest,
                "clock_skew",
                format!("ts is {ahead} s ahead of this inbox's clock (at most {} s is allowed)", fresh.max_clock_skew_secs),
            )));
        }
        let age = (now - env.ts).num_seconds();
        if fresh.max_lifetime_secs > 0 && age > 0 && age as u64 > fresh.max_lifetime_secs {
            return Err(fail(UampError::new(
                Code::BadRequest,
                "stale",
                format!("ts is {age} s old; this inbox takes envelopes at most {} s old", fresh.max_lifetime_secs),
            )));
        }
        let store = self.store();
        let adm = store.admission(&env.from, gatehouse_gate::executor::SETTINGS_KEY).map_err(|e| fail(storage(e)))?;
        let known = trust_keys(adm.trust.as_ref());
        let trusted = adm.trust.is_some();
        let key = match verify::key_for(&env, &known) {
            Ok(k) => Some(k),
            // An unknown did:web sender cannot be checked until the user adds it (its
            // DID document is fetched then); it still knocks.
            Err(e) if e.reason == "unknown_key" && !trusted => None,
            Err(e) => return Err(key_change(fail(e), &env, trusted)),
        };
        if let Some(k) = &key {
            verify::verify(&env, k).map_err(|e| key_change(fail(e), &env, trusted))?;
        }
        if store.uamp_message(&env.uuid.to_string()).map_err(|e| fail(storage(e)))?.is_some() {
            return Err(fail(replay(&env)));
        }
        let scope = scope_of(&env);
        // Acknowledging or cancelling one's own stream needs no scope of its own: it only
        // steers what the `ask` that opened the stream was allowed to start.
        let steers = matches!(env.intent, Intent::Progress | Intent::Cancel);
        // A capability token names the scopes asked for once the sender is known: it must
        // verify (issued by the sender's key or this inbox's). An unknown sender's token is
        // not read: its knock asks for its signed intent.
        let token = match (&env.cap_token, adm.trust.is_some()) {
            (Some(tok), true) => {
                let mut keys: Vec<PublicKey> = key.iter().cloned().collect();
                keys.push(PublicKey::Ed25519(self.key.verifying_key()));
                Some(captoken::check(tok, &[&self.did], now.timestamp(), &keys))
            }
            _ => None,
        };
        let scopes = match &token {
            _ if steers => Vec::new(),
            Some(Ok(claims)) if !claims.scopes.is_empty() => claims.scopes.clone(),
            _ => vec![scope.clone()],
        };
        let asked = gatehouse_gate::Asked { scopes: &scopes, size: bytes.len() as u64, delegated: false, at: now };
        let checks = UampChecks { store, env: &env, auth, token: token.as_ref().and_then(|t| t.as_ref().err()) };
        // UAMP keeps its messages with their streams, and their ids against replay, itself:
        // the gate decides on the registry read now, in the same order as for every door.
        let admitted = match self.inbox.judge(&checks, &env.from, &asked, gatehouse_gate::executor::SETTINGS_KEY, None) {
            Ok(a) => a,
            Err(Why::Knock) => {
                let mut f = fail(UampError::new(
                    Code::Unauthorized,
                    "untrusted_sender",
                    format!("{} is not in this inbox's trust registry; the user has been asked", env.from),
                ));
                // The knock asks for its signed intent: a capability token's scope is not checked
                // until the sender is trusted, so it must not decide what the prompt grants.
                let asked = env.intent.as_str().to_string();
                f.scope = Some(asked.clone());
                f.knock = Some(Knock {
                    door: crate::DOOR,
                    sender: env.from.clone(),
                    scope: asked,
                    envelope_id: env.id.clone(),
                    at: gatehouse_gate::clock::utc_string(now),
                });
                return Err(f);
            }
            Err(Why::Refused(r)) => {
                return Err(fail(match r {
                    Refusal::Blocked => UampError::new(Code::Unauthorized, "blocked", format!("{} is blocked", env.from)),
                    Refusal::Revoked(reason) => {
                        let why = if reason.is_empty() { String::new() } else { format!(": {reason}") };
                        UampError::new(Code::Unauthorized, "revoked", format!("{}'s key was revoked by the user of this inbox{why}", env.from))
                    }
                    Refusal::Door(e) => e,
                    Refusal::Scope(s) => UampError::new(Code::Unauthorized, "policy_denied", format!("scope {s:?} is not allowed for {}", env.from)),
                    // UAMP carries no delegation.
                    Refusal::Delegation => UampError::new(Code::Unauthorized, "policy_denied", "delegated messages are not allowed"),
                    Refusal::Size { limit, .. } => UampError::new(Code::PayloadTooLarge, "too_large", format!("policy allows this sender {limit} bytes")),
                }));
            }
            Err(Why::Store(e)) => return Err(fail(storage(e))),
            Err(Why::Reserved(s)) => {
                return Err(fail(UampError::new(Code::Unauthorized, "policy_denied", format!("the scope {s:?} is Gatehouse's own; no agent may ask for it"))))
            }
            Err(other) => {
                let what = other.outcome(|_| gatehouse_code::Outcome::Malformed).as_str();
                return Err(fail(UampError::new(Code::BackendBusy, "internal", format!("the gate could not decide ({what})"))));
            }
        };
        let held = admitted.held;
        // What the intent does to an existing stream is checked before anything is stored.
        let effect_target = match env.intent {
            Intent::Cancel | Intent::Progress => Some(self.target_stream(&env).map_err(&mut fail)?),
            _ => None,
        };
        let ack_seq = match env.intent {
            Intent::Progress => Some(ack_of(&env).map_err(&mut fail)?),
            _ => None,
        };
        let opens = env.intent.opens_stream();
        // "Ask me first": the stream is opened and kept, its executor waits for the user.
        let held = opens && held;
        if opens && self.streams.active() >= MAX_ACTIVE_STREAMS {
            let mut f = fail(UampError::new(Code::BackendBusy, "busy", format!("{MAX_ACTIVE_STREAMS} streams are running; try again shortly")));
            f.retry_after = Some(BUSY_RETRY_AFTER_SECS);
            return Err(f);
        }
        let stream_id = opens.then(|| env.stream_id.clone().unwrap_or_else(|| format!("str-{}", uuid::Uuid::now_v7())));
        let received_at = gatehouse_gate::clock::utc_string(now);
        let mut receipt = json!({
            "receipt_id": receipt_id,
            "status": "accepted",
            "message_id": env.id,
            "received_at": received_at,
        });
        if let Some(s) = &stream_id {
            receipt["stream_id"] = s.clone().into();
        }
        if held {
            receipt["held_for_consent"] = true.into();
        }
        let row = ReceiptRow {
            receipt_id: receipt_id.to_string(),
            envelope_id: Some(env.id.clone()),
            status: "accepted".into(),
            code: None,
            message: None,
            received_at: received_at.clone(),
            received_ms: now.timestamp_millis(),
            transport: "uamp".into(),
            sender: Some(env.from.clone()),
            scope: Some(scope.clone()),
            body: None,
            body_truncated: false,
            receipt: receipt.clone(),
            prompt: Some(env.body.content.clone()),
            envelope_row: None,
            outcome: Some(if held { gatehouse_code::Outcome::Held } else { gatehouse_code::Outcome::Accepted }),
        };
        let msg = NewUampMessage {
            message_id: env.uuid.to_string(),
            direction: "in",
            sender: env.from.clone(),
            recipients: env.to.clone(),
            intent: env.intent.as_str().into(),
            stream_id: stream_id.clone().or_else(|| env.stream_id.clone()),
            reply_to: env.reply_to.as_deref().and_then(gatehouse_uamp::envelope::parse_uuid).map(|u| u.to_string()),
            scope: Some(scope.clone()),
            body_type: env.body.media_type.clone(),
            content: env.body.content.clone(),
            ts: env.ts.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            received_at: received_at.clone(),
            received_ms: now.timestamp_millis(),
            raw: String::from_utf8_lossy(bytes).into_owned(),
            receipt_id: receipt_id.to_string(),
        };
        let new_stream = stream_id.as_ref().map(|s| NewStream {
            stream_id: s.clone(),
            direction: "in",
            peer: env.from.clone(),
            delta_window: env.delta_window,
            // Chosen once, here: what runs, now or once the user allows it.
            executor_spec: serde_json::to_string(admitted.executor(&scope)).ok(),
        });
        let limits = if steers { gatehouse_store::RateLimit::default() } else { admitted.limits.clone() };
        match store.uamp_accept(&msg, new_stream.as_ref(), &row, &limits).map_err(|e| fail(storage(e)))? {
            Ok(_) => {}
            Err(UampRefusal::Replay) => return Err(fail(replay(&env))),
            Err(UampRefusal::StreamExists) => {
                return Err(fail(UampError::invalid("/stream_id", "names a stream that already exists").with_reason("stream_exists")))
            }
            Err(UampRefusal::RateLimited { retry_after_secs }) => {
                let mut f = fail(UampError::new(Code::BackendBusy, "rate_limited", format!("{}'s policy allows no more messages now", env.from)));
                f.retry_after = Some(retry_after_secs);
                return Err(f);
            }
        }
        if let (true, Some(s)) = (held, &stream_id) {
            store.uamp_hold(s, &received_at).map_err(|e| fail(storage(e)))?;
        }
        let mut effect = None;
        if let Some(target) = effect_target {
            effect = Some(match env.intent {
                Intent::Cancel => {
                    let was = self.streams.cancel(self.store(), &target, &env.from);
                    json!({"stream_id": target, "cancelled": was})
                }
                _ => {
                    let seq = ack_seq.expect("progress has an ack");
                    let acked = self.streams.ack(self.store(), &target, seq).map_err(|e| fail(storage(e)))?;
                    json!({"stream_id": target, "acked_seq": acked})
                }
            });
        }
        let job = stream_id.clone().map(|s| {
            (
                s,
                streams::Job {
                    spec: admitted.executor(&scope).clone(),
                    message_id: env.id.clone(),
                    sender: env.from.clone(),
                    scope: scope.clone(),
                    body: env.body.clone(),
                    window: env.delta_window,
                },
            )
        });
        Ok(Accepted { sender: env.from.clone(), scope, receipt, stream: stream_id, effect, job, held })
    }

    /// The stream a `cancel` or `progress` envelope is about: its `stream_id`, or the
    /// stream of the message it replies to; it must be one this sender opened here.
    pub(super) fn target_stream(&self, env: &Envelope) -> Result<String, UampError> {
        let store = self.store();
        let id = match (&env.stream_id, &env.reply_to) {
            (Some(s), _) => s.clone(),
            (None, Some(r)) => {
                let parent = gatehouse_uamp::envelope::parse_uuid(r).map(|u| u.to_string()).unwrap_or_default();
                store
                    .uamp_message(&parent)
                    .map_err(storage)?
                    .and_then(|m| m.stream_id)
                    .ok_or_else(|| UampError::invalid("/reply_to", "names no message with a stream here").with_reason("unknown_stream"))?
            }
            (None, None) => {
                return Err(UampError::invalid("/stream_id", format!("a {} names its stream (stream_id or reply_to)", env.intent.as_str()))
                    .with_reason("unknown_stream"))
            }
        };
        let s = store.uamp_stream(&id).map_err(storage)?;
        match s {
            Some(s) if s.direction == "in" && s.peer == gatehouse_store::sender_key(&env.from) => Ok(id),
            _ => Err(UampError::invalid("/stream_id", format!("{id:?} is not a stream {} opened here", env.from)).with_reason("unknown_stream")),
        }
    }
}

/// What only the UAMP door checks, at the gate's places for it.
struct UampChecks<'a> {
    store: &'a Store,
    env: &'a Envelope,
    auth: &'a TransportAuth,
    /// Why the capability token sent does not verify, if it does not.
    token: Option<&'a UampError>,
}

impl gatehouse_gate::Checks for UampChecks<'_> {
    type Refusal = UampError;

    /// A trusted sender also proves itself at the transport: the bearer token the user
    /// issued to it, or a client certificate on one of its keys. A token that is sent
    /// must be good: a revoked one is refused even beside a good certificate, so
    /// revoking is never silently undone. Then its capability token, if it sent one.
    fn credentials(&self, trust: &TrustEntry) -> Result<(), UampError> {
        self.transport(trust)?;
        self.token.map_or(Ok(()), |e| Err(e.clone()))
    }
}

impl UampChecks<'_> {
    fn transport(&self, trust: &TrustEntry) -> Result<(), UampError> {
        let (env, auth) = (self.env, self.auth);
        let by_cert = auth.client_key.as_ref().is_some_and(|k| key_speaks_for(k, &env.from, Some(trust)));
        match &auth.bearer {
            None if by_cert => Ok(()),
            None => Err(match &auth.client_key {
                Some(k) => UampError::new(
                    Code::Unauthenticated,
                    "client_cert_mismatch",
                    format!("the client certificate's key {} is not a key of {}; present that sender's certificate or its bearer token", k.did_key(), env.from),
                ),
                None => UampError::new(
                    Code::Unauthenticated,
                    "no_credentials",
                    "present a client certificate on your key (mTLS) or the bearer token this inbox issued to you (Authorization: Bearer …)",
                ),
            }),
            Some(t) => match self.store.uamp_token_sender(&gatehouse_uamp::canonical::sha256_hex(t.as_bytes())).map_err(storage)? {
                Some(s) if s == gatehouse_store::sender_key(&env.from) => Ok(()),
                Some(_) => Err(UampError::new(Code::Unauthenticated, "token_sender_mismatch", "the bearer token was issued to another sender")),
                None => Err(UampError::new(Code::Unauthenticated, "unknown_token", "the bearer token is unknown or revoked")),
            },
        }
    }
}

/// The scope an envelope asks for: the first `scope` of its capability token when it has
/// one (checked later against the token), else its intent. See docs/interop.md.
pub(super) fn scope_of(env: &Envelope) -> String {
    env.cap_token
        .as_deref()
        .and_then(|t| gatehouse_uamp::jws::Compact::parse(t).ok())
        .and_then(|c| serde_json::from_slice::<Value>(&c.payload()).ok())
        .and_then(|claims| claims.get("scope").and_then(|s| s.as_str()).and_then(|s| s.split_whitespace().next()).map(str::to_string))
        .unwrap_or_else(|| env.intent.as_str().to_string())
}

/// The `delta_seq` a `progress` envelope acknowledges: `ext.delta_seq`, or a JSON body
/// `{"delta_seq": n}`. Without one it is 4.09, the spec's code for a missing delta_seq.
pub(super) fn ack_of(env: &Envelope) -> Result<i64, UampError> {
    let from_ext = env.ext.as_ref().and_then(|e| e.get("delta_seq")).and_then(|v| v.as_i64());
    let from_body = || serde_json::from_str::<Value>(&env.body.content).ok().and_then(|v| v.get("delta_seq").and_then(|v| v.as_i64()));
    from_ext.or_else(from_body).filter(|n| *n >= 0).ok_or_else(|| {
        UampError::new(
            Code::MissingDeltaSeq,
            "missing_delta_seq",
            "a progress acknowledgement carries the delta_seq it acknowledges (ext.delta_seq or a JSON body {\"delta_seq\": n})",
        )
    })
}

/// A trusted did:web sender whose signature names a key id not kept for it, or whose
/// kept key does not match: its DID document may have changed since the user trusted it.
/// The message stays refused (no envelope makes the inbox fetch anything); the user is
/// asked to check the DID document again. Any other refusal is returned as it is.
fn key_change(mut f: Failure, env: &Envelope, trusted: bool) -> Failure {
    let suspect = matches!(f.error.reason, "unknown_key" | "invalid_signature");
    if trusted && suspect && env.from.starts_with("did:web:") {
        f.key_change = Some(env.sig.kid.clone().unwrap_or_default());
        f.error.message.push_str("; if its keys changed, the user has been asked to check its DID document again");
    }
    f
}

pub(super) fn trust_keys(trust: Option<&TrustEntry>) -> Vec<(String, PublicKey)> {
    trust.map(|t| t.policy.uamp_keys.iter().filter_map(|k| PublicKey::from_jwk(&k.jwk).ok().map(|pk| (k.kid.clone(), pk))).collect()).unwrap_or_default()
}

pub(super) fn replay(env: &Envelope) -> UampError {
    UampError::new(Code::Unauthorized, "replay", format!("message {} was received before", env.id))
}

pub(super) fn storage(e: gatehouse_store::StoreError) -> UampError {
    tracing::error!(error = %e, "store failed during a UAMP submission");
    let mut err = UampError::new(Code::BackendBusy, "storage", format!("the inbox could not store the message: {e}"));
    err.message.truncate(300);
    err
}

pub(super) fn internal(message: String) -> Answer {
    let e = UampError::new(Code::BackendBusy, "internal", message);
    Answer { status: 504, body: e.body(), location: None, retry_after: Some(BUSY_RETRY_AFTER_SECS) }
}

pub(super) struct Accepted {
    pub(super) sender: String,
    pub(super) scope: String,
    pub(super) receipt: Value,
    pub(super) stream: Option<String>,
    pub(super) effect: Option<Value>,
    pub(super) job: Option<(String, streams::Job)>,
    pub(super) held: bool,
}

/// What an accepted envelope starts.
pub(super) enum Start {
    Run(String, Box<streams::Job>),
    /// The stream waits for the user's consent.
    Hold(String),
}

pub(super) struct Failure {
    pub(super) error: UampError,
    pub(super) message_id: Option<String>,
    pub(super) sender: Option<String>,
    pub(super) scope: Option<String>,
    pub(super) prompt: Option<String>,
    pub(super) knock: Option<Knock>,
    /// A trusted sender signed with a key not kept for it: the key id it named.
    pub(super) key_change: Option<String>,
    pub(super) retry_after: Option<u64>,
}

impl From<UampError> for Failure {
    fn from(error: UampError) -> Self {
        Failure { error, message_id: None, sender: None, scope: None, prompt: None, knock: None, key_change: None, retry_after: None }
    }
}

impl Failure {
    pub(super) fn about(env: &Envelope, error: UampError) -> Self {
        let retry_after = (error.code == Code::BackendBusy).then_some(BUSY_RETRY_AFTER_SECS);
        Failure {
            error,
            message_id: Some(env.id.clone()),
            sender: Some(env.from.clone()),
            scope: Some(scope_of(env)),
            prompt: Some(env.body.content.clone()),
            knock: None,
            key_change: None,
            retry_after,
        }
    }
}
