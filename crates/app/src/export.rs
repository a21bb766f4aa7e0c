//! Exports the user asks for: every receipt, the audit log, IntentWeb conversations or the
//! guardian's decisions, written as JSON to a path the user chose.

use std::path::Path;

use gatehouse_store::Store;

use crate::{Code, CommandError, Result};

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

/// What an export holds, and how many records.
pub fn collect(store: &Store, kind: ExportKind) -> Result<(serde_json::Value, usize)> {
    Ok(match kind {
        ExportKind::Receipts => {
            let rows = store.receipts(u32::MAX, 0)?;
            let n = rows.len();
            (serde_json::to_value(rows.into_iter().map(|r| r.receipt).collect::<Vec<_>>()).unwrap_or_default(), n)
        }
        ExportKind::Audit => {
            let rows = store.audit_list(u32::MAX)?;
            let n = rows.len();
            (serde_json::to_value(rows).unwrap_or_default(), n)
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
pub fn write(store: &Store, kind: ExportKind, path: &Path) -> Result<usize> {
    let (value, n) = collect(store, kind)?;
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    std::fs::write(path, text).map_err(|e| CommandError::new(Code::Io, format!("{}: {e}", path.display())))?;
    Ok(n)
}
