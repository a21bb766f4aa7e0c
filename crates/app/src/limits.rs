//! What this machine can do with the store the gate uses, for `gatehouse bench` to read
//! every figure against: the store's share of keeping one envelope let in.

use std::path::Path;
use std::sync::Arc;

use gatehouse_store::{ExecStatus, NewEnvelope, RateLimit, ReceiptRow, Store};

/// Keeps `callers × each` accepted envelopes (of a signed envelope's size, no-op executor)
/// in a new store at `path`, `callers` at once as the inbox commits under load (a group
/// commit each round); how many were kept. The caller measures what it cost.
pub fn commit_many(path: &Path, callers: usize, each: usize) -> Result<usize, crate::error::CommandError> {
    let store = Arc::new(Store::open(path)?);
    let records: Vec<Vec<NewEnvelope>> = (0..callers).map(|c| (0..each).map(|i| record(c * each + i)).collect()).collect();
    let threads: Vec<_> = records
        .into_iter()
        .map(|mine| {
            let store = store.clone();
            std::thread::spawn(move || mine.into_iter().map(|r| store.accept(r, &RateLimit::default())).filter(|kept| matches!(kept, Ok(Ok(_)))).count())
        })
        .collect();
    Ok(threads.into_iter().map(|t| t.join().unwrap_or(0)).sum())
}

/// Envelope `n` as the gate keeps one: ~700 bytes as it arrived, its receipt, its nonce.
fn record(n: usize) -> NewEnvelope {
    let now = chrono::Utc::now();
    let at = gatehouse_gate::clock::utc_string_ms(now);
    let until = now + chrono::Duration::hours(1);
    let receipt_id = uuid::Uuid::now_v7().to_string();
    let (sender, id, prompt) = ("ab".repeat(32), format!("floor-{n}"), format!("benchmark prompt number {n}: please summarise the attached ticket"));
    NewEnvelope {
        envelope_id: id.clone(),
        sender: sender.clone(),
        recipient: "cd".repeat(32),
        scope: "bench".into(),
        payload_type: None,
        conversation_id: None,
        in_reply_to: None,
        on_behalf_of: None,
        prompt: prompt.clone(),
        timestamp: at.clone(),
        expires_at: gatehouse_gate::clock::utc_string(until),
        expires_at_ms: until.timestamp_millis(),
        nonce: (n as u64).to_le_bytes().repeat(2),
        received_at: at.clone(),
        received_ms: now.timestamp_millis(),
        transport: "http".into(),
        signed_form: "reference".into(),
        raw: "x".repeat(700),
        raw_sha256: "00".repeat(32),
        executor: "noop".into(),
        executor_spec: None,
        exec_status: ExecStatus::Succeeded,
        exec_result: Some(gatehouse_gate::executor::noop_result()),
        receipt: ReceiptRow {
            receipt_id: receipt_id.clone(),
            envelope_id: Some(id),
            status: "accepted".into(),
            code: None,
            message: None,
            received_at: at,
            received_ms: now.timestamp_millis(),
            transport: "http".into(),
            sender: Some(sender),
            scope: Some("bench".into()),
            body: None,
            body_truncated: false,
            receipt: serde_json::json!({"status": "accepted", "receipt_id": receipt_id, "executor": "noop"}),
            prompt: Some(prompt),
            envelope_row: None,
            outcome: Some(gatehouse_code::Outcome::Accepted),
        },
        door: "bench".into(),
        admission_version: None,
    }
}
