//! What arrived and what was done, as both faces read it: the inbox list, receipts (with
//! how they came), accepted envelopes, the senders waiting to be let in, the blocked list,
//! the audit log and the answers to an envelope. Reads only; each is one call.

use crate::Context;
use gatehouse_store::Store;

pub use gatehouse_store::{AuditEntry, BlockedSender, EnvelopeRow, InboxFilter, InboxItem, PendingSender, ReceiptRow};

use crate::Result;

/// The window's inbox list (filtered, keyset-paged).
pub fn inbox(ctx: &Context, filter: &InboxFilter) -> Result<Vec<InboxItem>> {
    let store: &Store = &ctx.store;
    let mut items = store.inbox(filter)?;
    // Each row says whether its message raises warnings the user has not set aside, judged
    // as its detail judges it (the whole prompt, the hosts its sender's entry allows); the
    // scans are kept by receipt, so a page drawn again scans nothing twice.
    // The hosts each sender's entry allows, read once per sender on the page.
    let mut hosts: std::collections::HashMap<String, Vec<String>> = Default::default();
    for it in &mut items {
        let (Some(id), Some(sender)) = (it.envelope_id.as_deref(), it.sender.as_deref()) else { continue };
        let Some(prompt) = store.prompt_of(&it.receipt_id)? else { continue };
        if !hosts.contains_key(sender) {
            hosts.insert(sender.to_string(), crate::doors::allowed_hosts(store.trust_get(sender)?.as_ref()));
        }
        let flags = crate::doors::gate::consent::risk_flags(store, id, &prompt, &hosts[sender], Some(&it.receipt_id))?;
        it.flags = flags.iter().filter(|f| !f.dismissed).count() as u32;
    }
    Ok(items)
}

/// The newest `limit` receipts as their senders got them, with how each arrived beside it
/// (Gatehouse's `x-transport`, and for mail `x-email`: the account, the mail's From,
/// Message-ID and subject).
pub fn receipts(ctx: &Context, limit: u32) -> Result<Vec<serde_json::Value>> {
    let store: &Store = &ctx.store;
    let mut out = Vec::new();
    for r in store.receipts(limit, 0)? {
        let mut v = r.receipt.clone();
        if let Some(o) = v.as_object_mut() {
            o.insert("x-transport".into(), r.transport.clone().into());
            if r.transport == "email" {
                o.insert("x-email".into(), serde_json::to_value(store.email_arrival_get(&r.receipt_id)?)?);
            }
        }
        out.push(v);
    }
    Ok(out)
}

/// The newest `limit` receipts as stored (status, code, transport, message).
pub fn receipt_rows(ctx: &Context, limit: u32) -> Result<Vec<ReceiptRow>> {
    let store: &Store = &ctx.store;
    Ok(store.receipts(limit, 0)?)
}

/// The newest `limit` accepted envelopes.
pub fn envelopes(ctx: &Context, limit: u32) -> Result<Vec<EnvelopeRow>> {
    let store: &Store = &ctx.store;
    Ok(store.envelopes(limit, 0)?)
}

/// Unknown senders that knocked and wait to be let in.
pub fn pending_senders(ctx: &Context) -> Result<Vec<PendingSender>> {
    let store: &Store = &ctx.store;
    Ok(store.pending_list()?)
}

pub fn blocked(ctx: &Context) -> Result<Vec<BlockedSender>> {
    let store: &Store = &ctx.store;
    Ok(store.blocked_list()?)
}

/// Which audit entries to read: those from `since` on (RFC 3339), below `before` (the
/// last id of the page already shown), newest first.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditQuery {
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub before: Option<i64>,
}

/// How many audit entries one page holds.
pub const AUDIT_PAGE: u32 = 200;

/// One page of the audit log, and whether older entries (of the same period) follow.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub older: bool,
}

/// One page of the audit log (what changed, by whom, when), newest first.
pub fn audit(ctx: &Context, q: &AuditQuery) -> Result<AuditPage> {
    let store: &Store = &ctx.store;
    let mut entries = store.audit_page(q.since.as_deref(), q.before, AUDIT_PAGE + 1)?;
    let older = entries.len() > AUDIT_PAGE as usize;
    entries.truncate(AUDIT_PAGE as usize);
    Ok(AuditPage { entries, older })
}

/// The answers to one envelope: drafts, sent and failed.
pub fn replies_for(ctx: &Context, envelope_row: i64) -> Result<Vec<gatehouse_store::replies::ReplyRow>> {
    let store: &Store = &ctx.store;
    Ok(store.replies_for_envelope(envelope_row)?)
}
