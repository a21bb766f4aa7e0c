//! The store's integration tests in one binary, a module per concern (one link, not four).
mod admission_and_upgrade;
mod audit;
mod common;
mod contacts_sealed;
mod conversations;
mod database_tls;
mod entry_facts;
mod flushed_later;
mod knocks;
mod large_inbox;
mod rate_limits;
mod sealed;
mod team;
mod warm_reads;
