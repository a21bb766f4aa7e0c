//! MAIL 1.3 (Multi-Agent Interface Layer) as Gatehouse reads it: a viewer and client of
//! swarms that work on the user's behalf.
//!
//! - [`schema`]: the spec's own JSON Schemas (copied byte for byte), errors naming the field.
//! - [`model`]: typed messages, addresses, priority tiers, task owners and contributors.
//! - [`events`]: what a swarm's `POST /message` SSE stream says, event by event.
//! - [`import`]: task logs (JSON, JSON array or JSONL) read with line-numbered errors.
//! - [`client`]: the REST transport (bearer token, roles), with errors a user can act on.

pub mod client;
pub mod events;
pub mod import;
pub mod model;
pub mod schema;

pub use client::{ClientError, SendMessage, SwarmClient};
pub use events::TaskEvent;
pub use model::{Address, AddressType, Contributor, Interswarm, Message, MsgType, Payload};
pub use schema::MailError;
