//! What arrived and what was done, as both faces read it: the inbox list, receipts (with
//! how they came), accepted envelopes, the senders waiting to be let in, the blocked list,
//! the audit log and the answers to an envelope. Reads only; each is one call.

use gatehouse_store::Store;

pub use gatehouse_store::{AuditEntry, BlockedSender, EnvelopeRow, InboxFilter, InboxItem, PendingSender, ReceiptRow};

use crate::Result;

/// The window's inbox list (filtered, keyset-paged).
pub fn inbox(store: &Store, filter: &InboxFilter) -> Result<Vec<InboxItem>> {
    Ok(store.inbox(filter)?)
}

/// The newest `limit` receipts as their senders got them, with how each arrived beside it
/// (Gatehouse's `x-transport`, and for mail `x-email`: the account, the mail's From,
/// Message-ID and subject).
pub fn receipts(store: &Store, limit: u32) -> Result<Vec<serde_json::Value>> {
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
pub fn receipt_rows(store: &Store, limit: u32) -> Result<Vec<ReceiptRow>> {
    Ok(store.receipts(limit, 0)?)
}

/// The newest `limit` accepted envelopes.
pub fn envelopes(store: &Store, limit: u32) -> Result<Vec<EnvelopeRow>> {
    Ok(store.envelopes(limit, 0)?)
}

/// Unknown senders that knocked and wait to be let in.
pub fn pending_senders(store: &Store) -> Result<Vec<PendingSender>> {
    Ok(store.pending_list()?)
}

pub fn blocked(store: &Store) -> Result<Vec<BlockedSender>> {
    Ok(store.blocked_list()?)
}

/// The newest audit entries (what changed, by whom, when).
pub fn audit(store: &Store) -> Result<Vec<AuditEntry>> {
    Ok(store.audit_list(500)?)
}

/// The answers to one envelope: drafts, sent and failed.
pub fn replies_for(store: &Store, envelope_row: i64) -> Result<Vec<gatehouse_store::replies::ReplyRow>> {
    Ok(store.replies_for_envelope(envelope_row)?)
}
