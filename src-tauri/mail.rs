//! MAIL in the window: swarm connections, 1.3 or 2.0 (token or login in the keychain) with what each says about
//! itself, tasks sent and followed live (`mail://event`), the task list with search, a
//! task's timeline, interswarm messages, and task logs imported from files. Each command
//! is one call into gatehouse_app::swarms, which the CLI calls too.

use std::path::PathBuf;

use gatehouse_app::swarms::{self, ImportReport, InterswarmInput, LiveEvent, MailMessageRow, MailTaskDetail, MailTaskRow, SendInput, SwarmInput, SwarmView};
use gatehouse_mail::client::Outcome;
use tauri::{AppHandle, Runtime};

use crate::commands::{blocking, CommandError, ShellState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn mail_swarms(shell: ShellState<'_>) -> Result<Vec<SwarmView>> {
    let c = shell.inner().clone();
    blocking(move || swarms::list(&c)).await
}

/// Connects to a swarm: what it says about itself is fetched first; a token it refuses is
/// not kept.
#[tauri::command]
#[specta::specta]
pub async fn mail_swarm_add(shell: ShellState<'_>, input: SwarmInput) -> Result<SwarmView> {
    let c = shell.inner().clone();
    Ok(swarms::add(&c, input).await?.view)
}

/// Asks the swarm again: metadata, health, identity and role, status, known swarms.
#[tauri::command]
#[specta::specta]
pub async fn mail_swarm_refresh(shell: ShellState<'_>, name: String) -> Result<serde_json::Value> {
    let c = shell.inner().clone();
    swarms::refresh(&c, &name).await
}

#[tauri::command]
#[specta::specta]
pub async fn mail_swarm_remove(shell: ShellState<'_>, name: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || swarms::remove(&c, &name)).await
}

/// Sends a message and follows its task; every event is stored, then pushed to the window
/// as `mail://event`.
#[tauri::command]
#[specta::specta]
pub async fn mail_send<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, input: SendInput) -> Result<Outcome> {
    let c = shell.inner().clone();
    swarms::send(&c, input, |e: &LiveEvent| {
        let _ = tauri_specta::Event::emit(&crate::events::MailLive(e.clone()), &app);
    })
    .await
}

/// Picks up what arrived on a MAIL 2.0 server since the last look (the window asks while
/// the Tasks view is open); new messages are pushed as `mail://event` too.
#[tauri::command]
#[specta::specta]
pub async fn mail_sync<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, name: String) -> Result<u32> {
    let c = shell.inner().clone();
    let n = swarms::sync(&c, &name, |e: &LiveEvent| {
        let _ = tauri_specta::Event::emit(&crate::events::MailLive(e.clone()), &app);
    })
    .await?;
    Ok(n.try_into().unwrap_or(u32::MAX))
}

#[tauri::command]
#[specta::specta]
pub async fn mail_interswarm(shell: ShellState<'_>, input: InterswarmInput) -> Result<MailMessageRow> {
    let c = shell.inner().clone();
    swarms::interswarm(&c, input).await
}

#[tauri::command]
#[specta::specta]
pub async fn mail_tasks(shell: ShellState<'_>, query: Option<String>) -> Result<Vec<MailTaskRow>> {
    let c = shell.inner().clone();
    blocking(move || swarms::tasks(&c, query.as_deref(), 500)).await
}

#[tauri::command]
#[specta::specta]
pub async fn mail_task(shell: ShellState<'_>, task_id: String) -> Result<MailTaskDetail> {
    let c = shell.inner().clone();
    blocking(move || swarms::task(&c, &task_id)).await
}

/// Imports a task log the user picked or dropped.
#[tauri::command]
#[specta::specta]
pub async fn mail_import(shell: ShellState<'_>, grants: tauri::State<'_, crate::grants::Grants>, path: PathBuf) -> Result<ImportReport> {
    grants.check(crate::grants::Purpose::MailLog, &path)?;
    let c = shell.inner().clone();
    blocking(move || swarms::import(&c, &path)).await
}
