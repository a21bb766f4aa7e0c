//! The MCP servers Gatehouse knows, as the window and `gatehouse mcp` show them: each by
//! the name its app runs it under and its own key; let in, waiting, or blocked; the rules
//! that decide its calls; its calls and what became of them.

use serde::Serialize;

use crate::doors::mcp::{at_gate::SCOPE, signed};
use crate::guardian::{AsopRuleRow, AsopStepRow, RuleInput};
use crate::{Code, CommandError, Context, Result};
use gatehouse_store::{Policy, TrustEntry};

/// One MCP server.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpServerItem {
    /// The name its app's configuration runs it under (`gatehouse mcp wrap --name`).
    pub name: String,
    /// Its registry key: the name and its own key.
    pub key: String,
    /// `let_in` (its calls are decided by your rules, or asked about), `waiting` (it asked
    /// to be let in) or `blocked`.
    pub state: String,
    /// What you called it when you let it in.
    pub shown_as: Option<String>,
    /// When it was let in, first asked, or blocked.
    pub since: String,
}

/// Every server known, let in first.
pub fn servers(ctx: &Context) -> Result<Vec<McpServerItem>> {
    let store = &ctx.store;
    let item = |key: &str, state: &str, shown_as: Option<String>, since: &str| {
        signed::name_of(key).map(|name| McpServerItem { name: name.into(), key: key.into(), state: state.into(), shown_as, since: since.into() })
    };
    let mut out: Vec<McpServerItem> = Vec::new();
    out.extend(store.trust_list()?.iter().filter_map(|t| item(&t.public_key, "let_in", Some(t.name.clone()), &t.added_at)));
    out.extend(store.pending_list()?.iter().filter_map(|p| item(&p.public_key, "waiting", None, &p.first_seen)));
    out.extend(store.blocked_list()?.iter().filter_map(|b| item(&b.public_key, "blocked", None, &b.blocked_at)));
    Ok(out)
}

/// The one server `which` names in `state` (its name, or its whole key).
fn one(ctx: &Context, which: &str, state: &str) -> Result<McpServerItem> {
    let which = which.trim().to_ascii_lowercase();
    let found: Vec<McpServerItem> = servers(ctx)?.into_iter().filter(|s| s.state == state && (s.name == which || s.key == which)).collect();
    match found.len() {
        1 => Ok(found.into_iter().next().expect("one")),
        0 => Err(CommandError::new(Code::NotFound, format!("no MCP server {which:?} is {}", state.replace('_', " ")))),
        _ => Err(CommandError::new(
            Code::Invalid,
            format!(
                "{} servers run as {which:?} with different keys; name one by its key: {}",
                found.len(),
                found.iter().map(|s| s.key.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// Lets in a server that asked (by its name or key): its calls are then decided by your
/// rules, or asked about. The same as letting it in from Waiting for you; audited.
/// The tools it offered (`gatehouse mcp tools` shows them) are pinned as they are.
pub fn allow(ctx: &Context, which: &str, shown_as: Option<String>) -> Result<(TrustEntry, Vec<String>)> {
    let s = one(ctx, which, "waiting")?;
    let offered: Vec<(String, String)> = ctx.store.mcp_offers(Some(&s.key))?.into_iter().filter(|o| !o.refused).map(|o| (o.tool, o.digest)).collect();
    let policy = Policy { allowed_scopes: vec![SCOPE.into()], ..Policy::default() };
    let entry = crate::trust::approve(ctx, &s.key, shown_as, policy, None, chrono::Utc::now())?;
    ctx.store.mcp_accept(&s.key, &offered, &crate::now())?;
    Ok((entry, offered.into_iter().map(|(t, _)| t).collect()))
}

/// A server's tools: as the user let them in, and what it lists that differs (held).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpTools {
    pub server: McpServerItem,
    pub pinned: Vec<gatehouse_store::mcp::McpTool>,
    pub held: Vec<crate::waiting::ToolShown>,
}

/// The tools of the server `which` (let in, or waiting).
pub fn tools(ctx: &Context, which: &str) -> Result<McpTools> {
    let server = one(ctx, which, "let_in").or_else(|_| one(ctx, which, "waiting"))?;
    let pinned = ctx.store.mcp_pins(&server.key)?;
    let held = crate::waiting::tool_shown(&ctx.store.mcp_offers(Some(&server.key))?, &pinned);
    Ok(McpTools { server, pinned, held })
}

/// Accepts every tool the server `which` (let in) lists that differs from its pins, as
/// they are now: they reach the user's AI from its next list. Audited. Returns their
/// names.
pub fn accept(ctx: &Context, which: &str) -> Result<Vec<String>> {
    let s = one(ctx, which, "let_in")?;
    let offered: Vec<(String, String)> = ctx.store.mcp_offers(Some(&s.key))?.into_iter().filter(|o| !o.refused).map(|o| (o.tool, o.digest)).collect();
    if offered.is_empty() {
        return Err(CommandError::new(Code::NotFound, format!("no tool of {} waits to be accepted", s.name)));
    }
    ctx.store.mcp_accept(&s.key, &offered, &crate::now())?;
    let names: Vec<String> = offered.into_iter().map(|(t, _)| t).collect();
    ctx.store.audit("mcp.tools_accept", Some(&s.key), &serde_json::json!({"tools": names}), &crate::now())?;
    Ok(names)
}

/// The name a server is known by in its rules and calls: `which` is its name, or its key.
fn name_in(which: &str) -> &str {
    signed::name_of(which).unwrap_or(which)
}

/// The rules that decide a server's calls (those for every agent included).
pub fn rules(ctx: &Context, name: &str) -> Result<Vec<AsopRuleRow>> {
    let agent = super::agent_id(name_in(name));
    // A server's steps name it as their provider too (`judge::context`): the rules for
    // every agent of that provider decide its calls as well, so they are listed with its own.
    let provider = |r: &AsopRuleRow| r.agent.strip_prefix("provider:").is_some_and(|p| p.trim().eq_ignore_ascii_case(name_in(name)));
    Ok(crate::guardian::rules(ctx)?.into_iter().filter(|r| r.agent == agent || r.agent == "*" || provider(r)).collect())
}

/// A rule for one server's tool (`*`: every tool); audited.
pub fn rule_add(ctx: &Context, name: &str, mut input: RuleInput) -> Result<AsopRuleRow> {
    let name = name_in(name);
    if !signed::name_ok(name) {
        return Err(CommandError::new(Code::Invalid, format!("{name:?}: a server's name is 1 to 64 letters, digits, - or _")));
    }
    input.agent = super::agent_id(name);
    input.method = "steps/toolCallRequest".into();
    crate::guardian::rule_add(ctx, input)
}

/// A server's last `limit` calls, newest first, with what became of each.
pub fn log(ctx: &Context, name: &str, limit: usize) -> Result<Vec<AsopStepRow>> {
    Ok(ctx.store.asop_agent_steps(&super::agent_id(name_in(name)), limit)?)
}

/// How long a call of the server `which` (its name or key) waits for the user before it is
/// refused (failing closed): `seconds`, from 1 to the guardian's longest wait.
pub fn set_timeout(ctx: &Context, which: &str, seconds: u64) -> Result<std::time::Duration> {
    let longest = crate::doors::guardian::MAX_ASK_TIMEOUT;
    if seconds == 0 || seconds > longest.as_secs() {
        return Err(CommandError::new(Code::Invalid, format!("a call waits for you from 1 to {} seconds", longest.as_secs())));
    }
    let name = name_in(which);
    if !signed::name_ok(name) {
        return Err(CommandError::new(Code::Invalid, format!("{name:?}: a server's name is 1 to 64 letters, digits, - or _")));
    }
    let wait = std::time::Duration::from_secs(seconds);
    ctx.store.asop_agent_ping(&super::agent_id(name), Some(wait.as_millis() as u64), &crate::now())?;
    ctx.store.audit("mcp.timeout", Some(name), &serde_json::json!({"seconds": seconds}), &crate::now())?;
    Ok(wait)
}
