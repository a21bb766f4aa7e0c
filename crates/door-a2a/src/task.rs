//! A stored message as an A2A task: its receipt (the task's id is the receipt's) and, for
//! an accepted one, its envelope row, whose executor state is the task's state.

use gatehouse_a2a::types::{Artifact, Message, Part, Task, TaskState, TaskStatus};
use gatehouse_store::{EnvelopeRow, ExecStatus, ReceiptRow};
use serde_json::Value;

/// The id of the artifact that holds the executor's answer.
pub(crate) const ANSWER: &str = "answer";

/// What the sender reads while its message waits for the user.
pub(crate) const WAITING_WORDS: &str =
    "Waiting for the person this gate belongs to: they decide whether your message reaches their AI. Follow this task to learn what they decide.";

/// Set on an envelope the sender cancelled (told apart from one the user denied).
pub(crate) const CANCELED_BY_SENDER: &str = "canceled_by_sender";

fn context_of(r: &ReceiptRow, row: Option<&EnvelopeRow>) -> String {
    row.and_then(|e| e.conversation_id.clone())
        .or_else(|| r.receipt.get("context_id").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| r.receipt_id.clone())
}

/// The agent's words on a task, as a status message.
fn said(task: &str, context: &str, text: String) -> Message {
    Message::agent(format!("{task}-status"), task, context, text)
}

/// The state a stored envelope puts its task in, and what the sender is told.
pub(crate) fn state_of(row: &EnvelopeRow) -> (TaskState, Option<String>) {
    let error = || row.exec_result.as_ref().and_then(|r| r.get("error")).and_then(Value::as_str).map(str::to_string);
    match row.exec_status {
        ExecStatus::Queued => (TaskState::Submitted, None),
        ExecStatus::Held => (TaskState::InputRequired, Some(WAITING_WORDS.to_string())),
        ExecStatus::Running => (TaskState::Working, None),
        ExecStatus::Succeeded => (TaskState::Completed, None),
        ExecStatus::Failed => (TaskState::Failed, Some(error().unwrap_or_else(|| "the work failed".into()))),
        ExecStatus::Denied if row.exec_result.as_ref().and_then(|r| r.get(CANCELED_BY_SENDER)).is_some() => {
            (TaskState::Canceled, Some("Canceled at your request before it ran.".into()))
        }
        ExecStatus::Denied => (TaskState::Rejected, Some("The person this gate belongs to declined it; nothing ran.".into())),
    }
}

/// The answer, once there is one: a model's `answer`, a command's `stdout` (the
/// executor's result record), trimmed; none when empty.
pub(crate) fn answer_of(row: &EnvelopeRow) -> Option<Artifact> {
    let result = row.exec_result.as_ref()?;
    let text = result.get("answer").or_else(|| result.get("stdout")).and_then(Value::as_str)?.trim().to_string();
    if text.is_empty() {
        return None;
    }
    Some(Artifact { artifact_id: ANSWER.into(), name: Some(ANSWER.into()), description: None, parts: vec![Part::text(text)] })
}

/// The task a receipt stands for. A refused message's task is rejected, with why.
pub(crate) fn task(r: &ReceiptRow, row: Option<&EnvelopeRow>) -> Task {
    let id = r.receipt_id.clone();
    let context = context_of(r, row);
    let (state, words, at) = match row {
        Some(e) => {
            let (state, words) = state_of(e);
            (state, words, e.exec_updated_at.clone().unwrap_or_else(|| e.received_at.clone()))
        }
        None => (TaskState::Rejected, Some(r.message.clone().unwrap_or_else(|| "refused".into())), r.received_at.clone()),
    };
    let history = row.and_then(|e| serde_json::from_str::<Message>(&e.raw).ok()).into_iter().collect();
    Task {
        status: TaskStatus { state, message: words.map(|w| said(&id, &context, w)), timestamp: Some(at) },
        artifacts: row.filter(|e| e.exec_status == ExecStatus::Succeeded).and_then(answer_of).into_iter().collect(),
        history,
        metadata: None,
        context_id: context,
        id,
    }
}
