//! Answers back to the sender (EPP 9.2, the reply half): when an executor finishes with an
//! answer and the sender's trust entry names its reply endpoint, the answer becomes a draft
//! EPP envelope — same conversation, `in_reply_to` the original — signed by this inbox's key
//! and sent at once for scopes the user marked, otherwise after the user reviews (and may
//! edit) it. What the sender's inbox answered is kept as the reply's receipt. An endpoint
//! `mailto:ADDR` gets the reply by mail (EPP 8.2) through the user's mail account: the one
//! the answered envelope came by, else one that can send; its receipt comes back by mail.

use std::time::Duration;

use ed25519_dalek::SigningKey;
use gatehouse_store::replies::ReplyRow;
use gatehouse_store::{EnvelopeRow, Store, StoreError};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error("no reply {0}")]
    NotFound(i64),
    #[error("this reply was already sent")]
    AlreadySent,
    #[error("the reply is empty")]
    Empty,
    #[error("cannot sign the reply: {0}")]
    Key(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ReplyError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ReplyError::NotFound(_) => gatehouse_code::Code::NotFound,
            ReplyError::AlreadySent => gatehouse_code::Code::AlreadySent,
            ReplyError::Empty => gatehouse_code::Code::Invalid,
            ReplyError::Key(_) => gatehouse_code::Code::Keychain,
            ReplyError::Store(_) => gatehouse_code::Code::Store,
        }
    }
}

fn now() -> String {
    gatehouse_epp::utc_string(chrono::Utc::now())
}

/// The answer an executor produced, as text for a reply.
pub fn answer_text(result: &Value) -> Option<String> {
    let t = result.get("answer").or_else(|| result.get("stdout")).and_then(Value::as_str)?.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// After an executor succeeded: a draft reply if the sender takes replies. Returns the
/// draft's id and whether its scope replies automatically.
pub fn draft_after(store: &Store, env: &EnvelopeRow, result: &Value) -> Result<Option<(i64, bool)>, StoreError> {
    let Some(text) = answer_text(result) else { return Ok(None) };
    let Some(trust) = store.trust_get(&env.sender)? else { return Ok(None) };
    let Some(endpoint) = trust.facts.reply_endpoint().map(str::to_string) else { return Ok(None) };
    // The reply continues the sender's conversation, or starts one named after its envelope.
    let conversation = env.conversation_id.clone().unwrap_or_else(|| env.envelope_id.clone());
    let id = store.reply_draft(env.id, &env.envelope_id, &conversation, &env.sender, &endpoint, &env.scope, &text, &now())?;
    Ok(Some((id, trust.policy.auto_reply_scopes.iter().any(|s| s == "*" || *s == env.scope))))
}

/// A receipt is a few hundred bytes; an endpoint answering more is not answering a receipt.
const MAX_RECEIPT_BYTES: usize = 64 * 1024;

/// Signs and sends a reply (its current text) to the sender's endpoint; keeps what came
/// back. A failure is kept on the reply (retry by sending again). `mail`: the accounts a
/// reply to a `mailto:` endpoint can go out through.
pub async fn send(store: &std::sync::Arc<Store>, key: &SigningKey, id: i64, mail: &[crate::email::Follow]) -> Result<ReplyRow, ReplyError> {
    let s = store.clone();
    let r = tokio::task::spawn_blocking(move || s.reply(id)).await.map_err(|e| ReplyError::Key(e.to_string()))??.ok_or(ReplyError::NotFound(id))?;
    if r.state == "sent" {
        return Err(ReplyError::AlreadySent);
    }
    if r.text.trim().is_empty() {
        return Err(ReplyError::Empty);
    }
    let mut d = gatehouse_epp::Draft::new(&r.recipient, &r.scope, &r.text);
    d.conversation_id = Some(r.conversation_id.clone());
    d.in_reply_to = Some(r.in_reply_to.clone());
    let envelope = d.sign(key, chrono::Utc::now());
    if let Some(to) = r.endpoint.strip_prefix("mailto:") {
        return mailed(store, &r, &envelope, to, mail).await;
    }
    let sent = async {
        // Never a redirect: a 307 would re-post the signed reply wherever the endpoint
        // pointed. The receipt is read up to a bound, not whatever the endpoint streams.
        let client =
            reqwest::Client::builder().timeout(Duration::from_secs(30)).redirect(reqwest::redirect::Policy::none()).build().map_err(|e| e.to_string())?;
        let resp = client.post(&r.endpoint).json(&envelope).send().await.map_err(|e| gatehouse_http::HttpError::failed(&r.endpoint, &e).to_string())?;
        let status = resp.status().as_u16();
        if resp.status().is_redirection() {
            return Err(format!("{} answered HTTP {status} (a redirect); replies are only sent to the endpoint the user set", r.endpoint));
        }
        let bytes = gatehouse_http::read_limited(&r.endpoint, resp, MAX_RECEIPT_BYTES).await.map_err(|e| e.to_string())?;
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{} answered HTTP {status} without a receipt: {e}", r.endpoint))?;
        Ok::<_, String>(body)
    }
    .await;
    let (state, receipt, error) = match sent {
        Ok(receipt) if receipt["status"] == "accepted" => ("sent", Some(receipt), None),
        Ok(receipt) => {
            let why = format!(
                "{} refused it: {}",
                r.endpoint,
                receipt
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .or_else(|| receipt.pointer("/error/code").and_then(Value::as_str))
                    .unwrap_or("no reason given")
            );
            ("failed", Some(receipt), Some(why))
        }
        Err(e) => ("failed", None, Some(e)),
    };
    let s = store.clone();
    let out = tokio::task::spawn_blocking(move || {
        s.reply_finish(id, state, Some(&envelope), receipt.as_ref(), error.as_deref(), &now())?;
        s.reply(id)
    })
    .await
    .map_err(|e| ReplyError::Key(e.to_string()))??;
    out.ok_or(ReplyError::NotFound(id))
}

/// A reply by mail: taken by the outgoing server is `sent` (the sender's receipt comes
/// back by mail, as a reply); not taken is `failed` with why.
async fn mailed(store: &std::sync::Arc<Store>, r: &ReplyRow, envelope: &Value, to: &str, mail: &[crate::email::Follow]) -> Result<ReplyRow, ReplyError> {
    let (s, row) = (store.clone(), r.envelope_row);
    let came_by = tokio::task::spawn_blocking(move || -> Result<Option<String>, StoreError> {
        let Some(env) = s.envelope(row)? else { return Ok(None) };
        Ok(s.email_arrival_get(&env.receipt_id)?.map(|a| a.account))
    })
    .await
    .map_err(|e| ReplyError::Key(e.to_string()))??;
    let sent = crate::email::mail_envelope(mail, came_by.as_deref(), to, "EPP reply", envelope).await;
    let (state, error) = match &sent {
        Ok(_) => ("sent", None),
        Err(e) => ("failed", Some(e.clone())),
    };
    let (s, id, envelope) = (store.clone(), r.id, envelope.clone());
    tokio::task::spawn_blocking(move || {
        s.reply_finish(id, state, Some(&envelope), None, error.as_deref(), &now())?;
        s.reply(id)
    })
    .await
    .map_err(|e| ReplyError::Key(e.to_string()))??
    .ok_or(ReplyError::NotFound(id))
}

/// What the runner does after an envelope's executor succeeded: the answer goes back to a
/// sender that takes replies, drafted for the user's review, or sent at once for the
/// scopes the user marked.
/// `mail`: the accounts answers to `mailto:` endpoints go out through.
/// `key`: the identity key the caller holds (else read from the keychain for each reply).
pub fn after_success(mail: Vec<crate::email::Follow>, key: Option<SigningKey>) -> gatehouse_gate::runner::OnSuccess {
    let mail = std::sync::Arc::new(mail);
    std::sync::Arc::new(move |store, row, result| {
        let (mail, key) = (mail.clone(), key.clone());
        Box::pin(async move { draft_and_send(&store, row, result, &mail, key).await })
    })
}

async fn draft_and_send(store: &std::sync::Arc<Store>, row: EnvelopeRow, result: Value, mail: &[crate::email::Follow], held: Option<SigningKey>) {
    let s = store.clone();
    let drafted = tokio::task::spawn_blocking(move || draft_after(&s, &row, &result)).await;
    let id = match drafted {
        Ok(Ok(Some((id, true)))) => id,
        Ok(Ok(_)) => return,
        Ok(Err(e)) => return tracing::error!(error = %e, "drafting a reply failed"),
        Err(e) => return tracing::error!(error = %e, "drafting a reply failed"),
    };
    let s = store.clone();
    let key = match tokio::task::spawn_blocking(move || held.map_or_else(|| gatehouse_gate::state::identity_key(&s).map_err(ReplyError::Key), Ok)).await {
        Ok(Ok(k)) => k,
        Ok(Err(e)) => {
            tracing::error!(error = %e, reply = id, "automatic reply left as a draft");
            return;
        }
        Err(_) => return,
    };
    match send(store, &key, id, mail).await {
        Ok(r) if r.state == "sent" => tracing::info!(reply = id, to = %r.endpoint, "reply sent"),
        Ok(r) => tracing::warn!(reply = id, error = ?r.error, "reply not delivered; it can be sent again"),
        Err(e) => tracing::error!(error = %e, reply = id, "reply not sent"),
    }
}
