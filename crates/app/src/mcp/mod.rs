//! MCP servers the user's AI app reaches through Gatehouse.
//!
//! - [`wrap`]: `gatehouse mcp wrap`, what an app's MCP configuration runs instead of the
//!   server: the server as a child, each call asked of the running gate.
//! - [`remote`]: servers the user adds by address, served to their app by the gate.
//! - [`servers`]: the servers known (let in, waiting, blocked), their rules and calls.
//! - [`judge`]: at the gate, a call of a server let in decided as a step of one of the
//!   user's own agents (the guardian's rules, or the user asked).

pub mod judge;
pub mod remote;
pub mod servers;
pub mod wrap;

pub use judge::{agent_id, GuardianJudge};
pub use servers::{accept, allow, log, rule_add, rules, servers, set_timeout, tools, McpServerItem, McpTools};
pub use wrap::{gate_url, key_file, wrap, Server};
