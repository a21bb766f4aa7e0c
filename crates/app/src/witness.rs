//! The newest checkpoint of the gate's audit log this machine has seen, kept in its own
//! data dir (`audit-witness.json`, 0600), out of the database's reach. The database alone
//! could rewind the log: cut its end and move its head back, rewrite every hash, or empty
//! it, deleting the checkpoints that would tell. A node or desktop that saw a later
//! checkpoint still holds it: a check compares the log against it, and the gate signs a
//! new head only when the log extends it (docs/threat-model-team.md 21).

use std::path::Path;

use gatehouse_store::{AuditCheckpoint, Store};

use crate::{Code, CommandError, Result};

pub const FILE: &str = "audit-witness.json";

/// The checkpoint kept in `data_dir`, if any.
pub fn load(data_dir: &Path) -> Result<Option<AuditCheckpoint>> {
    match std::fs::read_to_string(data_dir.join(FILE)) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| CommandError::new(Code::Io, format!("{}: not a checkpoint this machine kept ({e})", data_dir.join(FILE).display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CommandError::new(Code::Io, format!("{}: {e}", data_dir.join(FILE).display()))),
    }
}

/// Keeps `c` in `data_dir` when it covers more of the log than the one kept (0600).
pub fn keep(data_dir: &Path, c: &AuditCheckpoint) -> Result<()> {
    if load(data_dir)?.is_some_and(|old| old.through_id >= c.through_id) {
        return Ok(());
    }
    gatehouse_keys::replace_private(&data_dir.join(FILE), &serde_json::to_string_pretty(c).unwrap_or_default())
        .map_err(|e| CommandError::new(Code::Io, format!("keeping the audit checkpoint in {}: {e}", data_dir.display())))
}

/// What an approver device is told when it hands in the checkpoint it holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Witnessed {
    /// The log extends what the device held (or it held none).
    pub intact: bool,
    /// What does not fit, in words, when it does not.
    pub problem: Option<String>,
    /// The newest checkpoint the device holds from now on (only when the log is intact).
    pub newest: Option<AuditCheckpoint>,
}

/// An approver device (a phone, a member's desktop) is a witness of the log too: it hands
/// in the newest checkpoint it holds, the log is checked against it (and it is kept, so
/// `audit verify` on every node checks against it), and only a log that extends it gives
/// the device a newer one to hold. Someone with the database alone who rewinds the log
/// and deletes its checkpoints — on every node's data dir too — is found by the first
/// device that comes back.
pub fn device(store: &Store, gate_key: &str, approver: &str, held: Option<&AuditCheckpoint>) -> Result<Witnessed> {
    if let Some(h) = held {
        if !crate::audit::signed_by_gate(gate_key, h) {
            return Err(CommandError::new(Code::BadRequest, "the checkpoint this device holds is not signed by this gate's key"));
        }
        store.audit_witness_keep(approver, h, &crate::now())?;
    }
    let v = crate::audit::verify_live(store, gate_key, held)?;
    if !v.intact {
        return Ok(Witnessed { intact: false, problem: v.problem.map(|p| p.reason), newest: None });
    }
    let newest = crate::audit::newest_valid(store, gate_key, &v)?.filter(|n| held.is_none_or(|h| n.through_id >= h.through_id));
    Ok(Witnessed { intact: true, problem: None, newest: newest.or_else(|| held.cloned()) })
}
