//! What a Gatehouse user can do, one layer for both faces: the window's commands and the
//! CLI call these (one call each), so both validate, behave and audit alike. No Tauri here.
//!
//! - [`context`]: the one [`Context`] both faces hold: a data dir opened (identity, store)
//! - [`error`]: the one error [`Code`] enum and `{code, message}` errors both faces show
//! - [`trust`]: the trust registry as the user changes it (add, approve, edit, block, tokens)
//! - [`contacts`]: people and organisations with their keys; safety codes; key changes
//! - [`consent`]: what waits for the user, and a decision carried out by the door holding it
//! - [`target`]: what a decision names and what is knocking, by the door it knocked at
//! - [`first_run`]: the welcome shown once, and a sample envelope sent to yourself
//! - [`executors`]: which executor runs for which scope (validated, confirmed, audited); retry
//! - [`notify`]: approvers told by mail that something waits (bounded, quiet hours)
//! - [`peers`]: UAMP peers with their tokens in the keychain
//! - [`a2a`]: A2A agents let in with a token the user issues
//! - [`email`]: mail accounts followed for envelopes, their passwords in the keychain
//! - [`swarms`]: MAIL swarms with their tokens; tasks sent, followed, listed, imported
//! - [`sites`]: IntentWeb sites and the conversations with them
//! - [`guardian`]: the ASOP guardian's waiting steps, rules and sessions
//! - [`history`]: what arrived and what was done: inbox, receipts, envelopes, audit
//! - [`settings`]: how long history is kept
//! - [`limits`]: what this machine's store can do, for the benchmark's floor
//! - [`quorum`]: what several approvers must decide together, and their votes
//! - [`quiet`]: quiet hours, when prompts are collected into a digest instead of announced
//! - [`replies`]: answers to senders; a receipt's detail; a conversation in reply order
//! - [`risk`]: risk flags the user dismisses
//! - [`serve`]: where the doors listen and the gate they open onto, for both faces
//! - [`doors`]: the gate, its four doors and two outbound clients (each its own crate), composed once
//! - [`export`]: receipts, audit, conversations and guardian decisions as JSON
//! - [`approve_http`]: the approvers' HTTP API on the gate's listener
//! - [`approvers`]: devices that may decide what waits: invited, joined with a key, signed requests
//! - [`audit`]: the audit log's signed checkpoints, its export, and the check of either
//! - [`sealer`]: the gate's key signing every deciding row, and the newest sealed state kept
//! - [`witness`]: the newest audit checkpoint this machine saw
//! - [`device_witness`]: approver devices holding the newest checkpoint, checked against the log

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]

pub mod a2a;
pub mod approve_http;
pub mod approvers;
pub mod audit;
pub mod consent;
pub mod contacts;
pub mod context;
pub mod device_witness;
pub mod did_change;
pub mod doors;
pub mod email;
pub mod error;
pub mod executors;
pub mod export;
pub mod first_run;
pub mod guardian;
pub mod history;
pub mod limits;
pub mod mcp;
pub mod membership;
pub mod names;
pub mod notify;
pub mod peers;
pub mod qr;
pub mod quiet;
pub mod quorum;
pub mod replies;
pub mod risk;
pub mod sealer;
pub mod serve;
pub mod settings;
pub mod sites;
pub mod streams;
pub mod swarms;
pub mod target;
pub mod trust;
pub mod waiting;
pub mod witness;

/// The gate's clock, which the decisions a face passes on are made at.
pub use crate::doors::gate::clock;
pub use context::Context;
pub use error::{Code, CommandError};

pub type Result<T> = std::result::Result<T, CommandError>;

/// Runs blocking store work off the async workers.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| CommandError::new(Code::Internal, e.to_string()))?
}

pub(crate) fn now() -> String {
    gatehouse_gate::clock::utc_string(crate::doors::gate::clock::now())
}
