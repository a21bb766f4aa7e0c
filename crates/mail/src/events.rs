//! What a swarm streams back for `POST /message` with `stream=true`. The spec fixes only
//! `text/event-stream`; the shapes here are the reference implementation's, which peers
//! speak (docs/interop.md): every data line is a JSON object with `timestamp` and
//! `task_id`; `new_message` carries the MAILMessage in `extra_data.full_message`;
//! `task_complete` and `task_error` end the stream with `response`; `ping` keeps it alive;
//! any other event name (tool calls, agent errors, ...) is a described step. The reference
//! also reports a `task_error` mid-stream with a `description` and no `response` (an agent
//! wrote to the swarm's own name): the task goes on, so that one is a step too.

use serde_json::Value;

use crate::model::Message;
use crate::schema::MailError;

#[derive(Debug, Clone, PartialEq)]
pub enum TaskEvent {
    /// A message between agents (validated against the schema).
    Message { task_id: String, message: Box<Message> },
    /// A keep-alive.
    Ping { task_id: Option<String> },
    /// The task finished; `response` is the finishing message's body.
    Complete { task_id: String, response: String, timestamp: Option<String> },
    /// The task failed (or timed out) at the swarm.
    Failed { task_id: String, response: String, timestamp: Option<String> },
    /// Another step the swarm reports (a tool call, an agent error, ...).
    Step { task_id: Option<String>, event: String, description: String, timestamp: Option<String>, data: Value },
}

/// One event that could not be read: the timeline shows it, the task goes on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("event {event:?}: {error}")]
pub struct BadEvent {
    pub event: String,
    pub error: MailError,
    pub data: String,
}

impl TaskEvent {
    /// Reads one SSE event (`event:` name, `data:` text). An unnamed event is a `message`
    /// (SSE's default); sse-starlette's own comment pings never reach here.
    pub fn parse(event: &str, data: &str) -> Result<TaskEvent, BadEvent> {
        let name = if event.is_empty() { "message" } else { event };
        let bad = |error: MailError| BadEvent { event: name.to_string(), error, data: data.chars().take(2000).collect() };
        let v: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(_) if name == "ping" => return Ok(TaskEvent::Ping { task_id: None }),
            Err(e) => return Err(bad(MailError::new("/", format!("the data is not JSON: {e}")))),
        };
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let task_id = s("task_id");
        let need_task = || task_id.clone().ok_or_else(|| bad(MailError::new("/task_id", "is required")));
        Ok(match name {
            "ping" => TaskEvent::Ping { task_id },
            "new_message" => {
                let full = v.pointer("/extra_data/full_message").ok_or_else(|| bad(MailError::new("/extra_data/full_message", "is required")))?;
                let message = Message::keep(full).map_err(|e| bad(in_full_message(e)))?;
                TaskEvent::Message { task_id: task_id.unwrap_or_else(|| message.payload.task_id.clone()), message: Box::new(message) }
            }
            "task_complete" => TaskEvent::Complete { task_id: need_task()?, response: response_text(&v), timestamp: s("timestamp") },
            "task_error" if v.get("response").is_some() => TaskEvent::Failed { task_id: need_task()?, response: response_text(&v), timestamp: s("timestamp") },
            other => TaskEvent::Step {
                task_id,
                event: other.to_string(),
                description: s("description").unwrap_or_default(),
                timestamp: s("timestamp"),
                data: v.get("extra_data").cloned().unwrap_or(Value::Null),
            },
        })
    }

    pub fn task_id(&self) -> Option<&str> {
        match self {
            TaskEvent::Message { task_id, .. } | TaskEvent::Complete { task_id, .. } | TaskEvent::Failed { task_id, .. } => Some(task_id),
            TaskEvent::Ping { task_id } | TaskEvent::Step { task_id, .. } => task_id.as_deref(),
        }
    }

    /// Whether the stream ends here.
    pub fn is_final(&self) -> bool {
        matches!(self, TaskEvent::Complete { .. } | TaskEvent::Failed { .. })
    }
}

/// An error in the MAILMessage an event carries, its field named from the event
/// (`/extra_data/full_message/message/task_id`).
pub(crate) fn in_full_message(e: MailError) -> MailError {
    MailError::new(format!("/extra_data/full_message{}", e.field.trim_end_matches('/')), e.message)
}

/// `response` is a string in the reference; anything else is shown as JSON.
fn response_text(v: &Value) -> String {
    match v.get("response") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}
