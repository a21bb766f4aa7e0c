//! Steps 8–9 (trust and policy, decided by the gate on one view of the registry) and the
//! record an admitted envelope is stored as.

use chrono::{DateTime, Utc};
use gatehouse_epp::{Envelope, ErrorCode, Form, Receipt, Rejection};
use gatehouse_store::{Admission, ExecStatus, NewEnvelope, TrustEntry};

use super::{sha256_hex, Ctx, Failure, Pipeline, Prepared};

/// Where admission waits for the database.
#[derive(Clone, Copy)]
pub(super) enum Wait {
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

impl Pipeline<'_> {
    /// Steps 8–9 on one view of the registry, decided by the gate: whether the admitted
    /// envelope is held, or why it is refused. The unsigned v1.1 fields
    /// (`unsigned`, read and checked once) are the door's claims and capability limits.
    fn judge(consent: Option<&TrustEntry>, view: &Admission, env: &Envelope, size: usize, unsigned: &Unsigned, now: DateTime<Utc>) -> Result<bool, Refusal> {
        let scopes = [env.scope.clone()];
        let arrival = gatehouse_gate::Arrival { scopes: &scopes, size: size as u64, delegated: env.delegation.is_some(), at: now };
        match gatehouse_gate::admit(view, consent, &arrival, &EppChecks(unsigned)) {
            gatehouse_gate::Verdict::Accept { held, .. } => Ok(held),
            gatehouse_gate::Verdict::Knock => {
                let sender = env.sender_key();
                let message =
                    format!("sender {}… is not in this inbox's trust registry; the owner has been asked", sender.chars().take(16).collect::<String>());
                Err(Refusal { knock: true, ..Refusal::new(ErrorCode::UntrustedSender, message) })
            }
            gatehouse_gate::Verdict::Refuse(r) => Err(match r {
                GateRefusal::Blocked => Refusal::new(ErrorCode::UntrustedSender, "sender is blocked by the owner of this inbox".into()),
                GateRefusal::Revoked(reason) => {
                    let why = if reason.is_empty() { String::new() } else { format!(": {reason}") };
                    Refusal::new(ErrorCode::SenderRevoked, format!("this sender's key was revoked by the owner of this inbox{why}"))
                }
                GateRefusal::Door(r) => r,
                GateRefusal::Scope(s) => Refusal::new(ErrorCode::PolicyDenied, format!("scope {s:?} is not allowed for this sender")),
                GateRefusal::Delegation => Refusal::new(ErrorCode::PolicyDenied, "this sender may not send delegated envelopes".into()),
                GateRefusal::Size { size, limit } => Refusal::new(ErrorCode::SizeExceeded, format!("envelope is {size} bytes; this sender's limit is {limit}")),
            }),
        }
    }

    /// Steps 7–10 for a checked envelope: the record to store, or the failure. `fresh`
    /// reads the registry first; otherwise the view last read is used and the commit
    /// refuses the record if the registry has changed since ([`AcceptRefusal::Stale`]).
    /// A refusal is only ever decided on a fresh view.
    // A Failure is built once per refused request and becomes its receipt; boxing it
    // would cost an allocation on the path floods take and save nothing.
    #[allow(clippy::result_large_err)]
    pub(super) fn admit(
        &self,
        ctx: &Ctx<'_>,
        env: Envelope,
        form: Form,
        unsigned: Box<Unsigned>,
        fresh: bool,
        wait: Wait,
    ) -> Result<(NewEnvelope, gatehouse_store::RateLimit, Prepared), Failure> {
        let fail = |env: Envelope, code: ErrorCode, msg: String| Failure {
            rejection: Rejection::new(code, msg).with_envelope_id(Some(env.envelope_id.clone())),
            env: Some(env),
            retry_after: None,
            knock: false,
        };
        let sender = env.sender_key();
        let read = |fresh: bool| {
            let cached = if fresh { None } else { self.store().cached_admission(&sender, gatehouse_gate::executor::SETTINGS_KEY) };
            match cached {
                Some(view) => Ok(view),
                None => wait.run(|| self.store().admission(&sender, gatehouse_gate::executor::SETTINGS_KEY)),
            }
        };
        // Judged once per view read: a refusal on the cached view is judged again on a
        // fresh one (a refusal never rests on a cached view), an acceptance is not.
        let judged = |v: &Admission| Self::judge(ctx.consent, v, &env, ctx.bytes.len(), &unsigned, ctx.now);
        let (view, verdict) = match read(fresh) {
            Ok(v) => match judged(&v) {
                Ok(held) => (v, Ok(held)),
                Err(r) if fresh => (v, Err(r)),
                Err(_) => match read(true) {
                    Ok(v) => {
                        let verdict = judged(&v);
                        (v, verdict)
                    }
                    Err(e) => return Err(Failure::store(fail(env, ErrorCode::InternalError, e.to_string()), &e)),
                },
            },
            Err(e) => return Err(Failure::store(fail(env, ErrorCode::InternalError, e.to_string()), &e)),
        };
        let held = match verdict {
            Ok(held) => held,
            Err(r) => {
                // Step 7, replay, is decided inside the accepting transaction. An envelope
                // about to be refused for trust or policy is looked up here first, so the
                // code follows the spec's order without a read per accepted envelope.
                return Err(match wait.run(|| self.store().nonce_seen(&env.nonce_bytes)) {
                    Ok(true) => fail(env, ErrorCode::ReplayDetected, "this nonce has been used before".into()),
                    // A replay never asks the user; a fresh knock does (stored with its receipt).
                    Ok(false) => Failure { knock: r.knock, ..fail(env, r.code, r.message) },
                    Err(e) => Failure::store(fail(env, ErrorCode::InternalError, e.to_string()), &e),
                });
            }
        };
        let Some(entry) = gatehouse_gate::admitted_under(&view, ctx.consent) else {
            return Err(fail(env, ErrorCode::InternalError, "admitted without a trust entry".into()));
        };
        let policy = &entry.policy;
        // Step 10: store nonce + envelope + receipt durably, then answer.
        let config = match self.executor_config(view.setting.as_deref()) {
            Ok(c) => c,
            Err(e) => return Err(fail(env, ErrorCode::InternalError, format!("the executor setting is unreadable: {e}"))),
        };
        let spec = config.for_scope(&env.scope);
        let executor = spec.name().to_string();
        // The no-op executor has nothing to run: its outcome is stored with the envelope,
        // which spares the runner two status commits per envelope.
        let noop = !held && *spec == gatehouse_gate::executor::ExecutorSpec::Noop;
        let receipt = Receipt::accepted(env.envelope_id.clone(), ctx.received_at.to_string(), ctx.receipt_id.to_string(), executor.clone(), held);
        let record = NewEnvelope {
            envelope_id: env.envelope_id.clone(),
            sender,
            recipient: env.recipient_key(),
            scope: env.scope.clone(),
            payload_type: env.payload.payload_type.clone(),
            conversation_id: env.conversation_id.clone(),
            in_reply_to: env.in_reply_to.clone(),
            on_behalf_of: env.delegation.as_ref().map(|d| d.on_behalf_of.to_ascii_lowercase()),
            prompt: env.payload.prompt.clone(),
            timestamp: env.timestamp.clone(),
            expires_at: env.expires_at.clone(),
            expires_at_ms: env.expires_at_utc.timestamp_millis(),
            nonce: env.nonce_bytes.clone(),
            received_at: ctx.received_at.to_string(),
            received_ms: ctx.now.timestamp_millis(),
            transport: ctx.transport.to_string(),
            signed_form: match form {
                Form::Reference => "reference",
                Form::Variant => "variant",
            }
            .to_string(),
            raw: String::from_utf8_lossy(ctx.bytes).into_owned(),
            raw_sha256: sha256_hex(ctx.bytes),
            executor,
            // Kept for the runner; a no-op done at acceptance never reaches it.
            executor_spec: if noop { None } else { serde_json::to_string(spec).ok() },
            exec_status: if held {
                ExecStatus::Held
            } else if noop {
                ExecStatus::Succeeded
            } else {
                ExecStatus::Queued
            },
            exec_result: noop.then(gatehouse_gate::executor::noop_result),
            receipt: ctx.receipt_row(&receipt, Some(&env), None),
            admission_version: Some(view.version),
        };
        Ok((record, policy.rate_limit.clone(), Prepared { env, form, unsigned, receipt, held, noop }))
    }
}

/// Why steps 8–9 refuse an envelope.
pub(super) struct Refusal {
    code: ErrorCode,
    message: String,
    /// An unknown sender: the user is asked.
    knock: bool,
}

impl Refusal {
    pub(super) fn new(code: ErrorCode, message: String) -> Self {
        Refusal { code, message, knock: false }
    }
}

/// An envelope's EPP v1.1 fields, read and checked once: what they claim, or why they are
/// refused (malformed, an integrity hash that does not match, a forged attestation).
pub(super) type Unsigned = Result<gatehouse_epp::v11::Extensions, Rejection>;
type GateRefusal = gatehouse_gate::Refusal<Refusal>;

/// What only the EPP door can check, at the gate's places for it: the v1.1 fields, which
/// no signature covers (claims: a malformed one refuses and never knocks), and a trust
/// entry's limit on the capabilities an envelope declares.
struct EppChecks<'a>(&'a Unsigned);

impl gatehouse_gate::Checks for EppChecks<'_> {
    type Refusal = Refusal;
    fn claims(&self) -> Result<(), Refusal> {
        self.0.as_ref().map(|_| ()).map_err(|r| Refusal::new(r.code, r.message.clone()))
    }
    fn limits(&self, entry: &TrustEntry) -> Result<(), Refusal> {
        match (&entry.policy.capabilities, self.0) {
            (Some(limit), Ok(ext)) => capability_policy(limit, ext.capabilities.as_ref()),
            _ => Ok(()),
        }
    }
}

pub(super) fn unsigned(env: &Envelope) -> Unsigned {
    let ext = gatehouse_epp::v11::Extensions::read(env)?;
    gatehouse_epp::v11::verify(env, &ext)?;
    Ok(ext)
}

/// A trust entry's EPP v1.1 capability limit: what the envelope declares must lie within
/// it, and with `require` it must declare something. The declaration is unsigned, so it
/// can only refuse: asking beyond the limit is refused, asking within it admits nothing
/// the sender's trust entry did not already.
fn capability_policy(limit: &gatehouse_store::CapabilityLimit, asked: Option<&gatehouse_epp::v11::Capabilities>) -> Result<(), Refusal> {
    use gatehouse_epp::v11;
    let Some(asked) = asked else {
        return match limit.require {
            true => Err(Refusal::new(
                ErrorCode::PolicyDenied,
                "this sender must declare the capabilities it asks for (EPP v1.1 capabilities), and this envelope declares none".into(),
            )),
            false => Ok(()),
        };
    };
    let allowed: v11::Capabilities = serde_json::from_value(limit.allowed.clone()).unwrap_or_default();
    let over = v11::beyond(asked, &allowed);
    if over.is_empty() {
        return Ok(());
    }
    Err(Refusal::new(ErrorCode::PolicyDenied, format!("it asks to {}, beyond what this sender may", over.join("; "))))
}
