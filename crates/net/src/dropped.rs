//! Files dropped into the watched folder that are not envelopes: the folder (EPP's) takes
//! them and hands each to the door that reads it, which the composition registers; so
//! neither door names the other.

use std::path::Path;
use std::sync::Arc;

/// Files another door reads that are dropped into the same folder (MAIL task logs). The
/// composition registers them on the inbox ([`Others`]).
pub trait OtherFiles: Send + Sync {
    /// Whether this file, by its name, is one of them rather than an envelope.
    fn claims(&self, path: &Path) -> bool;
    /// Reads it: whether anything was kept, and the report filed beside it.
    fn import(&self, store: &gatehouse_store::Store, path: &Path) -> (bool, serde_json::Value);
    /// What the window is told it was (the event's scope), and the log's words for it.
    fn kind(&self) -> &'static str;
}

/// The other files the folder takes, as registered on the inbox.
pub struct Others(pub Vec<Arc<dyn OtherFiles>>);
