//! How long what strangers sent is kept: the bytes of refused submissions (which the
//! user looks at for a few days, if ever) and the audit log. Receipts themselves stay
//! (they are counted per minute on the way in, see the inbox's flood gate); their
//! bodies go after `rejected_body_days`.

use serde::{Deserialize, Serialize};

use crate::{Result, Store};

/// The setting holding [`Retention`].
pub const RETENTION_SETTING: &str = "retention";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Retention {
    /// Days the body of a refused submission is kept (0: forever).
    pub rejected_body_days: u32,
    /// Days an audit entry is kept (0: forever).
    pub audit_days: u32,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { rejected_body_days: 7, audit_days: 365 }
    }
}

/// What one pruning removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    pub bodies_cleared: usize,
    pub audit_removed: usize,
}

const DAY_MS: i64 = 24 * 3600 * 1000;

impl Store {
    /// The retention setting, or its default.
    pub fn retention(&self) -> Retention {
        self.setting(RETENTION_SETTING).ok().flatten().unwrap_or_default()
    }

    /// Drops what is older than `r` allows, as of `now_ms`.
    pub fn prune(&self, now_ms: i64, r: &Retention) -> Result<Pruned> {
        let mut out = Pruned::default();
        let conn = self.conn();
        if r.rejected_body_days > 0 {
            let cutoff = now_ms - i64::from(r.rejected_body_days) * DAY_MS;
            out.bodies_cleared = conn.execute(
                "UPDATE receipts SET body = NULL, body_truncated = 0 WHERE status = 'rejected' AND body IS NOT NULL AND received_ms < ?1",
                [cutoff],
            )?;
        }
        if r.audit_days > 0 {
            let cutoff = chrono::DateTime::from_timestamp_millis(now_ms - i64::from(r.audit_days) * DAY_MS).unwrap_or_default();
            // Entries are written as RFC 3339 UTC, so text order is time order.
            out.audit_removed = conn.execute("DELETE FROM audit WHERE at < ?1", [cutoff.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)])?;
        }
        Ok(out)
    }
}
