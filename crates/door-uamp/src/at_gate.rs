//! One UAMP envelope at the gate: what only this door checks (its transport credentials
//! and capability token; the stream a `cancel` or `progress` steers), its words for the
//! gate's verdict, and its own record (the message with its stream), kept by
//! [`gatehouse_gate::Gate::accept`] like every door's arrival.

use std::sync::Mutex;

use gatehouse_gate::{Keep, Refusal, Stored, Why, Words};
use gatehouse_store::{AcceptRefusal, RateLimit};

use super::admit::{ack_of, replay, storage};
use super::*;

/// The envelope, read and verified, as the gate asks about it.
pub(super) struct AtGate<'a> {
    pub(super) uamp: &'a UampDoor,
    pub(super) env: &'a Envelope,
    pub(super) auth: &'a TransportAuth,
    /// Why the capability token sent does not verify, if it does not.
    pub(super) token: Option<&'a UampError>,
    pub(super) bytes: &'a [u8],
    /// It only steers a stream it opened (`progress`, `cancel`): no scope, no rate.
    pub(super) steers: bool,
    /// The stream it opens (`ask`, `subscribe`).
    pub(super) stream_id: Option<String>,
    /// What became of it once kept (set by [`gatehouse_gate::Door::keep`]).
    pub(super) done: Mutex<Option<Done>>,
}

/// What an envelope the gate let in starts, once it is kept.
pub(super) struct Done {
    pub(super) held: bool,
    pub(super) effect: Option<Value>,
    pub(super) job: Option<(String, streams::Job)>,
}

impl gatehouse_gate::Checks for AtGate<'_> {
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

impl gatehouse_gate::Door for AtGate<'_> {
    type Answer = Answer;

    fn accepted(&self, a: &gatehouse_gate::Arrival<'_>, _executor: &str, held: bool) -> Words<Answer> {
        let mut receipt = json!({
            "receipt_id": a.receipt_id,
            "status": "accepted",
            "message_id": self.env.id,
            "received_at": a.received_at,
        });
        if let Some(s) = &self.stream_id {
            receipt["stream_id"] = s.clone().into();
        }
        // "Ask me first": the stream is opened and kept, its executor waits for the user.
        if held && self.stream_id.is_some() {
            receipt["held_for_consent"] = true.into();
        }
        let (status, location) = match &self.stream_id {
            Some(s) => (202, Some(format!("/v1/stream/{s}"))),
            None => (200, None),
        };
        Words { code: None, message: None, receipt: receipt.clone(), answer: Answer { status, body: receipt, location, retry_after: None }, keep: true }
    }

    fn refused(&self, a: &gatehouse_gate::Arrival<'_>, why: &Why<UampError>) -> Words<Answer> {
        let e = self.error(why);
        let mut body = e.body();
        body["receipt_id"] = a.receipt_id.into();
        body["status"] = "rejected".into();
        body["message_id"] = self.env.id.clone().into();
        let retry_after = why.retry_after().or((e.code == Code::BackendBusy).then_some(BUSY_RETRY_AFTER_SECS));
        Words {
            code: Some(format!("UAMP_{}", e.code.as_str())),
            message: Some(e.message.clone()),
            receipt: body.clone(),
            answer: Answer { status: e.code.http_status(), body, location: None, retry_after },
            keep: true,
        }
    }

    fn outcome(&self, e: &UampError) -> gatehouse_code::Outcome {
        super::outcome_of(e)
    }

    fn keep(&self, store: &Store, k: &Keep<'_>) -> Option<gatehouse_store::Result<Stored<UampError>>> {
        Some(self.kept(store, k))
    }
}

impl AtGate<'_> {
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
            Some(t) => match self.uamp.store().uamp_token_sender(&gatehouse_uamp::canonical::sha256_hex(t.as_bytes())).map_err(storage)? {
                Some(s) if s == gatehouse_store::sender_key(&env.from) => Ok(()),
                Some(_) => Err(UampError::new(Code::Unauthenticated, "token_sender_mismatch", "the bearer token was issued to another sender")),
                None => Err(UampError::new(Code::Unauthenticated, "unknown_token", "the bearer token is unknown or revoked")),
            },
        }
    }

    /// The gate's verdict in UAMP's words.
    fn error(&self, why: &Why<UampError>) -> UampError {
        let from = &self.env.from;
        match why {
            Why::Knock => {
                UampError::new(Code::Unauthorized, "untrusted_sender", format!("{from} is not in this inbox's trust registry; the user has been asked"))
            }
            Why::Refused(Refusal::Blocked) => UampError::new(Code::Unauthorized, "blocked", format!("{from} is blocked")),
            Why::Refused(Refusal::Revoked(reason)) => {
                let why = if reason.is_empty() { String::new() } else { format!(": {reason}") };
                UampError::new(Code::Unauthorized, "revoked", format!("{from}'s key was revoked by the user of this inbox{why}"))
            }
            Why::Refused(Refusal::Door(e)) => e.clone(),
            Why::Refused(Refusal::Scope(s)) => UampError::new(Code::Unauthorized, "policy_denied", format!("scope {s:?} is not allowed for {from}")),
            // UAMP carries no delegation.
            Why::Refused(Refusal::Delegation) => UampError::new(Code::Unauthorized, "policy_denied", "delegated messages are not allowed"),
            Why::Refused(Refusal::Size { limit, .. }) => UampError::new(Code::PayloadTooLarge, "too_large", format!("policy allows this sender {limit} bytes")),
            Why::Reserved(s) => UampError::new(Code::Unauthorized, "policy_denied", format!("the scope {s:?} is Gatehouse's own; no agent may ask for it")),
            Why::Replay => replay(self.env),
            Why::RateLimited { .. } => UampError::new(Code::BackendBusy, "rate_limited", format!("{from}'s policy allows no more messages now")),
            Why::Store(e) => storage(e),
            Why::Unsettled => UampError::new(Code::BackendBusy, "internal", "the user's registry kept changing while this was decided; try again"),
            Why::Executor(m) => UampError::new(Code::BackendBusy, "internal", format!("the gate could not decide: {m}")),
        }
    }

    /// The message, its stream and its receipt in one transaction, after what it asks of
    /// an existing stream is checked; then what it starts.
    fn kept(&self, store: &Store, k: &Keep<'_>) -> gatehouse_store::Result<Stored<UampError>> {
        let env = self.env;
        let target = match env.intent {
            Intent::Cancel | Intent::Progress => match self.uamp.target_stream(env) {
                Ok(t) => Some(t),
                Err(e) => return Ok(Stored::Door(e)),
            },
            _ => None,
        };
        let ack = match env.intent {
            Intent::Progress => match ack_of(env) {
                Ok(n) => Some(n),
                Err(e) => return Ok(Stored::Door(e)),
            },
            _ => None,
        };
        let held = self.stream_id.is_some() && k.held;
        if self.stream_id.is_some() && self.uamp.streams.active() >= MAX_ACTIVE_STREAMS {
            return Ok(Stored::Door(UampError::new(Code::BackendBusy, "busy", format!("{MAX_ACTIVE_STREAMS} streams are running; try again shortly"))));
        }
        let scope = k.receipt.scope.clone().unwrap_or_default();
        let msg = NewUampMessage {
            message_id: env.uuid.to_string(),
            direction: "in",
            sender: env.from.clone(),
            recipients: env.to.clone(),
            intent: env.intent.as_str().into(),
            stream_id: self.stream_id.clone().or_else(|| env.stream_id.clone()),
            reply_to: env.reply_to.as_deref().and_then(gatehouse_uamp::envelope::parse_uuid).map(|u| u.to_string()),
            scope: Some(scope.clone()),
            body_type: env.body.media_type.clone(),
            content: env.body.content.clone(),
            ts: env.ts.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            received_at: k.receipt.received_at.clone(),
            received_ms: k.receipt.received_ms,
            raw: String::from_utf8_lossy(self.bytes).into_owned(),
            receipt_id: k.receipt.receipt_id.clone(),
        };
        let stream = self.stream_id.as_ref().map(|s| NewStream {
            stream_id: s.clone(),
            direction: "in",
            peer: env.from.clone(),
            delta_window: env.delta_window,
            // Chosen once, by the gate: what runs, now or once the user allows it.
            executor_spec: serde_json::to_string(k.executor).ok(),
        });
        let mut receipt = k.receipt.clone();
        if k.held && !held {
            // Only a stream waits for the user; a message that opens none is kept.
            receipt.outcome = Some(gatehouse_code::Outcome::Accepted);
        }
        // Acknowledging or cancelling one's own stream steers what the `ask` that opened
        // it was allowed to start: it is not counted.
        let limits = if self.steers { RateLimit::default() } else { k.limits.clone() };
        let row = match store.uamp_accept(&msg, stream.as_ref(), &receipt, &limits, Some(k.version))? {
            Ok(row) => row,
            Err(UampRefusal::Replay) => return Ok(Stored::Refused(AcceptRefusal::Replay)),
            Err(UampRefusal::Stale) => return Ok(Stored::Refused(AcceptRefusal::Stale)),
            Err(UampRefusal::RateLimited { window, limit, retry_after_secs }) => {
                return Ok(Stored::Refused(AcceptRefusal::RateLimited { window, limit, retry_after_secs }))
            }
            Err(UampRefusal::StreamExists) => {
                return Ok(Stored::Door(UampError::invalid("/stream_id", "names a stream that already exists").with_reason("stream_exists")))
            }
        };
        if let (true, Some(s)) = (held, &self.stream_id) {
            store.uamp_hold(s, &k.receipt.received_at)?;
        }
        let effect = match (target, env.intent) {
            (Some(t), Intent::Cancel) => {
                let was = self.uamp.streams.cancel(store, &t, &env.from);
                Some(json!({"stream_id": t, "cancelled": was}))
            }
            (Some(t), _) => {
                let acked = self.uamp.streams.ack(store, &t, ack.unwrap_or_default())?;
                Some(json!({"stream_id": t, "acked_seq": acked}))
            }
            (None, _) => None,
        };
        let job = self.stream_id.clone().map(|s| {
            let job = streams::Job {
                spec: k.executor.clone(),
                message_id: env.id.clone(),
                sender: env.from.clone(),
                scope,
                body: env.body.clone(),
                window: env.delta_window,
            };
            (s, job)
        });
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = Some(Done { held, effect, job });
        Ok(Stored::Row { row, held })
    }
}
