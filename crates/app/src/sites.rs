//! IntentWeb sites the user talks to: added by origin (their manifest fetched and checked
//! first), removed, conversations started and answered (signed with the identity key),
//! and a site's first-contact key pinned. Every change to what is kept is audited.

use crate::Context;

use crate::doors::intent;
use gatehouse_intentweb::FlowType;
use gatehouse_store::intentweb::IwConversationRow;
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};

use crate::{blocking, now, Code, CommandError, Result};

pub use crate::doors::intent::{ConversationView, Turn};
pub use gatehouse_store::intentweb::{IwMessageRow, IwSiteRow};

pub fn list(ctx: &Context) -> Result<Vec<IwSiteRow>> {
    let store: &Store = &ctx.store;
    Ok(store.iw_sites()?)
}

/// Adds (or refreshes) a site: its manifest is fetched and checked first.
pub async fn add(ctx: &Context, origin: &str) -> Result<IwSiteRow> {
    let store = ctx.store.clone();
    let site = intent::add_site(store.clone(), origin).await?;
    let s = site.clone();
    blocking(move || Ok(store.audit("intentweb.site_add", None, &serde_json::json!({"origin": s.origin, "company": s.company}), &now())?)).await?;
    Ok(site)
}

/// Forgets a site (its conversations stay); audited.
pub fn remove(ctx: &Context, origin: &str) -> Result<()> {
    let store: &Store = &ctx.store;
    if !store.iw_site_remove(origin)? {
        return Err(CommandError::new(Code::NotFound, format!("no site {origin}")));
    }
    store.audit("intentweb.site_remove", None, &serde_json::json!({"origin": origin}), &now())?;
    Ok(())
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct StartInput {
    pub origin: String,
    pub capability: Option<String>,
    pub message: String,
}

/// Starts a conversation: an `intent_request` signed with `key`.
pub async fn start(ctx: &Context, input: StartInput) -> Result<Turn> {
    let key = &ctx.key;
    let store = ctx.store.clone();
    let message = input.message.trim();
    if message.is_empty() {
        return Err(CommandError::new(Code::Invalid, "say what you would like to do"));
    }
    let capability = input.capability.as_deref().map(str::trim).filter(|c| !c.is_empty());
    Ok(intent::start(store, key, &input.origin, capability, message, Some("en")).await?)
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ReplyInput {
    pub interaction_id: String,
    pub message: String,
    /// `information_response` (default) or `clarification_request`.
    pub flow_type: Option<FlowType>,
}

/// Answers the site in an open conversation (what it asked for, or a question back).
pub async fn reply(ctx: &Context, input: ReplyInput) -> Result<Turn> {
    let key = &ctx.key;
    let store = ctx.store.clone();
    let message = input.message.trim();
    if message.is_empty() {
        return Err(CommandError::new(Code::Invalid, "the answer is empty"));
    }
    let flow = input.flow_type.unwrap_or(FlowType::InformationResponse);
    Ok(intent::reply(store, key, &input.interaction_id, flow, message, Some("en")).await?)
}

/// Pins the key a site signed its first answer with (audited by the door).
pub fn pin(ctx: &Context, origin: &str, kid: &str) -> Result<()> {
    let store: &Store = &ctx.store;
    Ok(intent::pin(store, origin, kid)?)
}

/// A conversation in the list, with the company it is with.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConversationItem {
    #[serde(flatten)]
    pub conversation: IwConversationRow,
    pub company: Option<String>,
}

pub fn conversations(ctx: &Context, limit: usize) -> Result<Vec<ConversationItem>> {
    let store: &Store = &ctx.store;
    let sites = store.iw_sites()?;
    Ok(store
        .iw_conversations(limit)?
        .into_iter()
        .map(|conv| ConversationItem { company: sites.iter().find(|s| s.origin == conv.origin).map(|s| s.company.clone()), conversation: conv })
        .collect())
}

pub fn conversation(ctx: &Context, interaction_id: &str) -> Result<ConversationView> {
    let store: &Store = &ctx.store;
    intent::view(store, interaction_id)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no conversation {interaction_id}")))
}
