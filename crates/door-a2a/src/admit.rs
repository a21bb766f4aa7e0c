//! One message, from the request to a stored task or the receipt of its refusal: the
//! gate decides on the caller's key (block, revocation, a knock, scope, size, a grant
//! that ended), the accepting transaction decides replay and rate; this door only says
//! it in A2A's words.

use chrono::{DateTime, Utc};
use gatehouse_a2a::rpc::{code, RpcError, Send};
use gatehouse_a2a::types::Task;
use gatehouse_gate::state::{ArrivalEvent, Status};
use gatehouse_gate::{Refusal, Verdict};
use gatehouse_store::{AcceptRefusal, ExecStatus, Knock, NewEnvelope, ReceiptRow};
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
        let store = self.store();
        let sender = caller.id().to_string();
        let receipt_id = uuid::Uuid::now_v7().to_string();
        let context_id = send.message.context_id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let prompt = send.message.prompt();
        let raw = serde_json::to_string(&send.message).map_err(internal)?;
        let raw_sha256 = sha256_hex(raw.as_bytes());
        let nonce = sha256_hex(format!("a2a\0{sender}\0{}", send.message.message_id).as_bytes()).into_bytes();
        let received_at = gatehouse_gate::clock::utc_string(now);
        let scopes = [scope.clone()];
        let arrival = gatehouse_gate::Asked { scopes: &scopes, size: size as u64, delegated: false, at: now };
        // The receipt either verdict leaves: the task's id is its id.
        let receipt_row = |status: &str, code: Option<&str>, message: Option<String>, receipt: Value| ReceiptRow {
            receipt_id: receipt_id.clone(),
            envelope_id: Some(receipt_id.clone()),
            status: status.into(),
            code: code.map(str::to_string),
            message,
            received_at: received_at.clone(),
            received_ms: now.timestamp_millis(),
            transport: DOOR.into(),
            sender: Some(sender.clone()),
            scope: Some(scope.clone()),
            body: None,
            body_truncated: false,
            receipt,
            prompt: Some(prompt.clone()),
            envelope_row: None,
        };
        let refused = |code: &str, message: String, knock: bool| Refused {
            row: receipt_row(
                "rejected",
                Some(code),
                Some(message.clone()),
                json!({"receipt_id": receipt_id, "status": "rejected", "code": code, "message": message, "task_id": receipt_id, "context_id": context_id}),
            ),
            knock: knock.then(|| Knock { door: DOOR, sender: sender.clone(), scope: scope.clone(), envelope_id: receipt_id.clone(), at: received_at.clone() }),
        };
        // A view changed between the decision and its commit is decided again, once.
        for _ in 0..2 {
            let view = store.admission(&sender, gatehouse_gate::executor::SETTINGS_KEY).map_err(internal)?;
            let (entry, held) = match gatehouse_gate::admit(&view, None, &arrival, &gatehouse_gate::NoChecks) {
                Verdict::Accept { entry, held } => (entry, held),
                Verdict::Knock => {
                    let words = format!(
                        "You are not known to this gate yet ({}); the person it belongs to has been asked whether you may reach their AI. Send again once they have let you in.",
                        caller.proof()
                    );
                    return self.refuse(refused("UNTRUSTED_SENDER", words, true), now);
                }
                Verdict::Refuse(r) => {
                    let (code, words) = match r {
                        Refusal::Blocked => ("UNTRUSTED_SENDER", "You are blocked by the person this gate belongs to.".to_string()),
                        Refusal::Revoked(why) => {
                            let why = if why.is_empty() { String::new() } else { format!(": {why}") };
                            ("SENDER_REVOKED", format!("Your access was revoked by the person this gate belongs to{why}."))
                        }
                        Refusal::Scope(s) => ("POLICY_DENIED", format!("You may not ask for {s:?} here.")),
                        Refusal::Delegation => ("POLICY_DENIED", "Messages on someone else's behalf are not allowed.".to_string()),
                        Refusal::Size { size, limit } => ("SIZE_EXCEEDED", format!("Your message is {size} bytes; you may send at most {limit}.")),
                        Refusal::Door(never) => match never {},
                    };
                    return self.refuse(refused(code, words, false), now);
                }
            };
            let config = self.gate.executor_config(view.setting.as_deref()).map_err(|e| internal(format!("the executor setting is unreadable: {e}")))?;
            let spec = config.for_scope(&scope);
            let noop = !held && *spec == gatehouse_gate::executor::ExecutorSpec::Noop;
            let status = if held {
                ExecStatus::Held
            } else if noop {
                ExecStatus::Succeeded
            } else {
                ExecStatus::Queued
            };
            let expires = now + chrono::Duration::days(REMEMBERED_DAYS);
            let receipt = json!({
                "receipt_id": receipt_id, "status": "accepted", "task_id": receipt_id, "context_id": context_id,
                "received_at": received_at, "executor": spec.name(), "held": held,
            });
            let record = NewEnvelope {
                envelope_id: receipt_id.clone(),
                sender: sender.clone(),
                recipient: self.gate.public_key().to_string(),
                scope: scope.clone(),
                payload_type: Some("a2a/message".into()),
                conversation_id: Some(context_id.clone()),
                in_reply_to: None,
                on_behalf_of: None,
                prompt: prompt.clone(),
                timestamp: received_at.clone(),
                expires_at: gatehouse_gate::clock::utc_string(expires),
                expires_at_ms: expires.timestamp_millis(),
                nonce: nonce.clone(),
                received_at: received_at.clone(),
                received_ms: now.timestamp_millis(),
                transport: DOOR.into(),
                signed_form: "transport".into(),
                raw: raw.clone(),
                raw_sha256: raw_sha256.clone(),
                executor: spec.name().to_string(),
                executor_spec: if noop { None } else { serde_json::to_string(spec).ok() },
                exec_status: status,
                exec_result: noop.then(gatehouse_gate::executor::noop_result),
                receipt: receipt_row("accepted", None, None, receipt),
                admission_version: Some(view.version),
            };
            match store.accept(record, &entry.policy.rate_limit).map_err(internal)? {
                Ok(row) => {
                    self.gate.emit_event(ArrivalEvent {
                        receipt_id: receipt_id.clone(),
                        status: Status::Accepted,
                        code: None,
                        sender: Some(sender.clone()),
                        scope: Some(scope.clone()),
                        transport: DOOR.into(),
                        needs_consent: held,
                        key_change: false,
                    });
                    if status == ExecStatus::Queued {
                        self.gate.execute(row);
                    }
                    return self.task_of(&receipt_id).map(|t| Sent { task: t, row: Some(row) });
                }
                Err(AcceptRefusal::Stale) => continue,
                Err(AcceptRefusal::Replay) => {
                    // The same message sent again (a retry) gets the task it started;
                    // another message under a used id is refused.
                    return match store.accepted_by_nonce(&nonce, &raw_sha256).map_err(internal)? {
                        Some(r) => self.task_of(&r.receipt_id).map(|t| Sent { task: t, row: r.envelope_row }),
                        None => {
                            Err(RpcError::new(code::INVALID_PARAMS, "this messageId was used before for another message; each message needs an id of its own"))
                        }
                    };
                }
                Err(AcceptRefusal::RateLimited { window, limit, retry_after_secs }) => {
                    let words = format!("You may send at most {limit} messages per {window} here; try again in {retry_after_secs} s.");
                    return self.refuse(refused("RATE_LIMITED", words, false), now);
                }
            }
        }
        Err(internal("the registry kept changing while this message was decided; send it again"))
    }

    /// Keeps a refusal's receipt (and a knock), within the flood bounds, and answers with
    /// the rejected task.
    fn refuse(&self, r: Refused, now: DateTime<Utc>) -> Result<Sent, RpcError> {
        let kind = if r.knock.is_some() { gatehouse_gate::flood::Kind::Knock } else { gatehouse_gate::flood::Kind::Refusal };
        let announce = if self.gate.keep(kind, now) {
            self.store().record_rejection(&r.row, r.knock.as_ref()).map_err(internal)?;
            true
        } else {
            self.gate.announce_unkept(now)
        };
        if announce {
            self.gate.emit_event(ArrivalEvent {
                receipt_id: r.row.receipt_id.clone(),
                status: Status::Rejected,
                code: r.row.code.clone(),
                sender: r.row.sender.clone(),
                scope: r.row.scope.clone(),
                transport: DOOR.into(),
                needs_consent: r.knock.is_some(),
                key_change: false,
            });
        }
        Ok(Sent { task: task(&r.row, None), row: None })
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

/// A refusal to keep: its receipt, and the knock if the sender is unknown.
struct Refused {
    row: ReceiptRow,
    knock: Option<Knock>,
}
