//! What an arrival leaves in the store, in no door's words: the gate's record of one let
//! in ([`NewEnvelope`]) and the receipt of every arrival, let in or refused.

use gatehouse_code::Outcome;
use gatehouse_store::{ExecStatus, NewEnvelope, ReceiptRow};
use serde_json::Value;

use crate::arrival::Arrival;
use crate::executor::ExecutorSpec;

/// The gate's record of an arrival let in.
pub(crate) fn record(a: &Arrival<'_>, receipt: ReceiptRow, spec: &ExecutorSpec, version: i64, held: bool, noop: bool) -> NewEnvelope {
    let k = &a.kept;
    NewEnvelope {
        envelope_id: k.id.clone(),
        sender: a.sender.clone(),
        recipient: k.recipient.clone(),
        scope: a.scope.clone(),
        payload_type: k.payload_type.clone(),
        conversation_id: k.conversation_id.clone(),
        in_reply_to: k.in_reply_to.clone(),
        on_behalf_of: a.on_behalf_of.clone(),
        prompt: k.prompt.clone(),
        timestamp: k.timestamp.clone(),
        expires_at: k.expires_at.clone(),
        expires_at_ms: k.expires_at_ms,
        nonce: k.nonce.clone(),
        received_at: a.received_at.to_string(),
        received_ms: a.at.timestamp_millis(),
        transport: a.transport.to_string(),
        signed_form: k.signed_form.to_string(),
        raw: String::from_utf8_lossy(k.raw).into_owned(),
        raw_sha256: k.raw_sha256.clone(),
        executor: spec.name().to_string(),
        // Kept for the runner; a no-op done at acceptance never reaches it.
        executor_spec: if noop { None } else { serde_json::to_string(spec).ok() },
        exec_status: if held {
            ExecStatus::Held
        } else if noop {
            ExecStatus::Succeeded
        } else {
            ExecStatus::Queued
        },
        exec_result: noop.then(crate::executor::noop_result),
        receipt,
        door: a.door.to_string(),
        admission_version: Some(version),
    }
}

/// The receipt an arrival leaves: accepted (no code) or refused in its door's words.
pub(crate) fn receipt_row(
    a: &Arrival<'_>,
    outcome: Outcome,
    code: Option<String>,
    message: Option<String>,
    receipt: Value,
    body: Option<(String, bool)>,
) -> ReceiptRow {
    let refused = code.is_some();
    let (body, body_truncated) = match body {
        Some((b, cut)) if !b.is_empty() => (Some(b), cut),
        _ => (None, false),
    };
    ReceiptRow {
        receipt_id: a.receipt_id.to_string(),
        envelope_id: Some(a.kept.id.clone()),
        status: if refused { "rejected" } else { "accepted" }.into(),
        code,
        message,
        received_at: a.received_at.to_string(),
        received_ms: a.at.timestamp_millis(),
        transport: a.transport.to_string(),
        sender: Some(a.sender.clone()),
        scope: Some(a.scope.clone()),
        body,
        body_truncated,
        receipt,
        prompt: Some(a.kept.prompt.clone()),
        envelope_row: None,
        outcome: Some(outcome),
    }
}
