//! What a consent decision names, and what is knocking: both depend on the doors (where a
//! knock arrived, the form of a door's keys, the scopes a door keeps for itself), so they
//! are decided here, where the application knows the doors, and never in the gate.

use crate::doors::gate::consent::{is_scope_like, ConsentError};
use crate::doors::{guardian, intent};
use serde::{Deserialize, Serialize};

/// What a prompt decides on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConsentTarget {
    UnknownSender {
        public_key: String,
        /// The knock the prompt showed (its receipt id): the decision is carried out
        /// only on that one. A sender that knocked again since is asked about anew.
        #[serde(default)]
        knock: Option<String>,
    },
    Held {
        row_id: i64,
    },
    HeldAsk {
        stream_id: String,
    },
    /// A trusted sender's signature named a key not kept for it.
    KeyChange {
        sender: String,
    },
    /// A step of one of the user's own agents (an MCP server's call among them) that waits
    /// for the user: allowed or denied from any device, as the window does.
    Step {
        row: i64,
    },
    /// An MCP server's tools that differ from those the user let in, as shown (`digest`).
    ToolChange {
        server: String,
        digest: String,
    },
}

impl ConsentTarget {
    /// How the audit log and the deferred prompts name it.
    pub fn key(&self) -> String {
        match self {
            ConsentTarget::UnknownSender { public_key, .. } => gatehouse_store::sender_key(public_key),
            ConsentTarget::Held { row_id } => format!("envelope-row:{row_id}"),
            ConsentTarget::HeldAsk { stream_id } => format!("uamp-stream:{stream_id}"),
            ConsentTarget::KeyChange { sender } => format!("key-change:{}", gatehouse_store::sender_key(sender)),
            ConsentTarget::ToolChange { server, .. } => format!("mcp-tools:{}", gatehouse_store::sender_key(server)),
            ConsentTarget::Step { row } => format!("asop-step:{row}"),
        }
    }
}

/// What a key is, by the door that recorded it: a knock's door (each door records its own
/// name with the knock), a trust entry's door (recorded when it was made); senders cannot
/// choose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    EppSender,
    UampAgent,
    IntentSite,
    AsopAgent,
    /// An MCP server the user's AI app reaches through Gatehouse, known by its name and its
    /// own key (`gatehouse mcp wrap`).
    McpServer,
    /// An A2A agent, known by a token the user issued or its certificate's key.
    A2aAgent,
    /// A knock recorded by a door this node does not run (a newer node of the team's, or
    /// a row no door wrote): it can be denied or blocked, never let in from here.
    OtherDoor,
}

impl Source {
    /// What knocked, by the door that recorded the knock.
    pub fn at(door: &str) -> Source {
        match door {
            guardian::DOOR => Source::AsopAgent,
            crate::doors::mcp::DOOR => Source::McpServer,
            intent::DOOR => Source::IntentSite,
            crate::doors::uamp::DOOR => Source::UampAgent,
            crate::doors::a2a::DOOR => Source::A2aAgent,
            crate::doors::epp::DOOR => Source::EppSender,
            _ => Source::OtherDoor,
        }
    }

    /// The one scope a grant for this source may name, when it is fixed.
    pub fn fixed_scope(self) -> Option<&'static str> {
        match self {
            Source::AsopAgent => Some(guardian::SCOPE),
            Source::McpServer => Some(crate::doors::mcp::at_gate::SCOPE),
            Source::IntentSite => Some(intent::SCOPE),
            Source::EppSender | Source::UampAgent | Source::A2aAgent | Source::OtherDoor => None,
        }
    }
}

/// A consent prompt grants exactly the one scope it showed, and only a scope that fits
/// what is knocking: never `*`, never a reserved scope to anything but its own door.
pub fn grantable(source: Source, scope: &str) -> Result<(), ConsentError> {
    if !is_scope_like(scope) {
        return Err(ConsentError::Invalid(format!("{scope:?} is not a single scope; a prompt grants one scope, never all")));
    }
    if source == Source::OtherDoor {
        return Err(ConsentError::Invalid("this knocked at a door this Gatehouse does not run: it can be denied or blocked here, not let in".into()));
    }
    match source.fixed_scope() {
        Some(fixed) if fixed != scope => Err(ConsentError::Invalid(format!("this knock can only be let in for \"{fixed}\""))),
        None if crate::doors::RESERVED_SCOPES.iter().any(|(_, s)| *s == scope) => {
            Err(ConsentError::Invalid(format!("\"{scope}\" is reserved for Gatehouse's own agents and sites")))
        }
        _ => Ok(()),
    }
}
