//! Stream frames (spec 5, schema A.2).

use serde::Serialize;
use serde_json::Value;

use crate::error::{Code, UampError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeltaType {
    Patch,
    Chunk,
    Progress,
    Done,
    Cancel,
    Error,
}

impl DeltaType {
    pub fn as_str(self) -> &'static str {
        match self {
            DeltaType::Patch => "patch",
            DeltaType::Chunk => "chunk",
            DeltaType::Progress => "progress",
            DeltaType::Done => "done",
            DeltaType::Cancel => "cancel",
            DeltaType::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<DeltaType> {
        [DeltaType::Patch, DeltaType::Chunk, DeltaType::Progress, DeltaType::Done, DeltaType::Cancel, DeltaType::Error].into_iter().find(|t| t.as_str() == s)
    }

    /// The frame that ends a stream.
    pub fn is_terminal(self) -> bool {
        matches!(self, DeltaType::Done | DeltaType::Cancel | DeltaType::Error)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    pub delta_seq: u64,
    pub stream_id: String,
    pub ts: String,
    #[serde(rename = "type")]
    pub kind: DeltaType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

impl Delta {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a delta serialises")
    }

    /// Reads a frame a peer sent. Schema A.2 requires `stream_id` and `ts`, but the
    /// spec's own SSE example (C.2) omits both; a frame without them is taken as part of
    /// the stream being read (`stream_id`) and stamped with the empty string (`ts`).
    /// A frame without `delta_seq` is 4.09, the spec's own code for it.
    pub fn parse_from_peer(bytes: &[u8], stream_id: &str) -> Result<Delta, UampError> {
        let mut v: Value = serde_json::from_slice(bytes).map_err(|e| UampError::invalid("/", format!("not valid JSON: {e}")))?;
        let obj = v.as_object_mut().ok_or_else(|| UampError::invalid("/", "a delta is a JSON object"))?;
        if !obj.contains_key("delta_seq") {
            return Err(UampError::new(Code::MissingDeltaSeq, "missing_delta_seq", "the frame has no delta_seq"));
        }
        obj.entry("stream_id").or_insert_with(|| stream_id.into());
        obj.entry("ts").or_insert_with(|| chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into());
        crate::schema::check("delta", &v)?;
        let delta = Delta {
            delta_seq: v.get("delta_seq").and_then(|v| v.as_u64()).unwrap_or_default(),
            stream_id: v.get("stream_id").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
            ts: v.get("ts").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
            kind: DeltaType::parse(v.get("type").and_then(|v| v.as_str()).unwrap_or_default()).expect("schema checked the type"),
            payload: v.get("payload").cloned(),
        };
        if delta.stream_id != stream_id {
            return Err(UampError::invalid("/stream_id", format!("is {:?} in the stream {stream_id:?}", delta.stream_id)));
        }
        Ok(delta)
    }

    /// Checks a frame strictly against schema A.2 (what Gatehouse itself sends).
    pub fn check_strict(v: &Value) -> Result<(), UampError> {
        crate::schema::check("delta", v)
    }
}
