//! An accepted A2A message as its executor sees it: the door describes its own work to
//! the gate's runner ([`gatehouse_gate::runner::Describe`]).

use gatehouse_gate::executor::{ExecutorSpec, Work};
use gatehouse_store::EnvelopeRow;
use serde_json::Value;

/// The prompt on stdin or to the model; for a command, the task's facts in A2A_*
/// variables; for a file queue, the message as it came with its task.
pub fn describe(spec: &ExecutorSpec, env: &EnvelopeRow, sender_name: Option<&str>) -> Work {
    let mut w = Work {
        who: sender_name.map(str::to_string).unwrap_or_else(|| "an A2A agent".to_string()),
        scope: env.scope.clone(),
        prompt: env.prompt.clone(),
        context: None,
        env: Vec::new(),
        queue_file: (String::new(), Value::Null),
        cancel: None,
    };
    match spec {
        ExecutorSpec::Command { .. } => {
            w.env = vec![
                ("A2A_TASK_ID", env.envelope_id.clone()),
                ("A2A_CONTEXT_ID", env.conversation_id.clone().unwrap_or_default()),
                ("A2A_SENDER", env.sender.clone()),
                ("A2A_SCOPE", env.scope.clone()),
            ]
        }
        ExecutorSpec::FileQueue { .. } => {
            let safe_id: String = env.envelope_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
            w.queue_file = (
                format!("{:010}-{safe_id}.json", env.id),
                serde_json::json!({
                    "a2a_message": serde_json::from_str::<Value>(&env.raw).unwrap_or(Value::String(env.raw.clone())),
                    "task_id": env.envelope_id,
                    "context_id": env.conversation_id,
                    "sender": env.sender,
                    "received_at": env.received_at,
                }),
            );
        }
        ExecutorSpec::Model { .. } | ExecutorSpec::Noop | ExecutorSpec::Delegated(_) => {}
    }
    w
}
