//! MAIL swarms the user connects to, with the token each gave kept in the keychain for
//! that address only: connected after the swarm answers (a token it refuses is not kept),
//! asked again, removed with their token, every change audited; tasks sent and followed,
//! interswarm messages, the task list, a task's timeline, and task logs imported.

use crate::Context;
use std::path::Path;
use std::sync::Arc;

use crate::doors::mail::{self, Connection};
use gatehouse_keys::Secrets;
use gatehouse_mail::client::{InterswarmSend, Outcome, SendMessage};
use gatehouse_mail::{ClientError, SwarmClient};
use gatehouse_store::mail::{MailSwarmRow, NewMailTask};
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};

use crate::{blocking, now, Code, CommandError, Result};

pub use crate::doors::mail::{ImportReport, LiveEvent};
pub use gatehouse_store::mail::{MailMessageRow, MailTaskDetail, MailTaskRow};

impl From<ClientError> for CommandError {
    fn from(e: ClientError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<mail::SwarmError> for CommandError {
    fn from(e: mail::SwarmError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

/// A connection as the user sees it: whether it holds a token.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SwarmView {
    #[serde(flatten)]
    pub swarm: MailSwarmRow,
    pub has_token: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SwarmInput {
    pub url: String,
    pub name: String,
    /// A 1.3 swarm's token, or the password of a 2.0 server's `address`.
    pub token: Option<String>,
    /// The address a MAIL 2.0 server is logged in with (`user:alice@example.com`).
    #[serde(default)]
    pub address: Option<String>,
}

/// A connection just made, with everything the swarm said about itself.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub view: SwarmView,
    pub info: serde_json::Value,
}

pub fn list(ctx: &Context) -> Result<Vec<SwarmView>> {
    let data_dir: &Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let secrets = Secrets::open(data_dir)?;
    store.mail_swarms()?.into_iter().map(|s| Ok(SwarmView { has_token: secrets.get(&mail::token_name(&s.name, &s.base_url))?.is_some(), swarm: s })).collect()
}

pub fn find(ctx: &Context, name: &str) -> Result<MailSwarmRow> {
    find_in(&ctx.store, name)
}

/// [`find`] on the store itself, for this crate's own callers.
pub(crate) fn find_in(store: &Store, name: &str) -> Result<MailSwarmRow> {
    store
        .mail_swarm(name)?
        .ok_or_else(|| CommandError::new(Code::NotFound, format!("no swarm {name:?}; add it first (its https://host address, a name and its token)")))
}

/// Connects to a swarm (see [`mail::swarm_add`]: asked first, token kept for this address
/// only, audited).
pub async fn add(ctx: &Context, input: SwarmInput) -> Result<Added> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let added = mail::swarm_add(store, data_dir, &input.name, &input.url, input.token, input.address).await?;
    Ok(Added { view: SwarmView { swarm: added.swarm, has_token: added.has_token }, info: added.info })
}

async fn connection(store: &Arc<Store>, data_dir: &Path, name: &str) -> Result<Connection> {
    let (s, d, n) = (store.clone(), data_dir.to_path_buf(), name.to_string());
    blocking(move || Ok(mail::connection(&s, &d, &n)?)).await
}

/// Asks a swarm again (metadata, health, identity and role, status, known swarms) and keeps
/// what it said.
pub async fn refresh(ctx: &Context, name: &str) -> Result<serde_json::Value> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let info = match connection(&store, data_dir, name).await? {
        Connection::V1(c) => {
            let root = c.root().await?;
            mail::survey(&c, root).await?
        }
        Connection::V2(c) => {
            let root = c.root().await?;
            mail::v2::survey(&c, root).await?
        }
    };
    let (i, n) = (info.clone(), name.to_string());
    blocking(move || Ok(store.mail_swarm_set_info(&n, &i)?)).await?;
    Ok(info)
}

/// Forgets a connection and its token; its tasks stay. Audited.
pub fn remove(ctx: &Context, name: &str) -> Result<()> {
    let data_dir: &Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    Ok(mail::swarm_remove(store, data_dir, name)?)
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SendInput {
    pub swarm: String,
    pub body: String,
    pub subject: Option<String>,
    pub task_id: Option<String>,
    pub entrypoint: Option<String>,
    /// How many seconds the whole send may take (the client's own limit if absent).
    #[serde(default)]
    pub deadline_secs: Option<u32>,
}

fn blank(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Sends a message and follows its task to the end; every event is stored, then handed to
/// `on_event` (the window pushes it, the CLI prints it).
pub async fn send(ctx: &Context, input: SendInput, on_event: impl FnMut(&LiveEvent) + Send) -> Result<Outcome> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    if input.body.trim().is_empty() {
        return Err(CommandError::new(Code::Invalid, "the message is empty"));
    }
    let deadline = input.deadline_secs.filter(|s| *s > 0).map(|s| std::time::Duration::from_secs(s.into()));
    let m = SendMessage { body: input.body, subject: blank(input.subject), task_id: blank(input.task_id), entrypoint: blank(input.entrypoint) };
    let sent = match connection(&store, data_dir, &input.swarm).await? {
        Connection::V1(mut c) => {
            if let Some(d) = deadline {
                c = c.with_deadline(d);
            }
            mail::send(store, &c, &input.swarm, &m, on_event).await
        }
        Connection::V2(c) => mail::v2::send(store, &c, &input.swarm, &m, deadline.unwrap_or(gatehouse_mail::client::DEADLINE), on_event).await,
    };
    sent.map_err(|e| CommandError::new(e.code(), e.to_string()))
}

/// Picks up what arrived on a MAIL 2.0 server since the last look (1.3 swarms stream their
/// tasks while they run: nothing to pick up). Returns how many messages were new.
pub async fn sync(ctx: &Context, name: &str, mut on_event: impl FnMut(&LiveEvent) + Send) -> Result<usize> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    match connection(&store, data_dir, name).await? {
        Connection::V1(_) => Ok(0),
        Connection::V2(c) => mail::v2::sync(&store, &c, name, &mut on_event).await.map_err(|e| CommandError::new(e.code(), e.to_string())),
    }
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct InterswarmInput {
    pub swarm: String,
    pub body: String,
    /// `agent@swarm` addresses.
    pub targets: Vec<String>,
    pub subject: Option<String>,
    pub task_id: Option<String>,
}

/// Sends to agents of other swarms through this one (it needs the swarm's token, which is
/// also the user token the swarm forwards); the message opens or joins its task.
pub async fn interswarm(ctx: &Context, input: InterswarmInput) -> Result<MailMessageRow> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let targets: Vec<String> = input.targets.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect();
    if targets.is_empty() || targets.iter().any(|t| !t.contains('@')) {
        return Err(CommandError::new(Code::Invalid, "name each target as agent@swarm"));
    }
    let (s, d, name) = (store.clone(), data_dir.to_path_buf(), input.swarm.clone());
    let (row, token) = blocking(move || {
        let row = find_in(&s, &name)?;
        if mail::is_v2(row.info.as_ref()) {
            return Err(CommandError::new(
                Code::Invalid,
                format!("{name} speaks MAIL 2.0, which has no interswarm messages: send to agent@swarm@host instead"),
            ));
        }
        let token = mail::swarm_token(&d, &row)?;
        Ok((row, token))
    })
    .await?;
    let token = token.ok_or_else(|| {
        CommandError::new(Code::NoToken, format!("{} has no token; interswarm messages need one: add the swarm again with its token", input.swarm))
    })?;
    let client = SwarmClient::new(&row.base_url, Some(token.clone()))?;
    let msg_type = (targets.len() > 1).then(|| "broadcast".to_string());
    let req = InterswarmSend { user_token: token, body: input.body, targets, subject: blank(input.subject), msg_type, task_id: blank(input.task_id) };
    let (msg, _) = client.interswarm(&req).await?;
    let row = mail::row_of(&msg);
    let (r, swarm) = (row.clone(), input.swarm);
    blocking(move || {
        store.mail_task_open(&NewMailTask {
            task_id: r.task_id.clone(),
            swarm: Some(swarm),
            source: "live".into(),
            subject: r.subject.clone(),
            state: "running".into(),
            at: now(),
        })?;
        store.mail_message_add(&r, &now())?;
        Ok(())
    })
    .await?;
    Ok(row)
}

/// Tasks, newest first, optionally those matching `query`.
pub fn tasks(ctx: &Context, query: Option<&str>, limit: usize) -> Result<Vec<MailTaskRow>> {
    let store: &Store = &ctx.store;
    Ok(store.mail_tasks(query, limit)?)
}

/// A task with every message and step kept for it.
pub fn task(ctx: &Context, task_id: &str) -> Result<MailTaskDetail> {
    let store: &Store = &ctx.store;
    store.mail_task(task_id)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no task {task_id}")))
}

/// Imports a task log (a file the user named, picked or dropped).
pub fn import(ctx: &Context, path: &Path) -> Result<ImportReport> {
    let store: &Store = &ctx.store;
    mail::import_file(store, path, true).map_err(|e| CommandError::new(e.code(), e.to_string()))
}
