//! IntentWeb in the window: sites added by origin (their manifest shown as cards),
//! conversations started and answered (signed with the identity key), first-contact keys
//! pinned, and links from a site's answers opened in the browser only when clicked.

use gatehouse_inbox::intent::{self, ConversationView, Turn};
use gatehouse_intentweb::FlowType;
use gatehouse_store::intentweb::{IwConversationRow, IwSiteRow};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};
use tauri_plugin_opener::OpenerExt;

use crate::commands::{blocking, Code, CommandError, CoreState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn iw_sites(core: CoreState<'_>) -> Result<Vec<IwSiteRow>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.iw_sites()?)).await
}

/// Adds (or refreshes) a site: its manifest is fetched and checked first.
#[tauri::command]
#[specta::specta]
pub async fn iw_site_add(core: CoreState<'_>, origin: String) -> Result<IwSiteRow> {
    let c = core.inner().clone();
    let site = intent::add_site(c.store.clone(), &origin).await?;
    let s = site.clone();
    blocking(move || {
        Ok(c.store.audit(
            "intentweb.site_add",
            None,
            &serde_json::json!({"origin": s.origin, "company": s.company}),
            &gatehouse_epp::utc_string(chrono::Utc::now()),
        )?)
    })
    .await?;
    Ok(site)
}

#[tauri::command]
#[specta::specta]
pub async fn iw_site_remove(core: CoreState<'_>, origin: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || {
        if !c.store.iw_site_remove(&origin)? {
            return Err(CommandError::new(Code::NotFound, format!("no site {origin}")));
        }
        Ok(())
    })
    .await
}

#[derive(Deserialize, specta::Type)]
pub struct StartInput {
    pub origin: String,
    pub capability: Option<String>,
    pub message: String,
}

#[tauri::command]
#[specta::specta]
pub async fn iw_start(core: CoreState<'_>, input: StartInput) -> Result<Turn> {
    let c = core.inner().clone();
    if input.message.trim().is_empty() {
        return Err(CommandError::new(Code::Invalid, "say what you would like to do"));
    }
    Ok(intent::start(c.store.clone(), &c.key, &input.origin, input.capability.as_deref(), input.message.trim(), Some("en")).await?)
}

#[derive(Deserialize, specta::Type)]
pub struct ReplyInput {
    pub interaction_id: String,
    pub message: String,
    /// `information_response` (default) or `clarification_request`.
    pub flow_type: Option<FlowType>,
}

#[tauri::command]
#[specta::specta]
pub async fn iw_reply(core: CoreState<'_>, input: ReplyInput) -> Result<Turn> {
    let c = core.inner().clone();
    if input.message.trim().is_empty() {
        return Err(CommandError::new(Code::Invalid, "the answer is empty"));
    }
    let flow = input.flow_type.unwrap_or(FlowType::InformationResponse);
    Ok(intent::reply(c.store.clone(), &c.key, &input.interaction_id, flow, input.message.trim(), Some("en")).await?)
}

/// Pins the key a site signed its first answer with.
#[tauri::command]
#[specta::specta]
pub async fn iw_pin(core: CoreState<'_>, origin: String, kid: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || Ok(intent::pin(&c.store, &origin, &kid)?)).await
}

#[derive(Serialize, specta::Type)]
pub struct ConversationItem {
    #[serde(flatten)]
    pub conversation: IwConversationRow,
    pub company: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn iw_conversations(core: CoreState<'_>) -> Result<Vec<ConversationItem>> {
    let c = core.inner().clone();
    blocking(move || {
        let sites = c.store.iw_sites()?;
        Ok(c.store
            .iw_conversations(500)?
            .into_iter()
            .map(|conv| ConversationItem { company: sites.iter().find(|s| s.origin == conv.origin).map(|s| s.company.clone()), conversation: conv })
            .collect())
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn iw_conversation(core: CoreState<'_>, interaction_id: String) -> Result<ConversationView> {
    let c = core.inner().clone();
    blocking(move || intent::view(&c.store, &interaction_id)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no conversation {interaction_id}"))))
        .await
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
