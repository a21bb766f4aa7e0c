//! The desktop app in its real window: WebKitWebDriver through tauri-driver, under the
//! Xvfb display that `scripts/test.sh` provides, with the real keychain (Secret Service),
//! a real SQLite file, the inbox on a real loopback port and a real watched folder.
//! Fails (never skips) without a display or keyring.

mod a11y;
mod a2a;
mod approvers;
mod contacts;
mod email;
mod epp;
mod first_run;
mod grants;
mod harness;
mod keys;
mod mcp;
mod model;
mod newuser;
mod notify;
mod peers;
mod risk;
mod screens;
mod sealed;
mod tasks;
mod team;
mod zoom;
