//! IntentWeb in the window: sites added by origin (their manifest shown as cards),
//! conversations started and answered (signed with the identity key), first-contact keys
//! pinned (each one call into gatehouse_app::sites, which the CLI calls too), and links
//! from a site's answers opened in the browser only when clicked.

use gatehouse_app::sites::{self, ConversationItem, ConversationView, IwSiteRow, ReplyInput, StartInput, Turn};
use tauri::{AppHandle, Runtime};
use tauri_plugin_opener::OpenerExt;

use crate::commands::{blocking, Code, CommandError, ShellState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn iw_sites(shell: ShellState<'_>) -> Result<Vec<IwSiteRow>> {
    let c = shell.inner().clone();
    blocking(move || sites::list(&c)).await
}

/// Adds (or refreshes) a site: its manifest is fetched and checked first.
#[tauri::command]
#[specta::specta]
pub async fn iw_site_add(shell: ShellState<'_>, origin: String) -> Result<IwSiteRow> {
    sites::add(&shell, &origin).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_site_remove(shell: ShellState<'_>, origin: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || sites::remove(&c, &origin)).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_start(shell: ShellState<'_>, input: StartInput) -> Result<Turn> {
    sites::start(&shell, input).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_reply(shell: ShellState<'_>, input: ReplyInput) -> Result<Turn> {
    sites::reply(&shell, input).await
}

/// Pins the key a site signed its first answer with.
#[tauri::command]
#[specta::specta]
pub async fn iw_pin(shell: ShellState<'_>, origin: String, kid: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || sites::pin(&c, &origin, &kid)).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_conversations(shell: ShellState<'_>) -> Result<Vec<ConversationItem>> {
    let c = shell.inner().clone();
    blocking(move || sites::conversations(&c, 500)).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_conversation(shell: ShellState<'_>, interaction_id: String) -> Result<ConversationView> {
    let c = shell.inner().clone();
    blocking(move || sites::conversation(&c, &interaction_id)).await
}

/// Opens a link from a site's answer in the system browser, after the user clicked it and
/// confirmed. Only http and https.
#[tauri::command]
#[specta::specta]
pub async fn iw_open_link<R: Runtime>(app: AppHandle<R>, url: String) -> Result<()> {
    let u = url::Url::parse(&url).map_err(|e| CommandError::new(Code::Invalid, format!("{url}: {e}")))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(CommandError::new(Code::Invalid, format!("{url}: only http and https links are opened")));
    }
    app.opener().open_url(u.as_str(), None::<&str>).map_err(|e| CommandError::new(Code::Open, e.to_string()))
}
