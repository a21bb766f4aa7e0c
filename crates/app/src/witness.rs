//! The newest checkpoint of the gate's audit log this machine has seen, kept in its own
//! data dir (`audit-witness.json`, 0600), out of the database's reach. The database alone
//! could rewind the log: cut its end and move its head back, rewrite every hash, or empty
//! it, deleting the checkpoints that would tell. A node or desktop that saw a later
//! checkpoint still holds it: a check compares the log against it, and the gate signs a
//! new head only when the log extends it (docs/threat-model-team.md 21).

use std::path::Path;

use gatehouse_store::AuditCheckpoint;

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
