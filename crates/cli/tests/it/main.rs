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
mod mcp;
mod printing;
mod proxy;
mod rewind;
mod runs_here;
mod sealed_state;
mod sites;
mod team;
// The CLI's one way to print (src/terminal.rs), tested as it is in `printing`.
#[allow(dead_code, unused_imports, unused_macros)]
#[path = "../../src/terminal.rs"]
mod terminal;
mod uamp;
