//! Exports the user asks for: every receipt, the audit log, IntentWeb conversations or the
//! guardian's decisions, written as JSON to a path the user chose.

use std::path::Path;

use crate::{Code, CommandError, Context, Result};

#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ExportKind {
    Receipts,
    Audit,
    /// Every IntentWeb conversation with all its messages.
    Conversations,
    /// Every step the ASOP guardian decided, by session.
    Guardian,
}

/// What an export holds, and how many records. The audit log is signed up to its last
/// entry first, and carries its hashes and checkpoints (`crate::audit`).
pub fn collect(ctx: &Context, kind: ExportKind) -> Result<(serde_json::Value, usize)> {
    let store = &ctx.store;
    Ok(match kind {
        ExportKind::Receipts => {
            let rows = store.receipts(u32::MAX, 0)?;
            let n = rows.len();
            (serde_json::to_value(rows.into_iter().map(|r| r.receipt).collect::<Vec<_>>()).unwrap_or_default(), n)
        }
        ExportKind::Audit => {
            let export = crate::audit::export(store, &ctx.key)?;
            let n = export.entries.len();
            (serde_json::to_value(export).unwrap_or_default(), n)
        }
        ExportKind::Conversations => {
            let mut all = Vec::new();
            for conv in store.iw_conversations(usize::MAX >> 1)? {
                if let Some(v) = crate::doors::intent::view(store, &conv.interaction_id)? {
                    all.push(v);
                }
            }
            let n = all.len();
            (serde_json::to_value(all).unwrap_or_default(), n)
        }
        ExportKind::Guardian => {
            let mut sessions = Vec::new();
            for (id, agent, _, _) in store.asop_sessions(usize::MAX >> 1)? {
                let steps = store.asop_session(&id)?;
                sessions.push(serde_json::json!({"session_id": id, "agent": agent, "steps": steps}));
            }
            let n = sessions.len();
            (serde_json::Value::Array(sessions), n)
        }
    })
}

/// Writes the export to `path` (a path the user chose; the window checks it was chosen in
/// its dialog) and says how many records it holds.
pub fn write(ctx: &Context, kind: ExportKind, path: &Path) -> Result<usize> {
    let (value, n) = collect(ctx, kind)?;
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    std::fs::write(path, text).map_err(|e| CommandError::new(Code::Io, format!("{}: {e}", path.display())))?;
    Ok(n)
}
