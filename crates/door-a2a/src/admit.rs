//! One message, from the request to a stored task or the receipt of its refusal: the
//! gate decides on the caller's key (block, revocation, a knock, scope, size, a grant
//! that ended), the accepting transaction decides replay and rate; this door only says
//! it in A2A's words.

use chrono::{DateTime, Utc};
use gatehouse_a2a::rpc::{code, RpcError, Send};
use gatehouse_a2a::types::Task;
use gatehouse_gate::{Arrival, Kept, Refusal, Why, Words};
use serde_json::{json, Value};

use crate::task::task;
use crate::{internal, sha256_hex, A2aDoor, Caller, DEFAULT_SCOPE, DOOR};

/// How long a message id is remembered against replay: a message sent again with the same
/// id within it gets the task it started.
const REMEMBERED_DAYS: i64 = 7;
/// A scope is a short word: letters, digits, `-`, `_`, `.`, `:`.
const MAX_SCOPE_CHARS: usize = 64;

/// A message taken in (or refused): its task, and the envelope row the runner has.
pub(crate) struct Sent {
    pub task: Task,
    pub row: Option<i64>,
}

/// The scope a message asks for: `metadata.scope`, else [`DEFAULT_SCOPE`].
fn scope_of(send: &Send) -> Result<String, RpcError> {
    let named = send.message.metadata.as_ref().and_then(|m| m.get("scope")).or_else(|| send.metadata.as_ref().and_then(|m| m.get("scope")));
    let scope = match named {
        None => return Ok(DEFAULT_SCOPE.to_string()),
        Some(Value::String(s)) => s,
        Some(_) => return Err(RpcError::new(code::INVALID_PARAMS, "metadata.scope is a string")),
    };
    let ok =
        !scope.is_empty() && scope.chars().count() <= MAX_SCOPE_CHARS && scope.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if !ok {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            format!("metadata.scope is a word of at most {MAX_SCOPE_CHARS} letters, digits, '-', '_', '.' or ':'"),
        ));
    }
    Ok(scope.clone())
}

impl A2aDoor {
    /// Decides and keeps one message. `size`: the request's bytes, as they arrived.
    pub(crate) fn send_blocking(&self, caller: &Caller, send: &Send, size: usize, now: DateTime<Utc>) -> Result<Sent, RpcError> {
        if send.message.task_id.is_some() {
            return Err(RpcError::new(code::UNSUPPORTED_OPERATION, "each message starts a task of its own here; continue a conversation with contextId"));
        }
        let scope = scope_of(send)?;
        let sender = caller.id().to_string();
        let receipt_id = uuid::Uuid::now_v7().to_string();
        let context_id = send.message.context_id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let raw = serde_json::to_string(&send.message).map_err(internal)?;
        let raw_sha256 = sha256_hex(raw.as_bytes());
        let nonce = sha256_hex(format!("a2a\0{sender}\0{}", send.message.message_id).as_bytes()).into_bytes();
        let received_at = gatehouse_gate::clock::utc_string(now);
        let expires = now + chrono::Duration::days(REMEMBERED_DAYS);
        let arrival = Arrival {
            door: DOOR,
            transport: DOOR,
            sender,
            scope,
            asks: None,
            size: size as u64,
            on_behalf_of: None,
            at: now,
            received_at: &received_at,
            receipt_id: &receipt_id,
            consent: None,
            kept: Kept {
                id: receipt_id.clone(),
                recipient: self.gate.public_key().to_string(),
                payload_type: Some("a2a/message".into()),
                conversation_id: Some(context_id.clone()),
                in_reply_to: None,
                prompt: send.message.prompt(),
                timestamp: received_at.clone(),
                expires_at: gatehouse_gate::clock::utc_string(expires),
                expires_at_ms: expires.timestamp_millis(),
                nonce,
                signed_form: "transport",
                raw: raw.as_bytes(),
                raw_sha256,
            },
            // Nothing of a refused message is kept to deliver later: the agent sends again.
            keeps_refused: false,
        };
        let answered = self.gate.accept(&A2aWords { caller, context_id: &context_id }, &arrival);
        match (answered.row, answered.why, answered.receipt) {
            (Some(row), _, _) => self.task_of(&receipt_id).map(|t| Sent { task: t, row: Some(row) }),
            // The same message sent again (a retry) gets the task it started; another
            // message under a used id is refused.
            (None, Some(Why::Replay), _) => match self.store().accepted_by_nonce(&arrival.kept.nonce, &arrival.kept.raw_sha256).map_err(internal)? {
                Some(r) => self.task_of(&r.receipt_id).map(|t| Sent { task: t, row: r.envelope_row }),
                None => Err(RpcError::new(code::INVALID_PARAMS, "this messageId was used before for another message; each message needs an id of its own")),
            },
            (None, Some(Why::Store(e)), _) => Err(internal(e)),
            (None, Some(Why::Unsettled), _) => Err(internal("the registry kept changing while this message was decided; send it again")),
            (None, Some(Why::Executor(m)), _) => Err(internal(m)),
            (None, _, Some(receipt)) => Ok(Sent { task: task(&receipt, None), row: None }),
            (None, _, None) => Err(internal("a message was neither kept nor refused")),
        }
    }

    /// The task a receipt stands for, read now.
    pub(crate) fn task_of(&self, receipt_id: &str) -> Result<Task, RpcError> {
        let store = self.store();
        let r = store.receipt(receipt_id).map_err(internal)?.ok_or_else(|| internal("a task just stored could not be read back"))?;
        let row = match r.envelope_row {
            Some(id) => store.envelope(id).map_err(internal)?,
            None => None,
        };
        Ok(task(&r, row.as_ref()))
    }
}

/// One message at the gate, in A2A's words: its task's receipt.
struct A2aWords<'a> {
    caller: &'a Caller,
    context_id: &'a str,
}

/// A2A has no checks of its own beyond the caller's proof, made before the gate is asked.
impl gatehouse_gate::Checks for A2aWords<'_> {
    type Refusal = std::convert::Infallible;
}

impl gatehouse_gate::Door for A2aWords<'_> {
    type Answer = ();

    fn accepted(&self, a: &Arrival<'_>, executor: &str, held: bool) -> Words<()> {
        let receipt = json!({
            "receipt_id": a.receipt_id, "status": "accepted", "task_id": a.receipt_id, "context_id": self.context_id,
            "received_at": a.received_at, "executor": executor, "held": held,
        });
        Words { code: None, message: None, receipt, answer: (), keep: true }
    }

    fn outcome(&self, never: &std::convert::Infallible) -> gatehouse_code::Outcome {
        match *never {}
    }

    fn refused(&self, a: &Arrival<'_>, why: &Why<std::convert::Infallible>) -> Words<()> {
        let (code, words) = match why {
            Why::Knock => (
                "UNTRUSTED_SENDER",
                format!(
                    "You are not known to this gate yet ({}); the person it belongs to has been asked whether you may reach their AI. Send again once they have let you in.",
                    self.caller.proof()
                ),
            ),
            Why::Refused(Refusal::Blocked) => ("UNTRUSTED_SENDER", "You are blocked by the person this gate belongs to.".to_string()),
            Why::Refused(Refusal::Revoked(why)) => {
                let why = if why.is_empty() { String::new() } else { format!(": {why}") };
                ("SENDER_REVOKED", format!("Your access was revoked by the person this gate belongs to{why}."))
            }
            Why::Refused(Refusal::Scope(s)) => ("POLICY_DENIED", format!("You may not ask for {s:?} here.")),
            Why::Refused(Refusal::Delegation) => ("POLICY_DENIED", "Messages on someone else's behalf are not allowed.".to_string()),
            Why::Refused(Refusal::Size { size, limit }) => ("SIZE_EXCEEDED", format!("Your message is {size} bytes; you may send at most {limit}.")),
            Why::Refused(Refusal::Door(never)) => match *never {},
            Why::Reserved(s) => ("POLICY_DENIED", format!("The scope {s:?} is Gatehouse's own; no agent may ask for it.")),
            Why::RateLimited { window, limit, retry_after_secs } => {
                ("RATE_LIMITED", format!("You may send at most {limit} messages per {window} here; try again in {retry_after_secs} s."))
            }
            // Answered by the door itself (the task a retry started, or an error): no receipt.
            Why::Replay | Why::Unsettled | Why::Executor(_) | Why::Store(_) => {
                return Words { code: Some("INTERNAL_ERROR".into()), message: None, receipt: Value::Null, answer: (), keep: false }
            }
        };
        let receipt =
            json!({"receipt_id": a.receipt_id, "status": "rejected", "code": code, "message": words, "task_id": a.receipt_id, "context_id": self.context_id});
        Words { code: Some(code.into()), message: Some(words), receipt, answer: (), keep: true }
    }
}
