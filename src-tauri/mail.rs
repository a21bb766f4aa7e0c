//! MAIL in the window: swarm connections (token in the keychain) with what each says about
//! itself, tasks sent and followed live (`mail://event`), the task list with search, a
//! task's timeline, interswarm messages, and task logs imported from files.

use std::path::PathBuf;

use gatehouse_inbox::mail::{self, ImportReport, LiveEvent};
use gatehouse_keys::Secrets;
use gatehouse_mail::client::{InterswarmSend, Outcome, SendMessage};
use gatehouse_mail::{ClientError, SwarmClient};
use gatehouse_store::mail::{MailMessageRow, MailSwarmRow, MailTaskDetail, MailTaskRow, NewMailTask};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};

use crate::commands::{blocking, Code, CommandError, CoreState};

type Result<T> = std::result::Result<T, CommandError>;

fn client_error(e: ClientError) -> CommandError {
    CommandError::coded(e.code(), e.to_string())
}

fn keychain(e: gatehouse_keys::KeyError) -> CommandError {
    CommandError::new(Code::Keychain, e.to_string())
}

fn now() -> String {
    gatehouse_epp::utc_string(chrono::Utc::now())
}

#[derive(Serialize, specta::Type)]
pub struct SwarmView {
    #[serde(flatten)]
    pub swarm: MailSwarmRow,
    pub has_token: bool,
}

#[tauri::command]
#[specta::specta]
pub async fn mail_swarms(core: CoreState<'_>) -> Result<Vec<SwarmView>> {
    let c = core.inner().clone();
    blocking(move || {
        let secrets = Secrets::open(&c.data_dir).map_err(keychain)?;
        c.store
            .mail_swarms()?
            .into_iter()
            .map(|s| Ok(SwarmView { has_token: secrets.get(&mail::token_name(&s.name, &s.base_url)).map_err(keychain)?.is_some(), swarm: s }))
            .collect()
    })
    .await
}

#[derive(Deserialize, specta::Type)]
pub struct SwarmInput {
    pub url: String,
    pub name: String,
    pub token: Option<String>,
}

/// Connects to a swarm: what it says about itself is fetched first; a token it refuses is
/// not kept.
#[tauri::command]
#[specta::specta]
pub async fn mail_swarm_add(core: CoreState<'_>, input: SwarmInput) -> Result<SwarmView> {
    let c = core.inner().clone();
    let added = mail::swarm_add(c.store.clone(), &c.data_dir, &input.name, &input.url, input.token).await.map_err(swarm_error)?;
    Ok(SwarmView { swarm: added.swarm, has_token: added.has_token })
}

fn swarm_error(e: mail::SwarmError) -> CommandError {
    CommandError::coded(e.code(), e.to_string())
}

async fn client_for(c: &std::sync::Arc<crate::service::Core>, name: &str) -> Result<SwarmClient> {
    let (c, n) = (c.clone(), name.to_string());
    blocking(move || mail::swarm_client(&c.store, &c.data_dir, &n).map_err(swarm_error)).await
}

/// Asks the swarm again: metadata, health, identity and role, status, known swarms.
#[tauri::command]
#[specta::specta]
pub async fn mail_swarm_refresh(core: CoreState<'_>, name: String) -> Result<serde_json::Value> {
    let c = core.inner().clone();
    let client = client_for(&c, &name).await?;
    let info = mail::survey(&client).await.map_err(client_error)?;
    let i = info.clone();
    blocking(move || Ok(c.store.mail_swarm_set_info(&name, &i)?)).await?;
    Ok(info)
}

#[tauri::command]
#[specta::specta]
pub async fn mail_swarm_remove(core: CoreState<'_>, name: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || mail::swarm_remove(&c.store, &c.data_dir, &name).map_err(swarm_error)).await
}

#[derive(Deserialize, specta::Type)]
pub struct SendInput {
    pub swarm: String,
    pub body: String,
    pub subject: Option<String>,
    pub task_id: Option<String>,
    pub entrypoint: Option<String>,
}

/// Sends a message and follows its task; every event is stored, then pushed to the window
/// as `mail://event`.
#[tauri::command]
#[specta::specta]
pub async fn mail_send<R: Runtime>(app: AppHandle<R>, core: CoreState<'_>, input: SendInput) -> Result<Outcome> {
    let c = core.inner().clone();
    let client = client_for(&c, &input.swarm).await?;
    let blank = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let m = SendMessage { body: input.body, subject: blank(input.subject), task_id: blank(input.task_id), entrypoint: blank(input.entrypoint) };
    mail::send(c.store.clone(), &client, &input.swarm, &m, |e: &LiveEvent| {
        let _ = tauri_specta::Event::emit(&crate::events::MailLive(e.clone()), &app);
    })
    .await
    .map_err(|e| CommandError::coded(e.code(), e.to_string()))
}

#[derive(Deserialize, specta::Type)]
pub struct InterswarmInput {
    pub swarm: String,
    pub body: String,
    /// `agent@swarm` addresses.
    pub targets: Vec<String>,
    pub subject: Option<String>,
    pub task_id: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn mail_interswarm(core: CoreState<'_>, input: InterswarmInput) -> Result<MailMessageRow> {
    let c = core.inner().clone();
    let client = client_for(&c, &input.swarm).await?;
    let (sw, name) = (c.clone(), input.swarm.clone());
    let token = blocking(move || {
        let row = sw.store.mail_swarm(&name)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no swarm {name}")))?;
        mail::swarm_token(&sw.data_dir, &row).map_err(swarm_error)
    })
    .await?;
    let token = token.ok_or_else(|| CommandError::new(Code::NoToken, "interswarm messages need the swarm's token; add the swarm again with one"))?;
    let targets: Vec<String> = input.targets.iter().map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect();
    if targets.is_empty() || targets.iter().any(|t| !t.contains('@')) {
        return Err(CommandError::new(Code::Invalid, "name each target as agent@swarm"));
    }
    let msg_type = (targets.len() > 1).then(|| "broadcast".to_string());
    let req = InterswarmSend {
        user_token: token,
        body: input.body,
        targets,
        subject: input.subject,
        msg_type,
        task_id: input.task_id.filter(|t| !t.trim().is_empty()),
    };
    let (msg, _) = client.interswarm(&req).await.map_err(client_error)?;
    let row = mail::row_of(&msg);
    let (r, swarm) = (row.clone(), input.swarm);
    blocking(move || {
        c.store.mail_task_open(&NewMailTask {
            task_id: r.task_id.clone(),
            swarm: Some(swarm),
            source: "live".into(),
            subject: r.subject.clone(),
            state: "running".into(),
            at: now(),
        })?;
        c.store.mail_message_add(&r, &now())?;
        Ok(())
    })
    .await?;
    Ok(row)
}

#[tauri::command]
#[specta::specta]
pub async fn mail_tasks(core: CoreState<'_>, query: Option<String>) -> Result<Vec<MailTaskRow>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.mail_tasks(query.as_deref(), 500)?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn mail_task(core: CoreState<'_>, task_id: String) -> Result<MailTaskDetail> {
    let c = core.inner().clone();
    blocking(move || c.store.mail_task(&task_id)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no task {task_id}")))).await
}

/// Imports a task log the user picked or dropped.
#[tauri::command]
#[specta::specta]
pub async fn mail_import(core: CoreState<'_>, grants: tauri::State<'_, crate::grants::Grants>, path: PathBuf) -> Result<ImportReport> {
    grants.check(crate::grants::Purpose::MailLog, &path)?;
    let c = core.inner().clone();
    blocking(move || mail::import_file(&c.store, &path, true).map_err(|e| CommandError::coded(e.code(), e.to_string()))).await
}
