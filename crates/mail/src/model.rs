//! MAIL's data model as Rust types. Values are always checked against the schemas first
//! ([`Message::from_value`]), so the types never see what the spec forbids.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schema::{self, Kind, MailError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressType {
    Admin,
    Agent,
    User,
    System,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    pub address_type: AddressType,
    pub address: String,
}

impl Address {
    pub fn agent(name: &str) -> Address {
        Address { address_type: AddressType::Agent, address: name.to_string() }
    }

    /// `name` and its swarm for an interswarm address `name@swarm`; a local address has none.
    pub fn split(&self) -> (&str, Option<&str>) {
        match self.address.rsplit_once('@') {
            Some((name, swarm)) if !name.is_empty() && !swarm.is_empty() => (name, Some(swarm)),
            _ => (self.address.as_str(), None),
        }
    }

    /// The special recipient `agent: all` (every agent of the local swarm).
    pub fn is_all(&self) -> bool {
        self.address_type == AddressType::Agent && self.address == "all"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MsgType {
    Request,
    Response,
    Broadcast,
    Interrupt,
    BroadcastComplete,
}

impl MsgType {
    pub fn as_str(self) -> &'static str {
        match self {
            MsgType::Request => "request",
            MsgType::Response => "response",
            MsgType::Broadcast => "broadcast",
            MsgType::Interrupt => "interrupt",
            MsgType::BroadcastComplete => "broadcast_complete",
        }
    }
}

/// The bound payload of a message (`msg_type` decides which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    pub task_id: String,
    /// `request_id`, `broadcast_id` or `interrupt_id`.
    pub payload_id: String,
    pub sender: Address,
    /// One for requests and responses, at least one for broadcasts and interrupts.
    pub recipients: Vec<Address>,
    pub subject: String,
    pub body: String,
    pub sender_swarm: Option<String>,
    /// `recipient_swarm`, or `recipient_swarms` of a broadcast or interrupt.
    pub recipient_swarms: Vec<String>,
    pub routing_info: Option<Value>,
}

impl Payload {
    fn from_object(msg_type: MsgType, o: &Map<String, Value>) -> Payload {
        let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        let addr = |v: &Value| serde_json::from_value::<Address>(v.clone()).ok();
        let id_key = match msg_type {
            MsgType::Request | MsgType::Response => "request_id",
            MsgType::Broadcast | MsgType::BroadcastComplete => "broadcast_id",
            MsgType::Interrupt => "interrupt_id",
        };
        let recipients = match msg_type {
            MsgType::Request | MsgType::Response => o.get("recipient").and_then(addr).into_iter().collect(),
            _ => o.get("recipients").and_then(Value::as_array).map(|a| a.iter().filter_map(addr).collect()).unwrap_or_default(),
        };
        let recipient_swarms = match (s("recipient_swarm"), o.get("recipient_swarms").and_then(Value::as_array)) {
            (Some(one), _) => vec![one],
            (None, Some(many)) => many.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        };
        Payload {
            task_id: s("task_id").unwrap_or_default(),
            payload_id: s(id_key).unwrap_or_default(),
            sender: o.get("sender").and_then(addr).unwrap_or(Address { address_type: AddressType::System, address: String::new() }),
            recipients,
            subject: s("subject").unwrap_or_default(),
            body: s("body").unwrap_or_default(),
            sender_swarm: s("sender_swarm"),
            recipient_swarms,
            routing_info: o.get("routing_info").cloned(),
        }
    }

    /// The name of a subject the reference implementation writes itself, between two
    /// colons (`::task_complete::`, `::tool_call_error::`), if this is one.
    pub fn system_subject(&self) -> Option<&str> {
        let s = self.subject.trim();
        s.strip_prefix("::").and_then(|s| s.strip_suffix("::")).filter(|n| !n.is_empty() && !n.contains("::"))
    }

    /// Whether this is a system message about a failure. The reference marks the normal
    /// finish (`::task_complete::`), help and action results the same way, so only
    /// names that say error, timeout, cancellation or shutdown count (docs/interop.md).
    pub fn is_system_error(&self) -> bool {
        self.system_subject()
            .is_some_and(|n| n.contains("error") || n.contains("timeout") || n.contains("cancelled") || n == "shutdown_requested" || n.starts_with("invalid_"))
    }
}

/// A `MAILMessage`: the envelope every swarm message travels in.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: String,
    pub timestamp: String,
    pub msg_type: MsgType,
    pub payload: Payload,
    /// The message as received, kept for export and re-validation.
    pub raw: Value,
    /// Where a message kept by [`Message::keep`] departs from the schema.
    pub odd: Option<MailError>,
}

impl Message {
    /// Validates `v` against the MAILMessage schema (with its conditional `msg_type`
    /// binding), then reads it.
    pub fn from_value(v: &Value) -> Result<Message, MailError> {
        schema::check(Kind::Message, v)?;
        Ok(Self::read(v))
    }

    /// A message as a swarm sent it, kept even where it departs from the schema (the
    /// reference sends agents' messages with `sender_swarm: null`): the departure is in
    /// [`Message::odd`] for the user to see. Only what the timeline cannot do without is
    /// required: a known `msg_type`, a `message` object and its `task_id`.
    pub fn keep(v: &Value) -> Result<Message, MailError> {
        let Err(odd) = schema::check(Kind::Message, v) else {
            return Ok(Self::read(v));
        };
        if !v.is_object() {
            return Err(MailError::new("/", "is not a JSON object"));
        }
        if serde_json::from_value::<MsgType>(v["msg_type"].clone()).is_err() {
            return Err(MailError::new("/msg_type", format!("{} is not a MAIL message type", v["msg_type"])));
        }
        if !v["message"].is_object() {
            return Err(MailError::new("/message", "is required and must be an object"));
        }
        if v.pointer("/message/task_id").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(MailError::new("/message/task_id", "is required"));
        }
        Ok(Message { odd: Some(odd), ..Self::read(v) })
    }

    fn read(v: &Value) -> Message {
        let msg_type: MsgType = serde_json::from_value(v["msg_type"].clone()).expect("the schema admits only known msg_type values");
        let empty = Map::new();
        let o = v["message"].as_object().unwrap_or(&empty);
        Message {
            id: v["id"].as_str().unwrap_or_default().to_string(),
            timestamp: v["timestamp"].as_str().unwrap_or_default().to_string(),
            msg_type,
            payload: Payload::from_object(msg_type, o),
            raw: v.clone(),
            odd: None,
        }
    }

    /// The spec's five priority tiers, 1 highest: anything from `system` (1), from
    /// `admin`/`user` (2); from agents: interrupts (3), broadcasts (4), requests and
    /// responses (5). `broadcast_complete` carries a broadcast, so it ranks as one.
    pub fn tier(&self) -> u8 {
        match (self.payload.sender.address_type, self.msg_type) {
            (AddressType::System, _) => 1,
            (AddressType::Admin | AddressType::User, _) => 2,
            (AddressType::Agent, MsgType::Interrupt) => 3,
            (AddressType::Agent, MsgType::Broadcast | MsgType::BroadcastComplete) => 4,
            (AddressType::Agent, MsgType::Request | MsgType::Response) => 5,
        }
    }
}

/// `role:id@swarm`, the form of `task_owner` and `task_contributors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contributor {
    /// `admin`, `user` or `swarm`.
    pub role: String,
    pub id: String,
    pub swarm: String,
}

impl Contributor {
    pub fn parse(s: &str) -> Result<Contributor, String> {
        let (role, rest) = s.split_once(':').ok_or_else(|| format!("{s:?} is not role:id@swarm"))?;
        if !matches!(role, "admin" | "user" | "swarm") {
            return Err(format!("{s:?}: the role is {role:?}, not admin, user or swarm"));
        }
        let (id, swarm) = rest.rsplit_once('@').ok_or_else(|| format!("{s:?} names no swarm (role:id@swarm)"))?;
        if id.is_empty() || swarm.is_empty() {
            return Err(format!("{s:?} is not role:id@swarm"));
        }
        Ok(Contributor { role: role.into(), id: id.into(), swarm: swarm.into() })
    }
}

/// A `MAILInterswarmMessage`: a core payload carried between swarms.
#[derive(Debug, Clone, PartialEq)]
pub struct Interswarm {
    pub message_id: String,
    pub source_swarm: String,
    pub target_swarm: String,
    pub timestamp: String,
    pub msg_type: MsgType,
    pub payload: Payload,
    pub task_owner: String,
    pub task_contributors: Vec<String>,
    pub metadata: Option<Value>,
    pub raw: Value,
}

impl Interswarm {
    /// Validates `v` against the interswarm schema (payload bound by `msg_type`), then reads
    /// it. `task_owner` and each contributor must be `role:id@swarm`, and the owner must
    /// be among the contributors (spec, Tasks).
    pub fn from_value(v: &Value) -> Result<Interswarm, MailError> {
        schema::check(Kind::Interswarm, v)?;
        let owner = v["task_owner"].as_str().unwrap_or_default().to_string();
        Contributor::parse(&owner).map_err(|m| MailError::new("/task_owner", m))?;
        let contributors: Vec<String> =
            v["task_contributors"].as_array().map(|a| a.iter().filter_map(|c| c.as_str().map(str::to_string)).collect()).unwrap_or_default();
        for (i, c) in contributors.iter().enumerate() {
            Contributor::parse(c).map_err(|m| MailError::new(format!("/task_contributors/{i}"), m))?;
        }
        if !contributors.contains(&owner) {
            return Err(MailError::new("/task_contributors", format!("must include the task owner {owner:?}")));
        }
        let msg_type: MsgType = serde_json::from_value(v["msg_type"].clone()).expect("the schema admits only known msg_type values");
        let empty = Map::new();
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        Ok(Interswarm {
            message_id: s("message_id"),
            source_swarm: s("source_swarm"),
            target_swarm: s("target_swarm"),
            timestamp: s("timestamp"),
            msg_type,
            payload: Payload::from_object(msg_type, v["payload"].as_object().unwrap_or(&empty)),
            task_owner: owner,
            task_contributors: contributors,
            metadata: v.get("metadata").cloned(),
            raw: v.clone(),
        })
    }

    /// The payload as the MAILMessage the receiving swarm would process locally (the
    /// wrapper's id and timestamp), so imported hops sit in the same timeline.
    pub fn as_message(&self) -> Message {
        Message {
            id: self.message_id.clone(),
            timestamp: self.timestamp.clone(),
            msg_type: self.msg_type,
            payload: self.payload.clone(),
            raw: self.raw.clone(),
            odd: None,
        }
    }
}
