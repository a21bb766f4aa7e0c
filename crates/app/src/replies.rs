//! Answers to senders as the user approves them, and what arrived shown in its place: a
//! receipt's detail with the verification steps, a conversation ordered by its replies.

use crate::Context;

use gatehouse_store::{EnvelopeRow, ReceiptRow, Store};

pub use gatehouse_store::replies::ReplyRow;

use crate::{Code, CommandError, Result};

/// Sends a reply with the text the user approved (edited or not), signed by this inbox;
/// the approval is audited before it goes.
pub async fn send(ctx: &Context, id: i64, text: &str) -> Result<ReplyRow> {
    let key = &ctx.key;
    let store = ctx.store.clone();
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(CommandError::new(Code::Invalid, "the answer is empty"));
    }
    let s = store.clone();
    let mail = crate::blocking(move || {
        s.reply_edit(id, &text, &crate::now())?;
        s.audit("reply.send", None, &serde_json::json!({"reply": id}), &crate::now())?;
        // A reply by mail goes out through the user's mail accounts (their passwords are
        // read only then).
        let by_mail = s.reply(id)?.is_some_and(|r| r.endpoint.starts_with("mailto:"));
        match s.data_dir() {
            Some(dir) if by_mail => crate::email::follows(&s, dir),
            _ => Ok(Vec::new()),
        }
    })
    .await?;
    crate::doors::epp::reply::send(&store, key, id, &mail).await.map_err(|e| CommandError::new(e.code(), e.to_string()))
}

/// One verification step of spec 5.1 and how far the envelope got.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Step {
    pub name: &'static str,
    pub state: &'static str,
}

#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Detail {
    pub receipt: ReceiptRow,
    pub envelope: Option<EnvelopeRow>,
    pub steps: Vec<Step>,
    pub sender_name: Option<String>,
    pub on_behalf_of_name: Option<String>,
    /// What arrived, pretty-printed when it is JSON.
    pub raw: Option<String>,
    /// What it declared beyond its message, as the door it came by read it, if anything.
    pub extras: Option<gatehouse_gate::declared::Declared>,
    /// For an envelope that came by mail: what the mail said about itself (unverified) and
    /// whether its receipt was mailed back.
    pub email: Option<gatehouse_store::email::EmailArrivalRow>,
    /// What in the prompt (or the refused body) looks like an attempt to steer the user's AI.
    pub risk: Vec<gatehouse_risk::Flag>,
    /// What became of it beyond its receipt: a knock decided (and the message it became),
    /// or the knock a message came as.
    pub story: gatehouse_store::Story,
    /// A knock let in: the receipt of the message it became.
    pub delivered_as: Option<String>,
}

pub fn detail(ctx: &Context, receipt_id: &str) -> Result<Detail> {
    let store: &Store = &ctx.store;
    let receipt = store.receipt(receipt_id)?.ok_or_else(|| CommandError::new(Code::NotFound, "no such receipt"))?;
    let envelope = match receipt.envelope_row {
        Some(id) => store.envelope(id)?,
        None => None,
    };
    let code = receipt.code.as_deref().and_then(gatehouse_epp::ErrorCode::parse);
    let extras = envelope.as_ref().and_then(|e| crate::doors::told(&e.door, &e.raw).declared);
    let steps = crate::doors::verification_steps(code, receipt.sender.is_some())
        .into_iter()
        .map(|(name, state)| {
            // An envelope that carries no integrity hash or provenance passed nothing there.
            let absent = |has: bool| state == "passed" && !has;
            let state = match name {
                "integrity" if absent(extras.as_ref().is_some_and(|x| x.integrity.is_some())) => "absent",
                "provenance" if absent(extras.as_ref().is_some_and(|x| !x.provenance.is_empty())) => "absent",
                _ => state,
            };
            Step { name, state }
        })
        .collect();
    let name_of = |k: Option<&str>| -> Result<Option<String>> {
        Ok(match k {
            Some(k) => store.trust_get(k)?.map(|t| t.name),
            None => None,
        })
    };
    let sender_name = name_of(receipt.sender.as_deref())?;
    let on_behalf_of_name = name_of(envelope.as_ref().and_then(|e| e.on_behalf_of.as_deref()))?;
    let raw_text = envelope.as_ref().map(|e| e.raw.clone()).or_else(|| receipt.body.clone());
    let raw = raw_text.map(|t| match serde_json::from_str::<serde_json::Value>(&t) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(t),
        Err(_) => t,
    });
    let email = if receipt.transport == "email" { store.email_arrival_get(&receipt.receipt_id)? } else { None };
    let entry = match envelope.as_ref().map(|e| e.sender.as_str()).or(receipt.sender.as_deref()) {
        Some(k) => store.trust_get(k)?,
        None => None,
    };
    let risk = match (&envelope, receipt.prompt.as_deref(), receipt.envelope_id.as_deref()) {
        (Some(e), _, _) => {
            crate::doors::gate::consent::risk_flags(store, &e.envelope_id, &e.prompt, &crate::doors::allowed_hosts(entry.as_ref()), Some(&receipt.receipt_id))?
        }
        (None, Some(text), Some(id)) => {
            crate::doors::gate::consent::risk_flags(store, id, text, &crate::doors::allowed_hosts(entry.as_ref()), Some(&receipt.receipt_id))?
        }
        _ => Vec::new(),
    };
    let story = store.story(&receipt.receipt_id)?;
    let delivered_as = store.delivered_as(&receipt.receipt_id)?;
    Ok(Detail { receipt, envelope, steps, sender_name, on_behalf_of_name, raw, extras, email, risk, story, delivered_as })
}

#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConversationMessage {
    pub envelope: EnvelopeRow,
    pub sender_name: Option<String>,
    pub on_behalf_of_name: Option<String>,
    /// Depth in the reply chain (0 for a message that answers nothing in the conversation).
    pub depth: usize,
}

/// A conversation as the user reads it: what arrived and the answers this inbox sent
/// back, each under what it answers. `own_key`: this inbox's public key.
pub fn conversation(ctx: &Context, conversation_id: &str) -> Result<Vec<ConversationMessage>> {
    let own_key = ctx.public_key.as_str();
    let store: &Store = &ctx.store;
    let mut rows = store.conversation(conversation_id)?;
    for r in store.replies_for_conversation(conversation_id)?.into_iter().filter(|r| r.state == "sent") {
        let sent = r.sent_envelope.clone().unwrap_or_default();
        let s = |k: &str| sent[k].as_str().unwrap_or_default().to_string();
        rows.push(EnvelopeRow {
            id: -r.id,
            envelope_id: s("envelope_id"),
            sender: own_key.to_string(),
            recipient: r.recipient.clone(),
            scope: r.scope.clone(),
            payload_type: None,
            conversation_id: Some(r.conversation_id.clone()),
            in_reply_to: Some(r.in_reply_to.clone()),
            on_behalf_of: None,
            prompt: r.text.clone(),
            timestamp: s("timestamp"),
            expires_at: s("expires_at"),
            received_at: r.updated_at.clone(),
            transport: "reply".into(),
            signed_form: "reference".into(),
            raw: sent.to_string(),
            receipt_id: r.receipt.as_ref().and_then(|x| x["receipt_id"].as_str()).unwrap_or_default().to_string(),
            executor: "reply".into(),
            exec_status: gatehouse_store::ExecStatus::Succeeded,
            exec_result: r.receipt.clone(),
            exec_updated_at: Some(r.updated_at.clone()),
            executor_spec: None,
            door: crate::doors::epp::DOOR.into(),
        });
    }
    let mut out = Vec::new();
    for (envelope, depth) in order_by_replies(rows) {
        let sender_name =
            if envelope.transport == "reply" { Some("You (answer sent back)".to_string()) } else { store.trust_get(&envelope.sender)?.map(|t| t.name) };
        let on_behalf_of_name = match &envelope.on_behalf_of {
            Some(k) => store.trust_get(k)?.map(|t| t.name),
            None => None,
        };
        out.push(ConversationMessage { envelope, sender_name, on_behalf_of_name, depth });
    }
    Ok(out)
}

/// Orders a conversation by its reply chains: each reply right after what it answers,
/// siblings by arrival; messages answering something absent start a chain of their own.
pub fn order_by_replies(rows: Vec<EnvelopeRow>) -> Vec<(EnvelopeRow, usize)> {
    use std::collections::HashSet;
    fn visit(parent: Option<&str>, rows: &[EnvelopeRow], ids: &HashSet<String>, depth: usize, out: &mut Vec<(EnvelopeRow, usize)>, seen: &mut HashSet<i64>) {
        for r in rows {
            let is_root = r.in_reply_to.as_deref().is_none_or(|p| !ids.contains(p));
            let matches = match parent {
                None => is_root,
                Some(p) => r.in_reply_to.as_deref() == Some(p),
            };
            if matches && seen.insert(r.id) {
                out.push((r.clone(), depth));
                visit(Some(&r.envelope_id), rows, ids, depth + 1, out, seen);
            }
        }
    }
    let ids: HashSet<String> = rows.iter().map(|r| r.envelope_id.clone()).collect();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    visit(None, &rows, &ids, 0, &mut out, &mut seen);
    // Cycles (a replies to b replies to a) have no root; show them in arrival order.
    for r in &rows {
        if seen.insert(r.id) {
            out.push((r.clone(), 0));
        }
    }
    out
}
