//! Reading a task log a user opens or drops: a JSON object, a JSON array of them, JSONL
//! (one per line), or a recorded SSE stream. Each item is a MAILMessage, an interswarm
//! wrapper, or a swarm event, in the shapes the reference server exports them
//! (docs/interop.md): its event dump (`{task_id, event_type, data}` lines), `GET /task`
//! (a task whose `events` carry their `data` as JSON text), and SSE `event:`/`data:` lines.
//! Messages are kept where they depart from the schema (the departure is shown), as a
//! swarm sends them. Items that cannot be read are reported with their line and field;
//! the others are kept.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::events::{in_full_message, TaskEvent};
use crate::model::{Interswarm, Message};
use crate::schema::MailError;

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Message(Box<Message>),
    Interswarm(Box<Interswarm>),
    /// Another event of a task: a step (tool call, agent error, ...) or its finish.
    Event(Box<TaskEvent>),
    /// A task as `GET /task` describes it (its events follow as items of their own).
    Task {
        task_id: String,
        owner: Option<String>,
        contributors: Vec<String>,
        completed: Option<bool>,
    },
}

impl Item {
    /// The item as a message of its task's timeline, if it is one.
    pub fn message(&self) -> Option<Message> {
        match self {
            Item::Message(m) => Some((**m).clone()),
            Item::Interswarm(i) => Some(i.as_message()),
            Item::Event(_) | Item::Task { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based line where the item starts.
    pub line: usize,
    pub item: Item,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct LineError {
    pub line: usize,
    pub error: MailError,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Import {
    pub entries: Vec<Entry>,
    pub errors: Vec<LineError>,
}

fn line_of(text: &str, offset: usize) -> usize {
    // Bytes, not a str slice: an offset inside a character must not panic.
    text.as_bytes().iter().take(offset).filter(|b| **b == b'\n').count().saturating_add(1)
}

/// Reads `text`; never fails as a whole (an unreadable file is one error on line 1).
pub fn read(text: &str) -> Import {
    let mut out = Import::default();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if is_sse(text) {
        read_sse(text, &mut out);
        return finish(out);
    }
    if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
        for raw in items {
            let line = line_of(text, (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize));
            push(&mut out, line, serde_json::from_str(raw.get()).map_err(|e| MailError::new("/", e.to_string())));
        }
        return out;
    }
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        let start = text.len().saturating_sub(text.trim_start().len());
        push(&mut out, line_of(text, start), Ok(v));
        return out;
    }
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        push(&mut out, i.saturating_add(1), serde_json::from_str::<Value>(l).map_err(|e| MailError::new("/", format!("not JSON: {e}"))));
    }
    finish(out)
}

fn finish(mut out: Import) -> Import {
    if out.entries.is_empty() && out.errors.is_empty() {
        out.errors.push(LineError { line: 1, error: MailError::new("/", "the file holds no MAIL messages") });
    }
    out
}

/// A recorded event stream: its first line that says anything is an SSE field.
fn is_sse(text: &str) -> bool {
    text.lines().map(str::trim_start).find(|l| !l.is_empty()).is_some_and(|l| l.starts_with("event:") || l.starts_with("data:") || l.starts_with(':'))
}

/// SSE as recorded: `event:` names the next `data:`; an event ends at a blank line.
/// Without a name, a data line is read like a line of JSONL.
fn read_sse(text: &str, out: &mut Import) {
    fn flush(name: &mut String, data: &mut String, start: usize, out: &mut Import) {
        if !data.is_empty() {
            if name.is_empty() {
                push(out, start, serde_json::from_str::<Value>(data).map_err(|e| MailError::new("/", format!("not JSON: {e}"))));
            } else {
                push_parsed(out, start, name, data);
            }
        }
        name.clear();
        data.clear();
    }
    let (mut name, mut data, mut start) = (String::new(), String::new(), 0);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            flush(&mut name, &mut data, start, out);
        } else if let Some(v) = line.strip_prefix("event:") {
            name = v.trim().to_string();
            start = i.saturating_add(1);
        } else if let Some(v) = line.strip_prefix("data:") {
            if data.is_empty() && name.is_empty() {
                start = i.saturating_add(1);
            }
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    flush(&mut name, &mut data, start, out);
}

/// One exported event: its `data` is JSON text (`GET /task`) or the object itself (the
/// event dump).
fn push_event(out: &mut Import, line: usize, name: &str, data: &Value) {
    let text = match data {
        Value::String(d) => std::borrow::Cow::Borrowed(d.as_str()),
        d => std::borrow::Cow::Owned(d.to_string()),
    };
    push_parsed(out, line, name, &text);
}

fn push_parsed(out: &mut Import, line: usize, name: &str, data: &str) {
    match TaskEvent::parse(name, data) {
        Ok(TaskEvent::Ping { .. }) => {}
        Ok(TaskEvent::Message { message, .. }) => out.entries.push(Entry { line, item: Item::Message(message) }),
        Ok(e) => out.entries.push(Entry { line, item: Item::Event(Box::new(e)) }),
        Err(bad) => out.errors.push(LineError { line, error: bad.error }),
    }
}

fn push(out: &mut Import, line: usize, v: Result<Value, MailError>) {
    let v = match v {
        Ok(v) => v,
        Err(error) => return out.errors.push(LineError { line, error }),
    };
    // `GET /task`: the task, then each of its events.
    if let (Some(task_id), Some(events)) = (v.get("task_id").and_then(Value::as_str), v.get("events").and_then(Value::as_array)) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let contributors =
            v.get("task_contributors").and_then(Value::as_array).map(|a| a.iter().filter_map(|c| c.as_str().map(str::to_string)).collect()).unwrap_or_default();
        let item = Item::Task { task_id: task_id.to_string(), owner: s("task_owner"), contributors, completed: v.get("completed").and_then(Value::as_bool) };
        out.entries.push(Entry { line, item });
        for ev in events {
            let name = ev.get("event").and_then(Value::as_str).unwrap_or_default();
            match ev.get("data") {
                Some(d) => push_event(out, line, name, d),
                None => out.errors.push(LineError { line, error: MailError::new("/events/data", "is required") }),
            }
        }
        return;
    }
    // The event dump: `{task_id, event_type, event_id, data}`.
    if let (Some(name), Some(data)) = (v.get("event_type").and_then(Value::as_str), v.get("data")) {
        return push_event(out, line, name, data);
    }
    match item(&v) {
        Ok(item) => out.entries.push(Entry { line, item }),
        Err(error) => out.errors.push(LineError { line, error }),
    }
}

fn item(v: &Value) -> Result<Item, MailError> {
    if !v.is_object() {
        return Err(MailError::new("/", "is not a JSON object"));
    }
    if v.get("source_swarm").is_some() || v.get("payload").is_some() {
        return Interswarm::from_value(v).map(|i| Item::Interswarm(Box::new(i)));
    }
    if let Some(full) = v.pointer("/extra_data/full_message") {
        return Message::keep(full).map(|m| Item::Message(Box::new(m))).map_err(in_full_message);
    }
    if v.get("msg_type").is_some() || v.get("message").is_some() {
        return Message::keep(v).map(|m| Item::Message(Box::new(m)));
    }
    Err(MailError::new("/", "neither a MAILMessage (msg_type, message) nor an interswarm wrapper (source_swarm, payload)"))
}
