//! An accepted EPP envelope as its executor sees it: the door describes its own work to
//! the gate's runner ([`gatehouse_gate::runner::Describe`]).

use gatehouse_store::EnvelopeRow;
use serde_json::Value;

use gatehouse_gate::executor::{ExecutorSpec, Work};

/// An accepted envelope as its executor sees it: the prompt on stdin or to the model, the
/// envelope's facts in EPP_* variables for a command, the whole envelope in a file-queue
/// record. Only what `spec` uses is built: most envelopes in a burst go to instant
/// executors, which read none of it.
pub fn describe(spec: &ExecutorSpec, env: &EnvelopeRow, sender_name: Option<&str>) -> Work {
    let envelope = || serde_json::from_str::<Value>(&env.raw).ok();
    let mut w = Work {
        who: sender_name.map(str::to_string).unwrap_or_else(|| format!("the sender {}", env.sender.chars().take(16).collect::<String>())),
        scope: env.scope.clone(),
        prompt: env.prompt.clone(),
        context: None,
        env: Vec::new(),
        queue_file: (String::new(), Value::Null),
        cancel: None,
    };
    match spec {
        ExecutorSpec::Model { .. } => w.context = envelope().and_then(|v| v.pointer("/payload/context").cloned()).filter(|c| !c.is_null()),
        ExecutorSpec::Command { .. } => {
            w.env = vec![
                ("EPP_ENVELOPE_ID", env.envelope_id.clone()),
                ("EPP_SENDER", env.sender.clone()),
                ("EPP_SCOPE", env.scope.clone()),
                ("EPP_RECEIPT_ID", env.receipt_id.clone()),
                ("EPP_CONVERSATION_ID", env.conversation_id.clone().unwrap_or_default()),
                ("EPP_PAYLOAD_TYPE", env.payload_type.clone().unwrap_or_default()),
            ]
        }
        ExecutorSpec::FileQueue { .. } => {
            let safe_id: String = env.envelope_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
            w.queue_file = (
                format!("{:010}-{safe_id}.json", env.id),
                serde_json::json!({
                    "envelope": envelope().unwrap_or(Value::String(env.raw.clone())),
                    "received_at": env.received_at,
                    "receipt_id": env.receipt_id,
                }),
            );
        }
        ExecutorSpec::Noop | ExecutorSpec::Delegated(_) => {}
    }
    w
}
