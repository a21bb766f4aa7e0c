//! Approver devices (a phone's page, a member's desktop) as witnesses of the gate's audit
//! log: each holds the newest checkpoint the gate signed, out of the gate's reach, and
//! hands it in; the log is checked against it (docs/threat-model-team.md 21).

use gatehouse_store::{AuditCheckpoint, Store};

use crate::{Code, CommandError, Result};

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
pub fn check(store: &Store, gate_key: &str, approver: &str, held: Option<&AuditCheckpoint>) -> Result<Witnessed> {
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
