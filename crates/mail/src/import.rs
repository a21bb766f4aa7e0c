//! Reading a task log a user opens or drops: a JSON object, a JSON array of them, or JSONL
//! (one per line). Each item is a MAILMessage, an interswarm wrapper, or a swarm event
//! whose `extra_data.full_message` holds a MAILMessage (the reference's event dumps).
//! Invalid items are reported with their line and field; the valid ones are kept.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::model::{Interswarm, Message};
use crate::schema::MailError;

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Message(Box<Message>),
    Interswarm(Box<Interswarm>),
}

impl Item {
    /// The item as a message of its task's timeline.
    pub fn message(&self) -> Message {
        match self {
            Item::Message(m) => (**m).clone(),
            Item::Interswarm(i) => i.as_message(),
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
    text[..offset.min(text.len())].bytes().filter(|b| *b == b'\n').count() + 1
}

/// Reads `text`; never fails as a whole (an unreadable file is one error on line 1).
pub fn read(text: &str) -> Import {
    let mut out = Import::default();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
        for raw in items {
            let line = line_of(text, raw.get().as_ptr() as usize - text.as_ptr() as usize);
            push(&mut out, line, serde_json::from_str(raw.get()).map_err(|e| MailError::new("/", e.to_string())));
        }
        return out;
    }
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        let start = text.len() - text.trim_start().len();
        push(&mut out, line_of(text, start), Ok(v));
        return out;
    }
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        push(&mut out, i + 1, serde_json::from_str::<Value>(l).map_err(|e| MailError::new("/", format!("not JSON: {e}"))));
    }
    if out.entries.is_empty() && out.errors.is_empty() {
        out.errors.push(LineError { line: 1, error: MailError::new("/", "the file holds no MAIL messages") });
    }
    out
}

fn push(out: &mut Import, line: usize, v: Result<Value, MailError>) {
    match v.and_then(|v| item(&v)) {
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
        return Message::from_value(full)
            .map(|m| Item::Message(Box::new(m)))
            .map_err(|e| MailError::new(format!("/extra_data/full_message{}", e.field.trim_end_matches('/')), e.message));
    }
    if v.get("msg_type").is_some() || v.get("message").is_some() {
        return Message::from_value(v).map(|m| Item::Message(Box::new(m)));
    }
    Err(MailError::new("/", "neither a MAILMessage (msg_type, message) nor an interswarm wrapper (source_swarm, payload)"))
}
