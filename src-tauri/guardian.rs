//! The ASOP guardian in the window: the answer to a step waiting for the user (listed with
//! everything else that waits, `consent_list`), the rules, and each session's timeline. Each command is one call
//! into gatehouse_app::guardian, which the CLI calls too.

use gatehouse_app::guardian::{self, AsopRuleRow, AsopStepRow, Guardian, RuleInput, SessionItem, UserAnswer};
use tauri::{AppHandle, Runtime};

use crate::commands::{blocking, CommandError, ShellState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn asop_answer<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, row: i64, answer: UserAnswer) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || guardian::answer(&c, c.gate().door::<Guardian>().as_deref(), row, answer)).await?;
    crate::tray::refresh(&app);
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn asop_rules(shell: ShellState<'_>) -> Result<Vec<AsopRuleRow>> {
    let c = shell.inner().clone();
    blocking(move || guardian::rules(&c)).await
}

/// Adds a rule after checking it (a usable pattern for modify and for `matches`).
#[tauri::command]
#[specta::specta]
pub async fn asop_rule_add(shell: ShellState<'_>, input: RuleInput) -> Result<AsopRuleRow> {
    let c = shell.inner().clone();
    blocking(move || guardian::rule_add(&c, input)).await
}

#[tauri::command]
#[specta::specta]
pub async fn asop_rule_remove(shell: ShellState<'_>, id: i64) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || guardian::rule_remove(&c, id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn asop_sessions(shell: ShellState<'_>) -> Result<Vec<SessionItem>> {
    let c = shell.inner().clone();
    blocking(move || guardian::sessions(&c, 200)).await
}

#[tauri::command]
#[specta::specta]
pub async fn asop_session(shell: ShellState<'_>, session_id: String) -> Result<Vec<AsopStepRow>> {
    let c = shell.inner().clone();
    blocking(move || guardian::session(&c, &session_id)).await
}
