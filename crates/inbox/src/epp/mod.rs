//! The EPP door: envelopes arrive over HTTP or through the watched folder, go through the
//! pipeline of spec 5.1 into the gate, and answers can go back as signed replies.
//!
//! - [`pipeline`]: the verification steps in order (replay, trust, policy, durable accept)
//! - [`http`]: the HTTP transport (axum router)
//! - [`folder`]: the watched-folder transport
//! - [`reply`]: answers sent back to senders as signed EPP envelopes in their conversation
//! - [`work`]: an accepted envelope as its executor sees it (for the gate's runner)

pub mod folder;
pub mod http;
pub mod pipeline;
pub mod reply;
pub mod work;
