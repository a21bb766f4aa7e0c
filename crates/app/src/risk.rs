//! Risk flags as the user sets them aside: a dismissed flag stays on the message, marked,
//! so the next reader sees it was looked at. Audited.

use crate::Context;
use gatehouse_store::Store;

use crate::{now, Code, CommandError, Result};

const KINDS: [&str; 7] = ["override", "exfiltrate", "tool_call", "invisible", "mixed_script", "base64", "link"];

/// Dismisses the flag of `kind` at `start` on a message (an envelope id or a UAMP stream id).
pub fn dismiss(ctx: &Context, message_id: &str, kind: &str, start: u32) -> Result<()> {
    let store: &Store = &ctx.store;
    if !KINDS.contains(&kind) {
        return Err(CommandError::new(Code::Invalid, format!("no risk flag kind {kind:?}")));
    }
    if message_id.trim().is_empty() {
        return Err(CommandError::new(Code::Invalid, "which message?"));
    }
    store.risk_dismiss(message_id, kind, start, &now())?;
    store.audit("risk.dismiss", None, &serde_json::json!({"message": message_id, "kind": kind, "start": start}), &now())?;
    Ok(())
}
