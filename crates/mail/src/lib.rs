//! MAIL (Multi-Agent Interface Layer) 1.3 and 2.0 as Gatehouse reads them: a viewer and
//! client of swarms that work on the user's behalf.
//!
//! - [`schema`]: the spec's own JSON Schemas (copied byte for byte), errors naming the field.
//! - [`model`]: typed messages, addresses, priority tiers, task owners and contributors.
//! - [`events`]: what a swarm's `POST /message` SSE stream says, event by event.
//! - [`import`]: task logs (JSON, JSON array or JSONL) read with line-numbered errors.
//! - [`client`]: the REST transport (bearer token, roles), with errors a user can act on.
//! - [`v2`]: MAIL 2.0: password login, boxes, messages and their conversations, send.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]
// A peer's numbers and lengths never wrap an addition, and no index is trusted to be in
// range (a JSON value is read with get(), written through as_object_mut()).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

pub mod client;
pub mod events;
pub mod import;
pub mod model;
pub mod schema;
pub mod v2;

pub use client::{ClientError, SendMessage, SwarmClient};
pub use events::TaskEvent;
pub use model::{Address, AddressType, Contributor, Interswarm, Message, MsgType, Payload};
pub use schema::MailError;
