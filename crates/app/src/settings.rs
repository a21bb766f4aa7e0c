//! Settings both faces change: how long history is kept (refused bodies and receipts,
//! the audit log), bounded and audited by the store's one path.

use gatehouse_store::{Retention, Store};

use crate::Result;

pub fn retention(store: &Store) -> Retention {
    store.retention()
}

/// Applied by the inbox's next clean-up (every 10 minutes), not at once.
pub fn set_retention(store: &Store, retention: &Retention) -> Result<Retention> {
    store.set_retention(retention, &crate::now())?;
    Ok(store.retention())
}
