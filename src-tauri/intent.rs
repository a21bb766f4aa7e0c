//! IntentWeb in the window: sites added by origin (their manifest shown as cards),
//! conversations started and answered (signed with the identity key), first-contact keys
//! pinned (each one call into gatehouse_app::sites, which the CLI calls too), and links
//! from a site's answers opened in the browser only when clicked.

use gatehouse_app::sites::{self, ConversationItem, ConversationView, IwSiteRow, ReplyInput, StartInput, Turn};
use tauri::{AppHandle, Runtime};
use tauri_plugin_opener::OpenerExt;

use crate::commands::{blocking, Code, CommandError, CoreState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn iw_sites(core: CoreState<'_>) -> Result<Vec<IwSiteRow>> {
    let c = core.inner().clone();
    blocking(move || sites::list(&c.store)).await
}

/// Adds (or refreshes) a site: its manifest is fetched and checked first.
#[tauri::command]
#[specta::specta]
pub async fn iw_site_add(core: CoreState<'_>, origin: String) -> Result<IwSiteRow> {
    sites::add(core.store.clone(), &origin).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_site_remove(core: CoreState<'_>, origin: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || sites::remove(&c.store, &origin)).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_start(core: CoreState<'_>, input: StartInput) -> Result<Turn> {
    sites::start(core.store.clone(), &core.key, input).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_reply(core: CoreState<'_>, input: ReplyInput) -> Result<Turn> {
    sites::reply(core.store.clone(), &core.key, input).await
}

/// Pins the key a site signed its first answer with.
#[tauri::command]
#[specta::specta]
pub async fn iw_pin(core: CoreState<'_>, origin: String, kid: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || sites::pin(&c.store, &origin, &kid)).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_conversations(core: CoreState<'_>) -> Result<Vec<ConversationItem>> {
    let c = core.inner().clone();
    blocking(move || sites::conversations(&c.store, 500)).await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_conversation(core: CoreState<'_>, interaction_id: String) -> Result<ConversationView> {
    let c = core.inner().clone();
    blocking(move || sites::conversation(&c.store, &interaction_id)).await
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
