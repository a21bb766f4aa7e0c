//! MAIL swarms as the user's client (no door: nothing arrives here unasked): tasks kept for the user: what a swarm streams while a task runs, and
//! task logs imported from files, stored by task_id so a task's history (and its later
//! turns) survives restarts.
//!
//! - [`executor`]: the swarm executor (an EPP prompt handed to a swarm), a delegate

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

pub mod executor;
pub mod v2;

use std::path::Path;
use std::sync::Arc;

use gatehouse_mail::client::{Outcome, SendMessage};
use gatehouse_mail::events::BadEvent;
use gatehouse_mail::import::{self, LineError};
use gatehouse_mail::model::{Address, AddressType, Message};
use gatehouse_mail::{ClientError, SwarmClient, TaskEvent};
use gatehouse_store::mail::{MailEventRow, MailMessageRow, NewMailTask};
use gatehouse_store::{Store, StoreError};
use serde::Serialize;

/// Task logs larger than this are refused (a log is text; this is generous).
pub const MAX_IMPORT_BYTES: u64 = 64 * 1024 * 1024;

/// The keychain name of a swarm connection's bearer token. It names the address the token
/// was given for, so a connection re-added under the same name with another address
/// never sends the old token there.
pub fn token_name(swarm: &str, base_url: &str) -> String {
    format!("mail-token:{swarm}@{base_url}")
}

#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    #[error("{0}")]
    Invalid(String),
    #[error("no swarm {0:?}")]
    NotFound(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the keychain: {0}")]
    Keychain(#[from] gatehouse_keys::KeyError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SwarmError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            SwarmError::Invalid(_) => gatehouse_code::Code::Invalid,
            SwarmError::NotFound(_) => gatehouse_code::Code::NotFound,
            SwarmError::Client(e) => e.code(),
            SwarmError::Keychain(_) => gatehouse_code::Code::Keychain,
            SwarmError::Store(_) => gatehouse_code::Code::Store,
        }
    }
}

/// A connection as kept, what the swarm said about itself, and whether a token is kept.
#[derive(Debug, Clone, Serialize)]
pub struct SwarmAdded {
    pub swarm: gatehouse_store::mail::MailSwarmRow,
    pub info: serde_json::Value,
    pub has_token: bool,
}

/// Connects to a swarm, for the window and the CLI alike: what it says about itself is
/// fetched first (a MAIL 2.0 server then takes `address` and, in `token`, its password:
/// a login it refuses is not kept), a token it refuses is not kept, a token is kept for this address only
/// (re-adding the name with another address forgets the old one's token), and the change
/// is audited.
pub async fn swarm_add(
    store: Arc<Store>,
    data_dir: &Path,
    name: &str,
    url: &str,
    token: Option<String>,
    address: Option<String>,
) -> Result<SwarmAdded, SwarmError> {
    let name = name.trim().to_string();
    if name.is_empty() {
        return Err(SwarmError::Invalid("give the swarm a name".into()));
    }
    let token = token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    let client = SwarmClient::new(url, token.clone())?;
    let root = client.root().await?;
    let (info, token) = if gatehouse_mail::v2::speaks_v2(&root) {
        // A 2.0 server takes an address and a password; what is kept is both, as one secret.
        let address = address.map(|a| a.trim().to_string()).filter(|a| !a.is_empty());
        let (Some(address), Some(password)) = (address, token) else {
            return Err(SwarmError::Invalid(
                "this server speaks MAIL 2.0: give the address you log in with (like user:alice@example.com) and its password".into(),
            ));
        };
        let creds = gatehouse_mail::v2::Credentials { address, password };
        let c2 = gatehouse_mail::v2::Client::new(url, creds.clone())?;
        let info = v2::survey(&c2, root).await.map_err(|e| match e {
            ClientError::Unauthorized { detail, .. } => SwarmError::Invalid(format!("not added: the server refused the login ({detail})")),
            other => other.into(),
        })?;
        (info, Some(serde_json::to_string(&creds).map_err(|e| SwarmError::Invalid(e.to_string()))?))
    } else {
        let info = survey(&client, root).await?;
        if let Some(why) = token.as_ref().and(token_refused(&info)) {
            return Err(SwarmError::Invalid(format!("not added: {why}")));
        }
        (info, token)
    };
    let (base, dir, i) = (client.base().to_string(), data_dir.to_path_buf(), info.clone());
    tokio::task::spawn_blocking(move || {
        let secrets = gatehouse_keys::Secrets::open(&dir)?;
        let before = store.mail_swarm(&name)?;
        if let Some(old) = before.as_ref().filter(|old| old.base_url != base) {
            secrets.delete(&token_name(&name, &old.base_url))?;
        }
        if let Some(t) = &token {
            secrets.put(&token_name(&name, &base), t)?;
        }
        store.mail_swarm_put(&name, &base, &now())?;
        store.mail_swarm_set_info(&name, &i)?;
        let replaced = before.map(|b| b.base_url).filter(|u| *u != base);
        store.audit("mail.swarm_add", None, &serde_json::json!({"name": name, "url": base, "replaced_url": replaced, "token": token.is_some()}), &now())?;
        let swarm = store.mail_swarm(&name)?.ok_or_else(|| SwarmError::NotFound(name.clone()))?;
        let has_token = secrets.get(&token_name(&name, &swarm.base_url))?.is_some();
        Ok(SwarmAdded { swarm, info: i, has_token })
    })
    .await
    .map_err(|e| SwarmError::Invalid(e.to_string()))?
}

/// Forgets a connection and its token (its tasks stay); audited. Blocking.
pub fn swarm_remove(store: &Store, data_dir: &Path, name: &str) -> Result<(), SwarmError> {
    let row = store.mail_swarm(name)?.ok_or_else(|| SwarmError::NotFound(name.to_string()))?;
    store.mail_swarm_remove(name)?;
    gatehouse_keys::Secrets::open(data_dir)?.delete(&token_name(name, &row.base_url))?;
    store.audit("mail.swarm_remove", None, &serde_json::json!({"name": name, "url": row.base_url}), &now())?;
    Ok(())
}

/// The token kept for a connection at its current address, if any. Blocking.
pub fn swarm_token(data_dir: &Path, swarm: &gatehouse_store::mail::MailSwarmRow) -> Result<Option<String>, SwarmError> {
    Ok(gatehouse_keys::Secrets::open(data_dir)?.get(&token_name(&swarm.name, &swarm.base_url))?)
}

/// A kept connection as the version it speaks.
pub enum Connection {
    V1(SwarmClient),
    V2(gatehouse_mail::v2::Client),
}

/// Whether what a connection said about itself (its survey) is a MAIL 2.0 server's.
pub fn is_v2(info: Option<&serde_json::Value>) -> bool {
    info.is_some_and(|i| gatehouse_mail::v2::speaks_v2(&i["root"]))
}

/// A client for a kept connection in the version it speaks, with its secret. Blocking
/// (the keychain).
pub fn connection(store: &Store, data_dir: &Path, name: &str) -> Result<Connection, SwarmError> {
    let row = store.mail_swarm(name)?.ok_or_else(|| SwarmError::NotFound(name.to_string()))?;
    let secret = swarm_token(data_dir, &row)?;
    if !is_v2(row.info.as_ref()) {
        return Ok(Connection::V1(SwarmClient::new(&row.base_url, secret)?));
    }
    let creds = secret
        .and_then(|s| serde_json::from_str::<gatehouse_mail::v2::Credentials>(&s).ok())
        .ok_or_else(|| SwarmError::Invalid(format!("{name} speaks MAIL 2.0 and no login is kept for it: add it again with its address and password")))?;
    Ok(Connection::V2(gatehouse_mail::v2::Client::new(&row.base_url, creds)?))
}

/// A client for a kept connection, with its token. Blocking (the keychain).
pub fn swarm_client(store: &Store, data_dir: &Path, name: &str) -> Result<SwarmClient, SwarmError> {
    let row = store.mail_swarm(name)?.ok_or_else(|| SwarmError::NotFound(name.to_string()))?;
    let token = swarm_token(data_dir, &row)?;
    Ok(SwarmClient::new(&row.base_url, token)?)
}

pub(crate) fn now() -> String {
    gatehouse_gate::clock::utc_string(chrono::Utc::now())
}

fn address(a: &Address) -> String {
    let t = match a.address_type {
        AddressType::Admin => "admin",
        AddressType::Agent => "agent",
        AddressType::User => "user",
        AddressType::System => "system",
    };
    format!("{t}:{}", a.address)
}

/// A message as the store keeps it.
pub fn row_of(m: &Message) -> MailMessageRow {
    MailMessageRow {
        id: m.id.clone(),
        task_id: m.payload.task_id.clone(),
        ts: m.timestamp.clone(),
        msg_type: m.msg_type.as_str().to_string(),
        tier: m.tier(),
        sender: address(&m.payload.sender),
        recipients: m.payload.recipients.iter().map(address).collect(),
        subject: m.payload.subject.clone(),
        body: m.payload.body.clone(),
        system_error: m.payload.is_system_error(),
        raw: m.raw.to_string(),
        odd: m.odd.as_ref().map(ToString::to_string),
    }
}

/// One event of a live task, as the app and the CLI show it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LiveEvent {
    Message {
        task_id: String,
        message: MailMessageRow,
    },
    Ping {
        task_id: Option<String>,
    },
    Step {
        task_id: Option<String>,
        event: String,
        description: String,
    },
    Finished {
        task_id: String,
        completed: bool,
        response: String,
    },
    /// An event that could not be read; the task goes on.
    Unreadable {
        event: String,
        field: String,
        message: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum MailTaskError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl MailTaskError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            MailTaskError::Client(c) => c.code(),
            MailTaskError::Store(_) => gatehouse_code::Code::Store,
        }
    }
}

/// Everything a swarm says about itself: its `GET /` as the caller fetched it (it must
/// answer: otherwise the address is wrong; `server` is it read from either shape, `root`
/// as sent), then health, identity and role, status and registry, each either its answer
/// or `{"error": {code, message}}` in place.
pub async fn survey(c: &SwarmClient, root: serde_json::Value) -> Result<serde_json::Value, ClientError> {
    let part = |r: Result<serde_json::Value, ClientError>| r.unwrap_or_else(|e| serde_json::json!({"error": {"code": e.code(), "message": e.to_string()}}));
    Ok(serde_json::json!({
        "server": gatehouse_mail::client::ServerInfo::read(&root),
        "root": root,
        "health": part(c.health().await),
        "whoami": part(c.whoami().await.map(|w| serde_json::json!(w))),
        "status": part(c.status().await),
        "swarms": part(c.swarms().await.map(|s| serde_json::json!(s))),
    }))
}

/// Whether a survey shows the swarm refused the token it was given.
pub fn token_refused(survey: &serde_json::Value) -> Option<String> {
    (survey["whoami"]["error"]["code"] == "UNAUTHORIZED").then(|| survey["whoami"]["error"]["message"].as_str().unwrap_or_default().to_string())
}

/// Records one event of a task followed live on `swarm`.
pub fn record(store: &Store, swarm: &str, subject: &str, ev: &Result<TaskEvent, BadEvent>) -> Result<LiveEvent, StoreError> {
    let at = now();
    let open = |task_id: &str| {
        store.mail_task_open(&NewMailTask {
            task_id: task_id.into(),
            swarm: Some(swarm.into()),
            source: "live".into(),
            subject: subject.into(),
            state: "running".into(),
            at: at.clone(),
        })
    };
    Ok(match ev {
        Ok(TaskEvent::Message { task_id, message }) => {
            open(task_id)?;
            let mut row = row_of(message);
            row.task_id = task_id.clone();
            store.mail_message_add(&row, &at)?;
            LiveEvent::Message { task_id: task_id.clone(), message: row }
        }
        Ok(TaskEvent::Ping { task_id }) => LiveEvent::Ping { task_id: task_id.clone() },
        Ok(TaskEvent::Step { task_id, event, description, timestamp, data }) => {
            if let Some(t) = task_id {
                open(t)?;
                store.mail_event_add(
                    t,
                    &MailEventRow { event: event.clone(), at: timestamp.clone(), description: description.clone(), data: Some(data.clone()) },
                )?;
            }
            LiveEvent::Step { task_id: task_id.clone(), event: event.clone(), description: description.clone() }
        }
        Ok(TaskEvent::Complete { task_id, response, .. }) | Ok(TaskEvent::Failed { task_id, response, .. }) => {
            let completed = matches!(ev, Ok(TaskEvent::Complete { .. }));
            open(task_id)?;
            store.mail_task_finish(task_id, if completed { "completed" } else { "failed" }, Some(response), &at)?;
            LiveEvent::Finished { task_id: task_id.clone(), completed, response: response.clone() }
        }
        Err(bad) => LiveEvent::Unreadable { event: bad.event.clone(), field: bad.error.field.clone(), message: bad.error.message.clone() },
    })
}

/// Sends `m` to the swarm connection `swarm` and follows the task to its end, keeping
/// every message and step; `on_event` sees each as it is stored. A stream that drops
/// leaves the task marked interrupted (what arrived is kept).
pub async fn send(
    store: Arc<Store>,
    client: &SwarmClient,
    swarm: &str,
    m: &SendMessage,
    mut on_event: impl FnMut(&LiveEvent) + Send,
) -> Result<Outcome, MailTaskError> {
    let subject = m.subject.clone().unwrap_or_else(|| "New Message".into());
    let mut task: Option<String> = m.task_id.clone();
    let mut failure: Option<StoreError> = None;
    let result = client
        .send(m, |ev| {
            if let Ok(e) = &ev {
                if task.is_none() {
                    task = e.task_id().map(str::to_string);
                }
            }
            // Stored before shown: what the user saw is what is kept.
            match record(&store, swarm, &subject, &ev) {
                Ok(live) => on_event(&live),
                Err(e) => failure = Some(e),
            }
        })
        .await;
    if let Some(e) = failure {
        return Err(e.into());
    }
    match result {
        Ok(o) => Ok(o),
        Err(e) => {
            if let Some(t) = &task {
                store.mail_task_finish(t, "interrupted", Some(&e.to_string()), &now())?;
            }
            Err(e.into())
        }
    }
}

/// What an import kept and what it refused.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ImportReport {
    pub source: String,
    /// Tasks the file's messages belong to.
    pub tasks: Vec<String>,
    pub imported: usize,
    /// Messages already kept (the same file imported twice).
    pub duplicates: usize,
    pub errors: Vec<ImportLineError>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ImportLineError {
    pub line: usize,
    pub field: String,
    pub message: String,
}

impl From<&LineError> for ImportLineError {
    fn from(e: &LineError) -> Self {
        ImportLineError { line: e.line, field: e.error.field.clone(), message: e.error.message.clone() }
    }
}

/// Imports a task log's text under `source` (the file name). Valid items are kept even
/// when others are not.
pub fn import_text(store: &Store, source: &str, text: &str) -> Result<ImportReport, StoreError> {
    let got = import::read(text);
    let at = now();
    let mut report = ImportReport { source: source.to_string(), errors: got.errors.iter().map(ImportLineError::from).collect(), ..Default::default() };
    for entry in &got.entries {
        let message = entry.item.message();
        let (task_id, subject) = match (&entry.item, &message) {
            (_, Some(m)) => (m.payload.task_id.clone(), m.payload.subject.clone()),
            (import::Item::Task { task_id, .. }, None) => (task_id.clone(), String::new()),
            (import::Item::Event(e), None) => (e.task_id().unwrap_or_default().to_string(), String::new()),
            _ => continue,
        };
        if task_id.is_empty() {
            continue;
        }
        if !report.tasks.contains(&task_id) {
            // The task's subject is its first message's.
            store.mail_task_open(&NewMailTask {
                task_id: task_id.clone(),
                swarm: None,
                source: source.into(),
                subject,
                state: "imported".into(),
                at: at.clone(),
            })?;
            report.tasks.push(task_id.clone());
        }
        match (&entry.item, message) {
            (_, Some(m)) => {
                if let import::Item::Interswarm(w) = &entry.item {
                    store.mail_task_contributors(&task_id, &w.task_owner, &w.task_contributors)?;
                }
                if store.mail_message_add(&row_of(&m), &at)? {
                    report.imported += 1;
                } else {
                    report.duplicates += 1;
                }
                if m.msg_type == gatehouse_mail::MsgType::BroadcastComplete {
                    let state = if m.payload.is_system_error() { "failed" } else { "completed" };
                    store.mail_task_finish(&task_id, state, Some(&m.payload.body), &at)?;
                }
            }
            (import::Item::Task { owner, contributors, completed, .. }, None) => {
                if let Some(owner) = owner {
                    store.mail_task_contributors(&task_id, owner, contributors)?;
                }
                if *completed == Some(true) {
                    store.mail_task_finish(&task_id, "completed", None, &at)?;
                }
            }
            (import::Item::Event(e), None) => match &**e {
                TaskEvent::Complete { response, .. } => store.mail_task_finish(&task_id, "completed", Some(response), &at)?,
                TaskEvent::Failed { response, .. } => store.mail_task_finish(&task_id, "failed", Some(response), &at)?,
                TaskEvent::Step { event, description, timestamp, data, .. } => store.mail_event_add(
                    &task_id,
                    &MailEventRow { event: event.clone(), at: timestamp.clone(), description: description.clone(), data: Some(data.clone()) },
                )?,
                TaskEvent::Message { .. } | TaskEvent::Ping { .. } => {}
            },
            _ => {}
        }
    }
    Ok(report)
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path} is {size} bytes; task logs up to {MAX_IMPORT_BYTES} bytes are imported")]
    TooLarge { path: String, size: u64 },
    #[error("{path} is not UTF-8 text")]
    NotText { path: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ImportError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ImportError::Io { .. } => gatehouse_code::Code::Io,
            ImportError::TooLarge { .. } => gatehouse_code::Code::TooLarge,
            ImportError::NotText { .. } => gatehouse_code::Code::NotText,
            ImportError::Store(_) => gatehouse_code::Code::Store,
        }
    }
}

/// Imports the task log at `path`.
pub fn import_file(store: &Store, path: &Path, follow_links: bool) -> Result<ImportReport, ImportError> {
    let shown = path.display().to_string();
    let io = |source| ImportError::Io { path: shown.clone(), source };
    // A path the user picked may be a link; a dropped one may not (the folder moved the
    // link itself aside, so it arrives here only by name). Either way only a regular
    // file is read, and never past the bound.
    let bytes = gatehouse_net::regular_file::read(path, MAX_IMPORT_BYTES, follow_links).map_err(|e| match e {
        gatehouse_net::regular_file::ReadFailure::TooBig(size) => ImportError::TooLarge { path: shown.clone(), size },
        gatehouse_net::regular_file::ReadFailure::Io(source) => io(source),
        other => io(std::io::Error::other(other.to_string())),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| ImportError::NotText { path: shown.clone() })?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("import").to_string();
    Ok(import_text(store, &name, &text)?)
}

/// MAIL task logs dropped into the watched folder (`*.mail.json`, `*.mail.jsonl`,
/// `*.jsonl`): the composition registers this with the folder, which names no door.
pub struct TaskLogs;

impl gatehouse_net::dropped::OtherFiles for TaskLogs {
    fn claims(&self, path: &Path) -> bool {
        let lower = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
        lower.ends_with(".mail.json") || lower.ends_with(".mail.jsonl") || lower.ends_with(".jsonl")
    }

    fn import(&self, store: &Store, path: &Path) -> (bool, serde_json::Value) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("task.jsonl").to_string();
        match import_file(store, path, false) {
            Ok(r) => (r.imported + r.duplicates > 0, serde_json::json!(r)),
            Err(e) => (false, serde_json::json!({"source": name, "error": {"code": e.code(), "message": e.to_string()}})),
        }
    }

    fn kind(&self) -> &'static str {
        "mail"
    }
}
