//! A2A agents the user lets in: by a token the user gives them (the agent's key in the
//! registry is the token's hash; the token is shown once), or, for an agent that knocked
//! with a client certificate, by the consent prompt like any stranger.

use crate::Context;
use chrono::{DateTime, Utc};
use gatehouse_store::{Policy, Store, TrustEntry};

use crate::doors::a2a;

/// A token issued, and the contact it lets in.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Issued {
    /// Shown once: give it to the agent. Only its hash is kept.
    pub token: String,
    pub entry: TrustEntry,
}

/// Issues a token for a new A2A agent named `name`, trusted for `scopes` (none given:
/// the scope a message asks for when it names none). Audited as any trust added.
pub fn token_issue(ctx: &Context, name: &str, scopes: &[String], now: DateTime<Utc>) -> crate::Result<Issued> {
    let (token, id) = a2a::new_token();
    let scopes = if scopes.is_empty() { vec![a2a::DEFAULT_SCOPE.to_string()] } else { scopes.to_vec() };
    let entry = TrustEntry {
        door: a2a::DOOR.into(),
        facts: Default::default(),
        public_key: id,
        name: name.trim().to_string(),
        added_at: crate::doors::gate::consent::now_string(now),
        policy: Policy { allowed_scopes: scopes, ..Policy::default() },
    };
    crate::trust::add(ctx, &entry, now)?;
    Ok(Issued { token, entry })
}

/// An A2A agent the user added, as both faces show it.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AgentRow {
    pub name: String,
    pub url: String,
    pub endpoint: String,
    /// What its card calls it: its own claim.
    pub card_name: String,
    pub streaming: bool,
    pub has_token: bool,
}

fn row(data_dir: &std::path::Path, a: a2a::client::Agent) -> AgentRow {
    let has_token = gatehouse_keys::Secrets::open(data_dir).ok().and_then(|s| s.get(&a2a::executor::token_name(&a)).ok().flatten()).is_some();
    AgentRow { name: a.name, url: a.url, endpoint: a.endpoint, card_name: a.card_name, streaming: a.streaming, has_token }
}

/// Adds the A2A agent at `url` (its card is read now; an agent whose card names no
/// endpoint on that address is not added) under `name`, with the bearer token it gave
/// the user, kept in the keychain for that address only. Replaces an agent of that name.
pub async fn agent_add(ctx: &Context, name: &str, url: &str, token: Option<String>) -> crate::Result<AgentRow> {
    let data_dir: &std::path::Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(crate::CommandError::new(crate::Code::Invalid, "an agent's name is 1 to 64 characters"));
    }
    let agent = a2a::client::discover(name, url).await.map_err(|e| crate::CommandError::new(e.code(), e.to_string()))?;
    let secrets = gatehouse_keys::Secrets::open(data_dir)?;
    let mut all = a2a::executor::agents(&store)?;
    if let Some(old) = all.iter().find(|a| a.name == name) {
        secrets.delete(&a2a::executor::token_name(old))?;
    }
    all.retain(|a| a.name != name);
    if let Some(t) = token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        secrets.put(&a2a::executor::token_name(&agent), t)?;
    }
    all.push(agent.clone());
    store.set_setting(a2a::executor::AGENTS_SETTING, &all)?;
    store.audit(
        "a2a.agent_add",
        Some(name),
        &serde_json::json!({"url": agent.url, "endpoint": agent.endpoint, "token": token.is_some()}),
        &crate::doors::gate::consent::now_string(chrono::Utc::now()),
    )?;
    Ok(row(data_dir, agent))
}

pub fn agent_list(ctx: &Context) -> crate::Result<Vec<AgentRow>> {
    let data_dir: &std::path::Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    Ok(a2a::executor::agents(store)?.into_iter().map(|a| row(data_dir, a)).collect())
}

/// Forgets an agent and its token.
pub fn agent_remove(ctx: &Context, name: &str) -> crate::Result<()> {
    let data_dir: &std::path::Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let mut all = a2a::executor::agents(store)?;
    let Some(old) = all.iter().find(|a| a.name == name).cloned() else {
        return Err(crate::CommandError::new(crate::Code::NotFound, format!("no A2A agent {name:?}")));
    };
    gatehouse_keys::Secrets::open(data_dir)?.delete(&a2a::executor::token_name(&old))?;
    all.retain(|a| a.name != name);
    store.set_setting(a2a::executor::AGENTS_SETTING, &all)?;
    store.audit("a2a.agent_remove", Some(name), &serde_json::json!({"url": old.url}), &crate::doors::gate::consent::now_string(chrono::Utc::now()))?;
    Ok(())
}

/// Sends `text` to an agent the user added and waits for its answer (the CLI's `a2a send`).
pub async fn agent_send(ctx: &Context, name: &str, text: &str) -> crate::Result<a2a::client::Answer> {
    let data_dir: &std::path::Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let agent = a2a::executor::agents(store)?
        .into_iter()
        .find(|a| a.name == name)
        .ok_or_else(|| crate::CommandError::new(crate::Code::NotFound, format!("no A2A agent {name:?}: add it with `gatehouse a2a agent add`")))?;
    let token = gatehouse_keys::Secrets::open(data_dir)?.get(&a2a::executor::token_name(&agent))?;
    a2a::client::send(&agent, token.as_deref(), text, |_| {}).await.map_err(|e| crate::CommandError::new(e.code(), e.to_string()))
}

/// What the agent at `url` says of itself (its card), read now and kept nowhere.
pub async fn card(url: &str) -> crate::Result<a2a::client::Agent> {
    a2a::client::discover("", url).await.map_err(|e| crate::CommandError::new(e.code(), e.to_string()))
}

/// The tasks A2A agents sent here, newest first (their ids are the receipts' ids).
pub fn tasks(ctx: &Context, limit: u32) -> crate::Result<Vec<gatehouse_store::InboxItem>> {
    let filter = gatehouse_store::InboxFilter { transport: Some(a2a::DOOR.into()), limit: Some(limit), ..Default::default() };
    crate::history::inbox(ctx, &filter)
}

/// Whether A2A agents on this computer may call over plain HTTP (the inbox's loopback
/// listener); off unless the user turned it on.
pub fn plain_loopback(ctx: &Context) -> crate::Result<bool> {
    let store: &Store = &ctx.store;
    Ok(a2a::plain_loopback_allowed(store)?)
}

/// Lets A2A agents on this computer call over plain HTTP, or stops it; applies to the
/// next request, audited. A token the user issued is still needed.
pub fn set_plain_loopback(ctx: &Context, on: bool) -> crate::Result<bool> {
    let store: &Store = &ctx.store;
    store.set_setting(a2a::PLAIN_LOOPBACK_SETTING, &on)?;
    store.audit("a2a.plain_loopback", None, &serde_json::json!({"on": on}), &crate::doors::gate::consent::now_string(chrono::Utc::now()))?;
    Ok(on)
}
