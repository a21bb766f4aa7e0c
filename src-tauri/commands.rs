//! The commands the window may call. Each is one call into the application layer
//! (`gatehouse-app`, shared with the CLI); errors cross the boundary as `{code, message}`.

use std::path::PathBuf;

use gatehouse_app::consent::{ConsentItem, ConsentTarget, Decision, DecisionOutcome, Lasting};
use gatehouse_app::executors::ExecutorConfig;
use gatehouse_app::history::{BlockedSender, InboxFilter, InboxItem};
use gatehouse_app::replies::ReplyRow;
use gatehouse_app::settings::Retention;
use serde::Serialize;
use tauri::{AppHandle, Runtime};

use crate::shell::{DesktopSettings, InboxStatus};
pub use gatehouse_app::{Code, CommandError};

// What every command module shares lives with the shell (grants and contacts use it too,
// and this module uses them).
pub(crate) use crate::shell::{blocking, CommandResult as Result, ShellState};

#[derive(Serialize, specta::Type)]
pub struct AppInfo {
    pub version: String,
    pub data_dir: String,
    pub public_key: String,
    pub fingerprint: String,
    pub keystore: String,
    pub status: InboxStatus,
    pub settings: DesktopSettings,
    pub waiting: usize,
    /// Refusals and knocks a flood brought beyond what is kept per minute: only counted.
    pub unkept: gatehouse_app::serve::Unkept,
    /// The welcome is still to be shown (first run).
    pub welcome: bool,
}

pub use gatehouse_app::trust::fingerprint;

#[tauri::command]
#[specta::specta]
pub async fn app_info(shell: ShellState<'_>) -> Result<AppInfo> {
    let c = shell.inner().clone();
    blocking(move || {
        Ok(AppInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            data_dir: c.data_dir.display().to_string(),
            fingerprint: fingerprint(&c.public_key),
            public_key: c.public_key.clone(),
            keystore: c.keystore.to_string(),
            status: c.status(),
            settings: DesktopSettings::load(&c),
            waiting: gatehouse_app::consent::waiting_count(&c)?,
            unkept: c.gate().unkept(),
            welcome: !gatehouse_app::first_run::done(&c)?,
        })
    })
    .await
}

/// Sends the user a sample envelope through their own inbox (the first run's tour).
#[tauri::command]
#[specta::specta]
pub async fn first_run_sample(shell: ShellState<'_>) -> Result<String> {
    let c = shell.inner().clone();
    let url = c
        .status()
        .listening
        .ok_or_else(|| CommandError::new(Code::Unreachable, "your inbox is not listening (paused, or its port is taken): see the top of the window"))?;
    gatehouse_app::first_run::send_sample(&c, &url, &c.public_key).await
}

/// The welcome is not shown again.
#[tauri::command]
#[specta::specta]
pub async fn first_run_finish(shell: ShellState<'_>) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::first_run::finish(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn inbox_list(shell: ShellState<'_>, filter: InboxFilter) -> Result<Vec<InboxItem>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::history::inbox(&c, &filter)).await
}

pub use gatehouse_app::replies::{ConversationMessage, Detail};

#[tauri::command]
#[specta::specta]
pub async fn inbox_detail(shell: ShellState<'_>, receipt_id: String) -> Result<Detail> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::replies::detail(&c, &receipt_id)).await
}

/// Sets a risk flag aside on a message (an envelope id or a UAMP stream id).
#[tauri::command]
#[specta::specta]
pub async fn risk_dismiss(shell: ShellState<'_>, message_id: String, kind: String, start: u32) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::risk::dismiss(&c, &message_id, &kind, start)).await
}

#[tauri::command]
#[specta::specta]
pub async fn conversation(shell: ShellState<'_>, conversation_id: String) -> Result<Vec<ConversationMessage>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::replies::conversation(&c, &conversation_id)).await
}

pub use gatehouse_app::trust::{TrustInput, TrustRow};

#[tauri::command]
#[specta::specta]
pub async fn trust_list(shell: ShellState<'_>) -> Result<Vec<TrustRow>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::trust::list(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn quiet_hours_get(shell: ShellState<'_>) -> Result<gatehouse_app::quiet::QuietState> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::quiet::state(&c, gatehouse_app::clock::now())).await
}

/// Sets quiet hours (`null`: off).
#[tauri::command]
#[specta::specta]
pub async fn quiet_hours_set(shell: ShellState<'_>, hours: Option<gatehouse_app::quiet::QuietHours>) -> Result<gatehouse_app::quiet::QuietState> {
    let c = shell.inner().clone();
    blocking(move || {
        gatehouse_app::quiet::set(&c, hours)?;
        gatehouse_app::quiet::state(&c, gatehouse_app::clock::now())
    })
    .await
}

/// Scopes granted for a while, ending soonest first.
#[tauri::command]
#[specta::specta]
pub async fn trust_timed_grants(shell: ShellState<'_>) -> Result<Vec<gatehouse_app::trust::TimedGrant>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::trust::timed_grants(&c, gatehouse_app::clock::now())).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_add(shell: ShellState<'_>, input: TrustInput) -> Result<()> {
    gatehouse_app::trust::add_input(&shell, input).await.map(|_| ())
}

#[tauri::command]
#[specta::specta]
pub async fn trust_update(shell: ShellState<'_>, input: TrustInput) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::trust::update(&c, &input.public_key, &input.name, &input.policy, input.epp.as_ref(), chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_remove(shell: ShellState<'_>, public_key: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::trust::remove(&c, &public_key, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_block(shell: ShellState<'_>, public_key: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::trust::block(&c, &public_key, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_unblock(shell: ShellState<'_>, public_key: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::trust::unblock(&c, &public_key, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn blocked_list(shell: ShellState<'_>) -> Result<Vec<BlockedSender>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::history::blocked(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn consent_list(shell: ShellState<'_>) -> Result<Vec<ConsentItem>> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::consent::pending(&c)?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn consent_decide<R: Runtime>(
    app: AppHandle<R>,
    shell: ShellState<'_>,
    target: ConsentTarget,
    decision: Decision,
    lasting: Option<Lasting>,
    name: Option<String>,
) -> Result<DecisionOutcome> {
    let out = gatehouse_app::consent::decide_naming(shell.gate(), target, decision, lasting.unwrap_or_default(), name).await?;
    crate::tray::refresh(&app);
    Ok(out)
}

#[tauri::command]
#[specta::specta]
pub async fn audit_list(shell: ShellState<'_>, query: gatehouse_app::history::AuditQuery) -> Result<gatehouse_app::history::AuditPage> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::history::audit(&c, &query)).await
}

/// Checks the audit log against this gate's key (`gatehouse audit verify`).
#[tauri::command]
#[specta::specta]
pub async fn audit_verify(shell: ShellState<'_>) -> Result<gatehouse_app::audit::AuditVerdict> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::audit::verify_here(&c.ctx, None)).await
}

/// The gate's deciding state against its seals: rows changed outside Gatehouse (shown
/// under Waiting for you).
#[tauri::command]
#[specta::specta]
pub async fn state_check(shell: ShellState<'_>) -> Result<gatehouse_app::audit::StateReport> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::audit::state_check(&c.ctx)).await
}

#[tauri::command]
#[specta::specta]
pub async fn settings_set(shell: ShellState<'_>, grants: tauri::State<'_, crate::grants::Grants>, settings: DesktopSettings) -> Result<InboxStatus> {
    let c = shell.inner().clone();
    // The window's path grants, held in this process: asked now, used if the folder changed.
    let may_watch = grants.check(crate::grants::Purpose::WatchFolder, &settings.watch_dir);
    let s = c.clone();
    blocking(move || gatehouse_app::settings::set_desktop(&s, &settings, |_| may_watch)).await?;
    c.start().await;
    Ok(c.status())
}

#[tauri::command]
#[specta::specta]
pub async fn retention_get(shell: ShellState<'_>) -> Result<Retention> {
    let c = shell.inner().clone();
    blocking(move || Ok(gatehouse_app::settings::retention(&c))).await
}

/// Whether a sender the user trusts, writing about a scope it is not allowed, asks them.
#[tauri::command]
#[specta::specta]
pub async fn ask_new_scopes_get(shell: ShellState<'_>) -> Result<bool> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::settings::ask_new_scopes(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn ask_new_scopes_set(shell: ShellState<'_>, ask: bool) -> Result<bool> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::settings::set_ask_new_scopes(&c, ask)).await
}

/// Applied by the inbox's next clean-up (every 10 minutes), not at once.
#[tauri::command]
#[specta::specta]
pub async fn retention_set(shell: ShellState<'_>, retention: Retention) -> Result<Retention> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::settings::set_retention(&c, &retention)).await
}

#[tauri::command]
#[specta::specta]
pub async fn inbox_pause<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, paused: bool) -> Result<InboxStatus> {
    let c = shell.inner().clone();
    if paused {
        c.pause().await;
    } else {
        c.start().await;
    }
    crate::tray::refresh(&app);
    Ok(c.status())
}

#[tauri::command]
#[specta::specta]
pub async fn executors_get(shell: ShellState<'_>) -> Result<ExecutorConfig> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::executors::get(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn executors_set<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, config: ExecutorConfig) -> Result<()> {
    // A program to run, or a folder to write into, is confirmed by the user in a native
    // dialog the page cannot answer: the page may only propose it.
    gatehouse_app::executors::set(&shell, config, |asks| async move { crate::grants::confirm(&app, &asks).await }).await
}

/// The public key as a QR code (SVG text; rendered as an image, never as markup).
#[tauri::command]
#[specta::specta]
pub async fn identity_qr(shell: ShellState<'_>) -> Result<String> {
    // The QR holds the share text (key and address), which another Gatehouse pastes to
    // verify this key.
    let c = shell.inner().clone();
    blocking(move || Ok(crate::contacts::share_of(&c)?.qr_svg)).await
}

pub use gatehouse_app::export::ExportKind;

/// Writes every receipt or the whole audit log as JSON to a path the user chose.
#[tauri::command]
#[specta::specta]
pub async fn export_json(shell: ShellState<'_>, grants: tauri::State<'_, crate::grants::Grants>, kind: ExportKind, path: PathBuf) -> Result<usize> {
    grants.check(crate::grants::Purpose::Export, &path)?;
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::export::write(&c, kind, &path)).await
}

/// Answers to the sender of an envelope: drafts, sent and failed.
#[tauri::command]
#[specta::specta]
pub async fn replies_for(shell: ShellState<'_>, envelope_row: i64) -> Result<Vec<ReplyRow>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::history::replies_for(&c, envelope_row)).await
}

/// Sends a reply with the text the user approved (edited or not), signed by this inbox.
#[tauri::command]
#[specta::specta]
pub async fn reply_send(shell: ShellState<'_>, id: i64, text: String) -> Result<ReplyRow> {
    gatehouse_app::replies::send(&shell, id, &text).await
}

/// Runs a failed executor again (the model was unreachable, the swarm refused its token…).
#[tauri::command]
#[specta::specta]
pub async fn executor_retry(shell: ShellState<'_>, envelope_row: i64) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::executors::retry(&c.gate(), envelope_row)).await
}
