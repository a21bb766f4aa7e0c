//! Admitting one UAMP envelope: the door's checks before the gate, in their documented
//! order (schema, recipient, freshness, signature and sender key, a message id seen
//! before, the capability token), then the gate's acceptance (`at_gate.rs`: trust and
//! scope, the intent's rules, the transaction that keeps it with its receipt).

use super::*;
use at_gate::AtGate;
use gatehouse_gate::{Arrival, Kept};

impl UampDoor {
    // A Failure is built once per refused request and becomes its receipt; boxing it
    // would cost an allocation on the path floods take and save nothing.
    #[allow(clippy::result_large_err)]
    pub(super) fn check_and_store(&self, bytes: &[u8], auth: &TransportAuth, now: DateTime<Utc>, receipt_id: &str) -> Result<Accepted, Refused> {
        let read = self.read(bytes, now)?;
        self.at_gate(bytes, auth, now, receipt_id, read)
    }

    /// The envelope read and its signature verified, before the gate judges it.
    #[allow(clippy::result_large_err)]
    fn read(&self, bytes: &[u8], now: DateTime<Utc>) -> Result<Read, Failure> {
        let env = Envelope::parse(bytes).map_err(Failure::from)?;
        let fail = |e: UampError| Failure::about(&env, e);
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
        Ok(Read { env, trusted, token, scopes, scope, steers })
    }

    /// The gate's acceptance of an envelope read.
    #[allow(clippy::result_large_err)]
    fn at_gate(&self, bytes: &[u8], auth: &TransportAuth, now: DateTime<Utc>, receipt_id: &str, read: Read) -> Result<Accepted, Refused> {
        let Read { env, trusted, token, scopes, scope, steers } = read;
        // An unknown sender knocks for its signed intent: its capability token is not read
        // until it is known, so it must not decide what the prompt grants.
        let scope = if trusted { scope } else { env.intent.as_str().to_string() };
        let opens = env.intent.opens_stream();
        let stream_id = opens.then(|| env.stream_id.clone().unwrap_or_else(|| format!("str-{}", uuid::Uuid::now_v7())));
        let received_at = gatehouse_gate::clock::utc_string(now);
        let at_gate = AtGate {
            uamp: self,
            env: &env,
            auth,
            token: token.as_ref().and_then(|t| t.as_ref().err()),
            bytes,
            steers,
            stream_id: stream_id.clone(),
            done: std::sync::Mutex::new(None),
        };
        let arrival = Arrival {
            door: crate::DOOR,
            transport: "uamp",
            sender: env.from.clone(),
            scope: scope.clone(),
            asks: trusted.then_some(scopes.as_slice()),
            size: bytes.len() as u64,
            on_behalf_of: None,
            at: now,
            received_at: &received_at,
            receipt_id,
            consent: None,
            kept: Kept {
                id: env.id.clone(),
                recipient: self.did.clone(),
                payload_type: Some(env.body.media_type.clone()),
                conversation_id: None,
                in_reply_to: env.reply_to.clone(),
                prompt: env.body.content.clone(),
                timestamp: env.ts.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                expires_at: String::new(),
                expires_at_ms: 0,
                // None with the gate's: a replay is told by message id before the gate
                // (`read`) and refused inside the record's own transaction.
                nonce: Vec::new(),
                signed_form: "reference",
                raw: bytes,
                raw_sha256: String::new(),
            },
            keeps_refused: true,
        };
        // UAMP keeps its messages with their streams: the gate decides, the door keeps
        // (`at_gate.rs`), the gate announces.
        let answered = self.inbox.accept(&at_gate, &arrival);
        if answered.row.is_none() {
            return Err(Refused::Judged(answered.answer));
        }
        let Some(done) = at_gate.done.into_inner().unwrap_or_else(|p| p.into_inner()) else {
            return Err(Refused::Judged(internal("the message was let in but not kept".into())));
        };
        Ok(Accepted { receipt: answered.answer.body, stream: stream_id, effect: done.effect, job: done.job, held: done.held })
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
    trust.map(|t| t.facts.uamp_keys().iter().filter_map(|k| PublicKey::from_jwk(&k.jwk).ok().map(|pk| (k.kid.clone(), pk))).collect()).unwrap_or_default()
}

pub(super) fn replay(env: &Envelope) -> UampError {
    UampError::new(Code::Unauthorized, "replay", format!("message {} was received before", env.id))
}

pub(super) fn storage(e: impl std::fmt::Display) -> UampError {
    tracing::error!(error = %e, "store failed during a UAMP submission");
    let mut err = UampError::new(Code::BackendBusy, "storage", format!("the inbox could not store the message: {e}"));
    // At most 300 bytes, cut where a character starts: the store's words may quote others'.
    let cut = (0..=err.message.len().min(300)).rev().find(|&i| err.message.is_char_boundary(i)).unwrap_or(0);
    err.message.truncate(cut);
    err
}

pub(super) fn internal(message: String) -> Answer {
    let e = UampError::new(Code::BackendBusy, "internal", message);
    Answer { status: 504, body: e.body(), location: None, retry_after: Some(BUSY_RETRY_AFTER_SECS) }
}

pub(super) struct Accepted {
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

/// An envelope read and verified, as the gate will judge it.
struct Read {
    env: Envelope,
    /// Its sender has a trust entry.
    trusted: bool,
    /// Its capability token checked, for a known sender that sent one.
    token: Option<Result<captoken::Claims, UampError>>,
    /// Every scope it asks for (none when it only steers a stream it opened).
    scopes: Vec<String>,
    scope: String,
    steers: bool,
}

/// Why an envelope was not let in: refused by the door before the gate judged it (the
/// door keeps its receipt), or by the gate (which kept it): its answer.
// Built once per refused request, as a Failure is (see check_and_store).
#[allow(clippy::large_enum_variant)]
pub(super) enum Refused {
    Early(Failure),
    Judged(Answer),
}

impl From<Failure> for Refused {
    fn from(f: Failure) -> Self {
        Refused::Early(f)
    }
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_storage_error_is_cut_short_where_a_character_starts() {
        // "the inbox could not store the message: " is 39 bytes; the é (2 bytes) straddles byte 300.
        let said = format!("{}é and more", "x".repeat(260));
        let e = super::storage(gatehouse_store::StoreError::Invalid(said));
        assert_eq!(e.message.len(), 299, "{}", e.message);
        assert!(e.message.ends_with('x'));
    }
}
