//! A2A's types in the protobuf JSON form the SDKs read and write (`lf.a2a.v1`): fields in
//! camelCase, enums by their full names, a part's content as one of `text`, `raw`
//! (base64), `url` or `data`. Read leniently where the SDKs are (an empty string is an
//! absent field), written the way `json_format.MessageToDict` would.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A task's state (`TaskState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Nothing more happens to a task in this state.
    pub fn terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected)
    }

    /// A stream of the task's events ends here: it is over, or waits for someone.
    pub fn ends_stream(self) -> bool {
        self.terminal() || matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Absent, null and "" are the same to a protobuf reader.
fn nonempty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()))
}

/// One part of a message or artifact. Exactly one of `text`, `raw`, `url`, `data` is its
/// content ([`Part::content`]); `raw` is base64 as protobuf JSON writes bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, deserialize_with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

/// What a part carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Content<'a> {
    Text(&'a str),
    /// File bytes, base64 as sent.
    Raw(&'a str),
    /// A file by reference: a string, never fetched because a peer names it.
    Url(&'a str),
    Data(&'a Value),
}

impl Part {
    pub fn text(t: impl Into<String>) -> Part {
        Part { text: Some(t.into()), ..Part::default() }
    }

    /// Its one content, or why it has none or several.
    pub fn content(&self) -> Result<Content<'_>, &'static str> {
        let mut found = None;
        let mut count = 0u8;
        if let Some(t) = &self.text {
            found = Some(Content::Text(t));
            count = count.saturating_add(1);
        }
        if let Some(r) = &self.raw {
            found = Some(Content::Raw(r));
            count = count.saturating_add(1);
        }
        if let Some(u) = &self.url {
            found = Some(Content::Url(u));
            count = count.saturating_add(1);
        }
        if let Some(d) = &self.data {
            found = Some(Content::Data(d));
            count = count.saturating_add(1);
        }
        match (count, found) {
            (1, Some(c)) => Ok(c),
            (0, _) => Err("a part has none of text, raw, url or data"),
            _ => Err("a part has more than one of text, raw, url and data"),
        }
    }
}

/// A message (`Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub message_id: String,
    #[serde(default, deserialize_with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, deserialize_with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default = "unspecified")]
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

/// Characters of a data part written into a message's text.
const MAX_DATA_CHARS: usize = 16 * 1024;

impl Message {
    /// What the message says, as text for a person and an executor: its text parts, data
    /// as JSON, files named and never opened (inline bytes stay data; a URL is only text,
    /// never fetched because a peer wrote it).
    pub fn prompt(&self) -> String {
        let mut out = Vec::new();
        for p in &self.parts {
            let name = p.filename.as_deref().unwrap_or("unnamed");
            let media = p.media_type.as_deref().unwrap_or("no media type");
            match p.content() {
                Ok(Content::Text(t)) => out.push(t.to_string()),
                Ok(Content::Data(d)) => {
                    let text: String = d.to_string().chars().take(MAX_DATA_CHARS).collect();
                    out.push(format!("[data] {text}"));
                }
                Ok(Content::Raw(b64)) => {
                    let bytes = (b64.len() / 4).saturating_mul(3);
                    out.push(format!("[file {name:?} ({media}, about {bytes} bytes), attached as data]"));
                }
                Ok(Content::Url(u)) => {
                    let shown: String = u.chars().take(512).collect();
                    out.push(format!("[file {name:?} ({media}) said to be at {shown:?}; not fetched]"));
                }
                Err(_) => {}
            }
        }
        out.join("\n\n")
    }
}

fn unspecified() -> Role {
    Role::Unspecified
}

impl Message {
    /// A message from this agent, in plain words, about a task.
    pub fn agent(message_id: String, task_id: &str, context_id: &str, text: impl Into<String>) -> Message {
        Message {
            message_id,
            context_id: Some(context_id.to_string()),
            task_id: Some(task_id.to_string()),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// RFC 3339, UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusUpdate {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactUpdate {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
}

/// One event of a stream (`StreamResponse`), and the answer to a send
/// (`SendMessageResponse`, which is a task or a message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Event {
    Task(Task),
    Message(Message),
    StatusUpdate(StatusUpdate),
    ArtifactUpdate(ArtifactUpdate),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_as_the_python_sdk_writes_it_is_read() {
        // json_format.MessageToDict of a SendMessageRequest's message (a2a-sdk 1.3).
        let m: Message = serde_json::from_value(json!({
            "messageId": "m-1", "role": "ROLE_USER", "contextId": "",
            "parts": [{"text": "hello"}, {"raw": "aGk=", "filename": "a.txt", "mediaType": "text/plain"}, {"url": "file:///etc/passwd"}, {"data": {"k": 1}}]
        }))
        .unwrap();
        assert_eq!(m.context_id, None);
        let kinds: Vec<_> = m.parts.iter().map(|p| p.content().unwrap()).collect();
        assert_eq!(kinds[0], Content::Text("hello"));
        assert_eq!(kinds[1], Content::Raw("aGk="));
        assert_eq!(kinds[2], Content::Url("file:///etc/passwd"));
        assert!(matches!(kinds[3], Content::Data(_)));
        assert!(Part::default().content().is_err());
        let said = m.prompt();
        assert!(said.starts_with("hello\n\n[file \"a.txt\" (text/plain, about 3 bytes), attached as data]"), "{said}");
        assert!(said.contains("said to be at \"file:///etc/passwd\"; not fetched"), "{said}");
        assert!(said.ends_with("[data] {\"k\":1}"), "{said}");
        assert!(Part { text: Some("a".into()), url: Some("b".into()), ..Part::default() }.content().is_err());
    }

    #[test]
    fn events_are_written_as_one_named_field() {
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::InputRequired, message: None, timestamp: None },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        };
        assert_eq!(
            serde_json::to_value(Event::Task(task.clone())).unwrap(),
            json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}})
        );
        let up = Event::StatusUpdate(StatusUpdate { task_id: "t".into(), context_id: "c".into(), status: task.status });
        assert_eq!(serde_json::to_value(up).unwrap()["statusUpdate"]["taskId"], "t");
    }
}
