//! An MCP server the user let in lists a tool that differs from what they let in (a new
//! tool, or one whose words or schema changed: a "rug pull"). The tool is withheld from
//! the user's AI and its calls refused until the user has seen the difference and accepted
//! it; refused, it stays held and is not asked about again until it changes again.

use crate::doors::gate::consent::ConsentError;
use chrono::{DateTime, Utc};
use gatehouse_store::mcp::{offers_digest, McpTool};
use gatehouse_store::Store;
use serde::Serialize;

use super::{ConsentItem, ConsentTarget, Decision, DecisionOutcome};
use super::{Decided, Holds, Later};

pub(super) struct ToolChanges;

/// One tool as the user is shown it: as they let it in (none: new) and as listed now, with
/// what in its new words looks like an attempt to steer the user's AI.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolShown {
    pub tool: String,
    pub pinned: Option<serde_json::Value>,
    pub now: serde_json::Value,
    /// What it says now, as the user reads it and the risk flags are placed in: its
    /// description, then what it takes (each argument, its type and its own words).
    pub words: String,
    pub risk: Vec<gatehouse_risk::Flag>,
}

/// A tool's words as the user reads them: its description, then its arguments from its
/// input schema (where a server can hide words for the model too).
pub(crate) fn words(pin: &serde_json::Value) -> String {
    use serde_json::Value;
    let d = pin.get("description").and_then(Value::as_str).unwrap_or_default();
    let schema: Value = pin.get("input_schema").and_then(Value::as_str).and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let args: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, p)| {
            let kind = p.get("type").and_then(Value::as_str).unwrap_or("any");
            let optional = if required.contains(&name.as_str()) { "" } else { ", optional" };
            let said = p.get("description").and_then(Value::as_str).map(|s| format!(": {s}")).unwrap_or_default();
            format!("{name} ({kind}{optional}){said}")
        })
        .collect();
    match args.is_empty() {
        true => d.to_string(),
        false => format!("{d}\nTakes: {}", args.join("; ")),
    }
}

/// A server's offered tools as shown (each with its pin, when it had one).
pub fn shown(offers: &[McpTool], pins: &[McpTool]) -> Vec<ToolShown> {
    offers
        .iter()
        .filter(|o| !o.refused)
        .map(|o| {
            let words = words(&o.pin);
            ToolShown {
                tool: o.tool.clone(),
                pinned: pins.iter().find(|p| p.tool == o.tool).map(|p| p.pin.clone()),
                // A server is no one the user knows: every link of its is flagged.
                risk: gatehouse_risk::scan(&words, &[]),
                words,
                now: o.pin.clone(),
            }
        })
        .collect()
}

impl Holds for ToolChanges {
    fn describe(&self, store: &Store, _now: DateTime<Utc>, later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        let offers = store.mcp_offers(None)?;
        // Each server once, in the order it first listed a change (offers come by time,
        // so one server's may stand apart).
        let mut seen = std::collections::HashSet::new();
        let servers: Vec<&str> = offers.iter().filter(|o| !o.refused).map(|o| o.server.as_str()).filter(|s| seen.insert(*s)).collect();
        for server in servers {
            // A server not let in shows what it offers with its knock.
            let Some(entry) = store.trust_get(server)? else { continue };
            let mine: Vec<McpTool> = offers.iter().filter(|o| o.server == server).cloned().collect();
            let digest = offers_digest(&mine);
            items.push(ConsentItem::ToolChange {
                later: later.of(ConsentTarget::ToolChange { server: server.to_string(), digest: digest.clone() }),
                tools: shown(&mine, &store.mcp_pins(server)?),
                server: server.to_string(),
                server_name: entry.name,
                digest,
            });
        }
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.tool_changes
    }

    fn holds(&self, target: &ConsentTarget) -> bool {
        matches!(target, ConsentTarget::ToolChange { .. })
    }

    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        let ConsentTarget::ToolChange { server, digest } = target else { return Err(ConsentError::Gone) };
        let Decided { gate, decision, .. } = *d;
        let (store, at) = (gate.store(), d.at());
        let offers: Vec<McpTool> = store.mcp_offers(Some(server))?.into_iter().filter(|o| !o.refused).collect();
        if offers.is_empty() {
            return Err(ConsentError::Gone);
        }
        // Decided on exactly the tools the user saw: a server that listed others since is
        // shown again.
        if offers_digest(&offers) != *digest && decision != Decision::Block {
            return Err(ConsentError::Changed(
                "Nothing was decided: the server listed other tools since this was shown. Look at them again, then decide.".into(),
            ));
        }
        let name = store.trust_get(server)?.map(|t| t.name).unwrap_or_else(|| server.clone());
        let tools = offers.iter().map(|o| o.tool.as_str()).collect::<Vec<_>>().join(", ");
        let message = match decision {
            Decision::AskLater => return Err(ConsentError::Invalid("a prompt is put off, not decided".into())),
            Decision::AllowOnce | Decision::AlwaysAllowScope => {
                let seen: Vec<(String, String)> = offers.iter().map(|o| (o.tool.clone(), o.digest.clone())).collect();
                store.mcp_accept(server, &seen, &at)?;
                format!("Accepted for {name}: {tools}. Your AI sees them as shown from its next list; their calls are decided by your rules, or asked about.")
            }
            Decision::Deny => {
                for o in &offers {
                    store.mcp_refuse(server, &o.tool, &o.digest)?;
                }
                format!("Kept held for {name}: {tools}. Your AI does not see them, and you are not asked again unless they change again.")
            }
            Decision::Block => {
                store.block(server, "blocked from a changed MCP tool", &at)?;
                format!("Blocked {name}. None of its tools are called.")
            }
        };
        Ok(DecisionOutcome { message, delivered: None })
    }
}
