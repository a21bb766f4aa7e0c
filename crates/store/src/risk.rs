//! Risk flags the user dismissed (the flags themselves are computed from the text).

use crate::sql::args;

use crate::{Result, Store};

impl Store {
    pub fn risk_dismiss(&self, message_id: &str, kind: &str, start: u32, at: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO risk_dismissed (message_id, kind, start, dismissed_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
            args![message_id, kind, start, at],
        )?;
        Ok(())
    }

    /// (kind, start) of every flag dismissed on a message.
    pub fn risk_dismissed(&self, message_id: &str) -> Result<Vec<(String, u32)>> {
        self.read(|c| {
            let stmt = c.prepare_cached("SELECT kind, start FROM risk_dismissed WHERE message_id = ?1")?;
            let rows = stmt.query_map(args![message_id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }
}
