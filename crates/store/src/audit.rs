//! The audit log: every change to trust, consent, settings and secrets, with when and what.

use crate::sql::args;
use crate::*;

impl Store {
    pub fn audit(&self, action: &str, subject: Option<&str>, detail: &serde_json::Value, now: &str) -> Result<()> {
        self.conn()?.execute("INSERT INTO audit (at, action, subject, detail) VALUES (?1, ?2, ?3, ?4)", args![now, action, subject, detail.to_string()])?;
        Ok(())
    }

    /// Newest first.
    pub fn audit_list(&self, limit: u32) -> Result<Vec<AuditEntry>> {
        self.read(|conn| {
            let stmt = conn.prepare("SELECT id, at, action, subject, detail FROM audit ORDER BY id DESC LIMIT ?1")?;
            let rows = stmt.query_map(args![limit], |r| {
                let detail: String = r.get(4)?;
                Ok(AuditEntry {
                    id: r.get(0)?,
                    at: r.get(1)?,
                    action: r.get(2)?,
                    subject: r.get(3)?,
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                })
            })?;
            rows.collect::<Result<_>>()
        })
    }
}
