//! The canonical signing payload (spec 4.2) and the variants real signers produce.
//!
//! The spec says "compact JSON" (payload) and "compact sorted JSON" (delegation) without
//! fixing escaping or number formatting; the reference implementation writes Python's
//! `json.dumps(sort_keys=True)` (non-ASCII escaped, nulls dropped from the payload's top
//! level, `authorization: null` always present in delegation). Every variant here encodes
//! the same meaning, so accepting any of them lets no one change what was signed; see
//! docs/interop.md.

use crate::envelope::Envelope;
use crate::json::{to_compact, Json, NumberStyle, Style};

/// Which serialisation a verified signature matched, recorded for the user to see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Sorted keys, ASCII-escaped, Python number text, payload nulls dropped,
    /// delegation with explicit `authorization`: what Gatehouse signs.
    Reference,
    /// Any other accepted variant (raw UTF-8, as-sent key order or number text, ...).
    Variant,
}

const UTF8_PYTHON: Style = Style { sort_keys: true, ascii: false, numbers: NumberStyle::Python };
const SORTED_AS_SENT: Style = Style { sort_keys: true, ascii: false, numbers: NumberStyle::AsSent };
const SORTED_ASCII_AS_SENT: Style = Style { sort_keys: true, ascii: true, numbers: NumberStyle::AsSent };
const WIRE_ORDER: Style = Style { sort_keys: false, ascii: false, numbers: NumberStyle::AsSent };

/// The payload with top-level null members removed (pydantic `exclude_none`).
fn without_top_level_nulls(v: &Json) -> Json {
    match v {
        Json::Object(m) => Json::Object(m.iter().filter(|(_, v)| *v != Json::Null).cloned().collect()),
        other => other.clone(),
    }
}

/// The delegation object with `authorization` written explicitly (null when absent).
fn with_explicit_authorization(v: &Json) -> Json {
    match v {
        Json::Object(m) if !m.iter().any(|(k, _)| k == "authorization") => {
            let mut m = m.clone();
            m.push(("authorization".into(), Json::Null));
            Json::Object(m)
        }
        other => other.clone(),
    }
}

fn push_unique(list: &mut Vec<String>, s: String) {
    if !list.contains(&s) {
        list.push(s);
    }
}

/// Joins the twelve fields of spec 4.2 with newlines.
#[allow(clippy::too_many_arguments)]
pub fn join_fields(
    version: &str,
    envelope_id: &str,
    sender: &str,
    recipient: &str,
    timestamp: &str,
    expires_at: &str,
    nonce: &str,
    scope: &str,
    conversation_id: Option<&str>,
    in_reply_to: Option<&str>,
    delegation_json: &str,
    payload_json: &str,
) -> Vec<u8> {
    [
        version,
        envelope_id,
        sender,
        recipient,
        timestamp,
        expires_at,
        nonce,
        scope,
        conversation_id.unwrap_or(""),
        in_reply_to.unwrap_or(""),
        delegation_json,
        payload_json,
    ]
    .join("\n")
    .into_bytes()
}

/// The reference form: the bytes Gatehouse signs, and the first of [`candidates`]
/// (built alone, since nearly every envelope is signed over it).
pub fn reference_payload(env: &Envelope) -> Vec<u8> {
    let delegation = env.delegation.as_ref().map_or_else(String::new, |d| reference_delegation(&d.raw));
    signing_bytes(env, &env.sender_key(), &env.recipient_key(), &delegation, &reference_payload_json(env))
}

/// The payload as the reference form serialises it (top-level nulls dropped).
fn reference_payload_json(env: &Envelope) -> String {
    to_compact(&without_top_level_nulls(&env.payload.raw), Style::REFERENCE)
}

/// The delegation as the reference form serialises it (`on_behalf_of` lower-cased,
/// `authorization` explicit).
fn reference_delegation(raw: &Json) -> String {
    to_compact(&with_explicit_authorization(&lowercase_on_behalf_of(raw)), Style::REFERENCE)
}

/// This envelope's fields joined with the given header keys, delegation and payload.
fn signing_bytes(env: &Envelope, sender: &str, recipient: &str, delegation: &str, payload: &str) -> Vec<u8> {
    join_fields(
        &env.version,
        &env.envelope_id,
        sender,
        recipient,
        &env.timestamp,
        &env.expires_at,
        &env.nonce,
        &env.scope,
        env.conversation_id.as_deref(),
        env.in_reply_to.as_deref(),
        delegation,
        payload,
    )
}

/// Every distinct spelling of the payload's JSON that means what was received, the
/// reference form first: what a signature or an EPP v1.1 `integrity` hash may cover.
pub fn payload_spellings(env: &Envelope) -> Vec<String> {
    let mut payloads = vec![reference_payload_json(env)];
    for style in [UTF8_PYTHON, SORTED_AS_SENT, SORTED_ASCII_AS_SENT, Style::REFERENCE, WIRE_ORDER] {
        push_unique(&mut payloads, to_compact(&env.payload.raw, style));
    }
    payloads
}

/// Every distinct signing payload this envelope may have been signed over, the
/// reference form first.
pub fn candidates(env: &Envelope) -> Vec<(Form, Vec<u8>)> {
    let payloads = payload_spellings(env);

    let mut delegations = Vec::new();
    match &env.delegation {
        None => delegations.push(String::new()),
        Some(d) => {
            let lower = lowercase_on_behalf_of(&d.raw);
            delegations.push(reference_delegation(&d.raw));
            for raw in [&d.raw, &lower] {
                push_unique(&mut delegations, to_compact(raw, SORTED_AS_SENT));
                push_unique(&mut delegations, to_compact(raw, Style::REFERENCE));
            }
        }
    }

    let keys = (env.sender_key(), env.recipient_key());
    let as_sent = (env.sender.clone(), env.recipient.clone());
    let mut headers = vec![keys.clone()];
    if as_sent != keys {
        headers.push(as_sent);
    }

    let mut out: Vec<(Form, Vec<u8>)> = Vec::new();
    for (hi, (sender, recipient)) in headers.iter().enumerate() {
        for (di, delegation) in delegations.iter().enumerate() {
            for (pi, payload) in payloads.iter().enumerate() {
                let bytes = signing_bytes(env, sender, recipient, delegation, payload);
                let form = if hi == 0 && di == 0 && pi == 0 { Form::Reference } else { Form::Variant };
                if !out.iter().any(|(_, b)| *b == bytes) {
                    out.push((form, bytes));
                }
            }
        }
    }
    out
}

fn lowercase_on_behalf_of(v: &Json) -> Json {
    match v {
        Json::Object(m) => Json::Object(
            m.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("on_behalf_of", Json::String(s)) => (k.clone(), Json::String(s.to_ascii_lowercase())),
                    _ => (k.clone(), v.clone()),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}
