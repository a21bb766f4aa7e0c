//! IntentWeb conversations kept for the user: sites added by origin (manifest fetched and
//! checked), intents sent signed with the user's key, answers checked before they count
//! (interaction_id echoed, nonce fresh, attribution verified against the pinned site key),
//! and everything — refused answers included — stored with what was found.
//!
//! A site's key is pinned through the trust registry: on first contact its did:key knocks
//! like any unknown sender (it waits under "Waiting for you"), and the user pins it there
//! or from the conversation. Once pinned, answers signed by any other key are refused.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

use std::sync::Arc;

use ed25519_dalek::SigningKey;
use gatehouse_intentweb::attribution::{self, Verdict};
use gatehouse_intentweb::client::{self, ClientError};
use gatehouse_intentweb::conversation::{check_receive, check_send};
use gatehouse_intentweb::envelope::{Envelope, FlowType};
use gatehouse_intentweb::render;
use gatehouse_store::intentweb::{IwConversationRow, IwMessageRow, IwSiteRow};
use gatehouse_store::{Policy, Store, StoreError, TrustEntry};
use serde::Serialize;
use serde_json::json;

/// The scope a site's key is pinned for in the trust registry.
pub const SCOPE: &str = "intentweb";
/// This door's name, where it records what knocked at it.
pub const DOOR: &str = "intentweb";

#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Rule(String),
    #[error("{0}")]
    NotFound(String),
}

impl IntentError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            IntentError::Client(c) => c.code(),
            IntentError::Store(_) => gatehouse_code::Code::Store,
            IntentError::Rule(_) => gatehouse_code::Code::NotAllowed,
            IntentError::NotFound(_) => gatehouse_code::Code::NotFound,
        }
    }
}

fn now() -> String {
    gatehouse_gate::clock::utc_string(chrono::Utc::now())
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, StoreError> + Send + 'static) -> Result<T, IntentError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| IntentError::Rule(e.to_string()))?.map_err(IntentError::Store)
}

/// Fetches and checks a site's manifest, and keeps it (a refresh replaces it).
pub async fn add_site(store: Arc<Store>, origin: &str) -> Result<IwSiteRow, IntentError> {
    let origin = client::normalize_origin(origin)?;
    let (manifest, yaml) = client::fetch_manifest(&origin).await?;
    let row = IwSiteRow {
        origin: origin.clone(),
        company: manifest.company.clone(),
        manifest: serde_json::to_value(&manifest).unwrap_or_default(),
        yaml,
        last_updated: manifest.last_updated.clone(),
        fetched_at: now(),
        site_key: None,
    };
    let r = row.clone();
    blocking(move || {
        store.iw_site_put(&r)?;
        store.iw_site(&r.origin)
    })
    .await?
    .ok_or_else(|| IntentError::NotFound(format!("{origin} was not kept")))
}

/// The key the user pinned for `origin`, if it is still trusted.
fn pinned(store: &Store, origin: &str) -> Result<Option<String>, StoreError> {
    let Some(site) = store.iw_site(origin)? else { return Ok(None) };
    Ok(match site.site_key {
        Some(k) if pin_of(store, &k)? == Pin::Lasts => Some(k),
        _ => None,
    })
}

/// What the gate says of a site's key.
#[derive(Debug, PartialEq)]
enum Pin {
    /// Pinned, and the pin has not ended.
    Lasts,
    /// Not pinned, or pinned for a while that has ended: it asks, as on first contact.
    Ask,
    /// The user blocked or revoked it: its answers are refused, and it never asks.
    Refused(&'static str),
}

fn pin_of(store: &Store, kid: &str) -> Result<Pin, StoreError> {
    let view = store.admission(kid, "")?;
    Ok(match gatehouse_gate::standing(&view, SCOPE, gatehouse_gate::clock::now()) {
        gatehouse_gate::Verdict::Accept { held: false, .. } => Pin::Lasts,
        gatehouse_gate::Verdict::Refuse(gatehouse_gate::Refusal::Blocked) => Pin::Refused("you blocked"),
        gatehouse_gate::Verdict::Refuse(gatehouse_gate::Refusal::Revoked(_)) => Pin::Refused("you revoked"),
        // Held (its pin ended, or its key changed unverified), unknown, or trusted for
        // something else than being a site's key.
        _ => Pin::Ask,
    })
}

/// Pins `kid` as `origin`'s key: a trust entry named after the company, for [`SCOPE`].
pub fn pin(store: &Store, origin: &str, kid: &str) -> Result<(), IntentError> {
    let site = store.iw_site(origin)?.ok_or_else(|| IntentError::NotFound(format!("no site {origin}")))?;
    gatehouse_uamp::did::resolve_did_key(kid).map_err(|e| IntentError::Rule(format!("{kid} is not a did:key: {e}")))?;
    if store.trust_get(kid)?.is_none() {
        let policy = Policy { allowed_scopes: vec![SCOPE.into()], ..Policy::default() };
        store.trust_add(&TrustEntry {
            door: DOOR.into(),
            facts: Default::default(),
            public_key: kid.into(),
            name: site.company.clone(),
            added_at: now(),
            policy,
        })?;
    }
    store.pending_remove(kid)?;
    store.iw_site_pin(origin, Some(kid))?;
    store.audit("intentweb.pin", Some(kid), &json!({"origin": origin, "company": site.company}), &now())?;
    Ok(())
}

/// One exchange: what was sent and what came back (possibly refused, with why).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Turn {
    pub conversation: IwConversationRow,
    pub sent: IwMessageRow,
    pub received: IwMessageRow,
}

fn history(msgs: &[IwMessageRow]) -> Vec<FlowType> {
    msgs.iter().filter(|m| m.accepted).filter_map(|m| serde_json::from_value(json!(m.flow_type)).ok()).collect()
}

/// Starts an interaction with `origin`: an `intent_request` signed by `key`.
pub async fn start(
    store: Arc<Store>,
    key: &SigningKey,
    origin: &str,
    capability: Option<&str>,
    message: &str,
    locale: Option<&str>,
) -> Result<Turn, IntentError> {
    let origin = client::normalize_origin(origin)?;
    let s = store.clone();
    let o = origin.clone();
    let site = blocking(move || s.iw_site(&o)).await?.ok_or_else(|| IntentError::NotFound(format!("add {origin} first (its manifest is needed)")))?;
    let endpoint = site.manifest["contact"]["intent_endpoint"].as_str().unwrap_or_default().to_string();
    let interaction_id = format!("gh-{}", uuid::Uuid::now_v7());
    let at = now();
    let conv = IwConversationRow {
        interaction_id: interaction_id.clone(),
        origin: origin.clone(),
        endpoint,
        capability: capability.map(str::to_string),
        initial: message.to_string(),
        query_hash: attribution::query_hash(&interaction_id, message),
        state: "open".into(),
        status: None,
        external_id: None,
        created_at: at.clone(),
        updated_at: at,
    };
    let (s, c) = (store.clone(), conv.clone());
    blocking(move || s.iw_conversation_open(&c)).await?;
    exchange(store, key, &conv, FlowType::IntentRequest, message, locale).await
}

/// Answers the site in an open interaction: `information_response` (or a
/// `clarification_request` of the user's own).
pub async fn reply(
    store: Arc<Store>,
    key: &SigningKey,
    interaction_id: &str,
    flow: FlowType,
    message: &str,
    locale: Option<&str>,
) -> Result<Turn, IntentError> {
    let (s, id) = (store.clone(), interaction_id.to_string());
    let conv = blocking(move || s.iw_conversation(&id)).await?.ok_or_else(|| IntentError::NotFound(format!("no conversation {interaction_id}")))?;
    exchange(store, key, &conv, flow, message, locale).await
}

async fn exchange(
    store: Arc<Store>,
    key: &SigningKey,
    conv: &IwConversationRow,
    flow: FlowType,
    message: &str,
    locale: Option<&str>,
) -> Result<Turn, IntentError> {
    let (s, id) = (store.clone(), conv.interaction_id.clone());
    let msgs = blocking(move || s.iw_messages(&id)).await?;
    let past = history(&msgs);
    check_send(&past, flow).map_err(IntentError::Rule)?;
    let env = attribution::draft(flow, &conv.interaction_id, &conv.initial, message, locale, key, "ai_agent", &now());
    let sent_json = serde_json::to_value(&env).unwrap_or_default();
    // Kept before it leaves: what the user said is on record even if the site never answers.
    let (s, id, sj, m) = (store.clone(), conv.interaction_id.clone(), sent_json.clone(), message.to_string());
    let sent_row = blocking(move || s.iw_message_add(&id, "out", flow.as_str(), &m, None, &sj, None, None, true, &now())).await?;
    let (answer, raw) = client::post(&conv.origin, &conv.endpoint, &env).await?;
    let (s, c) = (store.clone(), conv.clone());
    let mut past = past;
    past.push(flow);
    blocking(move || receive(&s, &c, &past, &answer, raw)).await?;
    let (s, id) = (store.clone(), conv.interaction_id.clone());
    let (conversation, msgs) = blocking(move || Ok((s.iw_conversation(&id)?, s.iw_messages(&id)?))).await?;
    let conversation = conversation.ok_or_else(|| IntentError::NotFound("the conversation vanished".into()))?;
    let sent = msgs.iter().find(|m| m.row == sent_row).cloned().ok_or_else(|| IntentError::NotFound("the sent message vanished".into()))?;
    let received = msgs.last().cloned().ok_or_else(|| IntentError::NotFound("no answer was kept".into()))?;
    Ok(Turn { conversation, sent, received })
}

/// Checks an answer and keeps it: accepted (it moves the conversation on) or refused
/// (kept with the reason, changes nothing).
fn receive(store: &Store, conv: &IwConversationRow, past: &[FlowType], env: &Envelope, raw: serde_json::Value) -> Result<(), StoreError> {
    let at = now();
    let seen = store.iw_nonce_seen(&conv.origin, &env.attribution.nonce)?;
    let html = render::to_html(&env.message);
    let refuse = |warning: String, verdict: Option<&Verdict>| {
        let v = verdict.map(|v| serde_json::to_value(v).unwrap_or_default());
        store
            .iw_message_add(&conv.interaction_id, "in", env.flow_type.as_str(), &env.message, Some(&html), &raw, v.as_ref(), Some(&warning), false, &at)
            .map(|_| ())
    };
    if let Err(why) = check_receive(&conv.interaction_id, past, env, seen) {
        return refuse(why, None);
    }
    let pinned = pinned(store, &conv.origin)?;
    let mut verdict = attribution::verify(&raw, env, "intent_site", &conv.query_hash, pinned.as_deref());
    if let Verdict::NewKey { kid } = &verdict {
        match pin_of(store, kid)? {
            // Trusted from "Waiting for you" (the knock of an earlier first contact): pinned now.
            Pin::Lasts => {
                store.iw_site_pin(&conv.origin, Some(kid))?;
                verdict = Verdict::Verified { kid: kid.clone() };
            }
            Pin::Refused(how) => return refuse(format!("Signed by {kid}, a key {how}: refused."), Some(&verdict)),
            Pin::Ask => {}
        }
    }
    let warning = match &verdict {
        Verdict::Verified { .. } => None,
        Verdict::NewKey { kid } => {
            // First contact: the key knocks like an unknown sender; the user pins it.
            store.pending_record(DOOR, kid, SCOPE, &conv.interaction_id, &at)?;
            Some(format!("First contact: this site signs with {kid}. Pin its key to check its answers from now on."))
        }
        Verdict::Unsigned => Some("The site did not sign this answer; it cannot be checked, and what it says of the outcome is only its claim.".to_string()),
        Verdict::FirstScheme { kid } => Some(format!(
            "Signed by {kid} under Gatehouse's first scheme, which covers the message only: its status, reference and other fields are the site's claims."
        )),
        Verdict::KeyMismatch { pinned, kid } => return refuse(format!("Signed by {kid}, not by the key you pinned ({pinned}): refused."), Some(&verdict)),
        Verdict::Invalid { reason } => return refuse(format!("The attribution does not check out ({reason}): refused."), Some(&verdict)),
    };
    store.iw_nonce_record(&conv.origin, &env.attribution.nonce)?;
    let v = serde_json::to_value(&verdict).unwrap_or_default();
    store.iw_message_add(&conv.interaction_id, "in", env.flow_type.as_str(), &env.message, Some(&html), &raw, Some(&v), warning.as_deref(), true, &at)?;
    let state = match env.flow_type {
        FlowType::ExecutionResult => "completed",
        FlowType::Error => "failed",
        _ => "open",
    };
    // Only what the site signed decides the outcome; an unsigned status or reference is
    // kept in the message as its claim, not made the conversation's.
    let (status, external_id) = if verdict.signed_whole() { (env.status.as_deref(), env.external_id.as_deref()) } else { (None, None) };
    store.iw_conversation_update(&conv.interaction_id, state, status, external_id, &at)
}

/// A conversation with all its messages, for the window and for export.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConversationView {
    pub conversation: IwConversationRow,
    pub company: Option<String>,
    pub pinned_key: Option<String>,
    pub messages: Vec<IwMessageRow>,
}

pub fn view(store: &Store, interaction_id: &str) -> Result<Option<ConversationView>, StoreError> {
    let Some(conversation) = store.iw_conversation(interaction_id)? else { return Ok(None) };
    let site = store.iw_site(&conversation.origin)?;
    let pinned_key = pinned(store, &conversation.origin)?;
    let messages = store.iw_messages(interaction_id)?;
    Ok(Some(ConversationView { company: site.map(|s| s.company), pinned_key, messages, conversation }))
}
