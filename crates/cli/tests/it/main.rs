//! The CLI's integration tests in one binary, a module per concern (one link, not seven).
mod a2a;
mod approvers;
mod cli;
mod common;
mod email;
mod guardian;
mod load;
mod mail;
mod mail_reference;
mod sites;
mod team;
mod uamp;
