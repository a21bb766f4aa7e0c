//! An accepted envelope as the inbox hands it to the store, for the store's tests.
#![allow(dead_code)]

use gatehouse_store::{ExecStatus, NewEnvelope, ReceiptRow};

pub const SENDER: &str = "5ad0ea3e6f0c5b7f1c6f8a2ad6b0f2e4c0a1b2c3d4e5f60718293a4b5c6d7e8f";

/// Envelope number `n` from [`SENDER`].
pub fn envelope(nonce: &[u8], n: usize) -> NewEnvelope {
    envelope_at(nonce, n, 1_794_996_401_000 + n as i64)
}

/// Envelope number `n` from [`SENDER`], received at `received_ms`.
pub fn envelope_at(nonce: &[u8], n: usize, received_ms: i64) -> NewEnvelope {
    let receipt_id = format!("0190f0a0-0000-7000-8000-{n:012}");
    NewEnvelope {
        envelope_id: format!("env-{n}"),
        sender: SENDER.into(),
        recipient: "ab".repeat(32),
        scope: "support".into(),
        payload_type: None,
        conversation_id: None,
        in_reply_to: None,
        on_behalf_of: None,
        prompt: format!("prompt {n}"),
        timestamp: "2026-11-23T09:00:00Z".into(),
        expires_at: "2026-11-23T10:00:00Z".into(),
        expires_at_ms: 1_795_000_000_000,
        nonce: nonce.to_vec(),
        received_at: "2026-11-23T09:00:01Z".into(),
        received_ms,
        transport: "http".into(),
        signed_form: "reference".into(),
        raw: "{}".into(),
        raw_sha256: "00".repeat(32),
        executor: "noop".into(),
        executor_spec: None,
        exec_status: ExecStatus::Succeeded,
        exec_result: None,
        receipt: ReceiptRow {
            receipt_id,
            envelope_id: Some(format!("env-{n}")),
            status: "accepted".into(),
            code: None,
            message: None,
            received_at: "2026-11-23T09:00:01Z".into(),
            received_ms,
            transport: "http".into(),
            sender: Some(SENDER.into()),
            scope: Some("support".into()),
            body: None,
            body_truncated: false,
            receipt: serde_json::json!({"status": "accepted"}),
            prompt: Some(format!("prompt {n}")),
            envelope_row: None,
            outcome: None,
        },
        door: "epp".into(),
        admission_version: None,
    }
}

/// The receipt `id` of a refusal of what `sender` sent, about "support".
pub fn refusal(id: &str, sender: &str) -> ReceiptRow {
    ReceiptRow {
        receipt_id: id.into(),
        envelope_id: None,
        status: "rejected".into(),
        code: Some("UNKNOWN_SENDER".into()),
        message: None,
        received_at: "2026-11-29T10:00:00Z".into(),
        received_ms: 1_795_000_000_000,
        transport: "http".into(),
        sender: Some(sender.into()),
        scope: Some("support".into()),
        body: None,
        body_truncated: false,
        receipt: serde_json::json!({"status": "rejected"}),
        prompt: Some("hello".into()),
        envelope_row: None,
        outcome: None,
    }
}

/// A decided guardian step `id` of the MCP server "files", recorded at `at`.
pub fn asop_step(id: &str, decision: &str, at: String) -> gatehouse_store::asop::NewAsopStep {
    gatehouse_store::asop::NewAsopStep {
        session_id: Some("s".into()),
        turn_id: None,
        step_id: Some(id.into()),
        agent_id: Some("mcp:files".into()),
        agent_name: None,
        method: "steps/toolCallRequest".into(),
        summary: format!("step {id}"),
        reasoning: None,
        request: serde_json::json!({}),
        decision: decision.into(),
        message: None,
        rule_id: None,
        decided_by: Some("rule".into()),
        at,
    }
}

/// Where a test's store lives, on either engine; `open` opens another store on the same
/// database (a second process on a laptop, a second node of a team's gate).
pub enum Place {
    Lite(tempfile::TempDir),
    Pg(String),
}

impl Place {
    pub fn open(&self) -> gatehouse_store::Store {
        match self {
            Place::Lite(dir) => gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap(),
            Place::Pg(url) => gatehouse_store::Store::open_url(url).unwrap(),
        }
    }
}

pub fn sqlite() -> Place {
    Place::Lite(tempfile::tempdir().unwrap())
}

/// A fresh database in this test binary's PostgreSQL (None, the test skipped, where
/// PostgreSQL is not installed and not required).
pub fn postgres() -> Option<Place> {
    Some(Place::Pg(gatehouse_pg_testserver::Postgres::shared()?.fresh_database()))
}

/// One test, run on each engine: `<name>::sqlite` and `<name>::postgres`.
#[macro_export]
macro_rules! on_both_engines {
    ($(#[doc = $doc:literal])* fn $name:ident($place:ident) $body:block) => {
        $(#[doc = $doc])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn run($place: $crate::common::Place) $body
            #[test]
            fn sqlite() {
                run($crate::common::sqlite())
            }
            #[test]
            fn postgres() {
                if let Some(place) = $crate::common::postgres() {
                    run(place)
                }
            }
        }
    };
}
