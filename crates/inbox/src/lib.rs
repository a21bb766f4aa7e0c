//! The Gatehouse inbox: everything between bytes arriving and a receipt going back.
//!
//! - [`pipeline`]: the one pipeline of spec 5.1 (replay, trust, policy, durable accept)
//! - [`executor`]: what runs for an accepted prompt, per scope (spec 9)
//! - [`runner`]: runs executors off the request path and after restarts
//! - [`http`]: the HTTP transport (axum router)
//! - [`folder`]: the watched-folder transport
//! - [`service`]: opening a data dir and running all of the above until shutdown

pub mod executor;
pub mod folder;
pub mod http;
pub mod pipeline;
pub mod runner;
pub mod service;

pub use executor::{ExecutorConfig, ExecutorSpec};
pub use pipeline::{Inbox, OpenError, Outcome};
pub use service::{open, run, Opened, ServeOptions};
