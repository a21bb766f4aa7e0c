//! The ASOP guardian as the user runs it: the user's agents (registered, waiting, blocked),
//! steps waiting for the user (answered to the running guardian that holds them), the rules
//! (checked before they are kept), and each session's timeline. Every change is audited.

use crate::trust::ASOP_SCOPE;
use crate::Context;
use gatehouse_asop::rules::{Action, Condition, Rule};
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};

use crate::{now, Code, CommandError, Result};

pub use crate::doors::guardian::{Guardian, UserAnswer};
pub use gatehouse_store::asop::{AsopRuleRow, AsopStepRow};

impl From<crate::doors::guardian::GuardianError> for CommandError {
    fn from(e: crate::doors::guardian::GuardianError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

/// Answers a waiting step; the agent hears it at once. Audited.
pub fn answer(ctx: &Context, guardian: Option<&Guardian>, row: i64, answer: UserAnswer) -> Result<()> {
    let store: &Store = &ctx.store;
    let g = guardian.ok_or_else(|| CommandError::new(Code::NotRunning, "the inbox is paused; the agent's request is gone"))?;
    g.answer(row, answer.clone())?;
    store.audit("asop.answer", None, &serde_json::json!({"row": row, "decision": answer.decision, "always": answer.always}), &now())?;
    Ok(())
}

pub fn rules(ctx: &Context) -> Result<Vec<AsopRuleRow>> {
    let store: &Store = &ctx.store;
    Ok(store.asop_rules()?)
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RuleInput {
    pub agent: String,
    pub method: String,
    pub tool: String,
    pub condition: Option<Condition>,
    pub action: Action,
    pub redact: Option<String>,
    pub note: Option<String>,
}

/// Adds a rule after checking it (a usable pattern for modify and for `matches`); a blank
/// agent, method or tool matches any. Audited.
pub fn rule_add(ctx: &Context, input: RuleInput) -> Result<AsopRuleRow> {
    let store: &Store = &ctx.store;
    let norm = |s: &str| match s.trim() {
        "" => "*".to_string(),
        t => t.to_string(),
    };
    let rule = Rule {
        id: 0,
        agent: norm(&input.agent),
        method: norm(&input.method),
        tool: norm(&input.tool),
        condition: input.condition.filter(|c| !c.argument.trim().is_empty()),
        action: input.action,
        redact: input.redact.filter(|r| !r.is_empty()),
        note: input.note.filter(|n| !n.trim().is_empty()),
    };
    rule.validate().map_err(|e| CommandError::new(Code::Invalid, e))?;
    let mut row = AsopRuleRow {
        id: 0,
        agent: rule.agent,
        method: rule.method,
        tool: rule.tool,
        condition: rule.condition.map(|c| serde_json::to_value(c).unwrap_or_default()),
        action: rule.action.as_str().into(),
        redact: rule.redact,
        note: rule.note,
        source: "user".into(),
        until: None,
        created_at: now(),
    };
    row.id = store.asop_rule_add(&row)?;
    store.audit("asop.rule_add", None, &serde_json::to_value(&row).unwrap_or_default(), &now())?;
    Ok(row)
}

pub fn rule_remove(ctx: &Context, id: i64) -> Result<()> {
    let store: &Store = &ctx.store;
    if !store.asop_rule_remove(id)? {
        return Err(CommandError::new(Code::NotFound, format!("no rule {id}")));
    }
    store.audit("asop.rule_remove", None, &serde_json::json!({"id": id}), &now())?;
    Ok(())
}

/// A session in the list: its agent, how many steps it took, and when the last was.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionItem {
    pub session_id: String,
    pub agent: Option<String>,
    pub steps: i64,
    pub last: String,
}

pub fn sessions(ctx: &Context, limit: usize) -> Result<Vec<SessionItem>> {
    let store: &Store = &ctx.store;
    Ok(store.asop_sessions(limit)?.into_iter().map(|(session_id, agent, steps, last)| SessionItem { session_id, agent, steps, last }).collect())
}

/// Every step of a session, in order.
pub fn session(ctx: &Context, session_id: &str) -> Result<Vec<AsopStepRow>> {
    let store: &Store = &ctx.store;
    Ok(store.asop_session(session_id)?)
}

/// One of the user's agents as the guardian knows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AgentItem {
    /// The agent's id (as it registers: `asop:<id>` in the trust registry).
    pub agent: String,
    /// `registered` (its steps are decided by rules or asked about), `waiting` (it asked to
    /// register and waits for the user) or `blocked`.
    pub state: String,
    pub name: Option<String>,
    /// When it was registered, first asked, or blocked.
    pub since: String,
}

/// Every agent that registered, asks to, or was blocked.
pub fn agents(ctx: &Context) -> Result<Vec<AgentItem>> {
    let store: &Store = &ctx.store;
    let id = |key: &str| key.strip_prefix("asop:").map(str::to_string);
    let mut out: Vec<AgentItem> = Vec::new();
    for t in store.trust_list()? {
        if let Some(agent) = id(&t.public_key) {
            out.push(AgentItem { agent, state: "registered".into(), name: Some(t.name), since: t.added_at });
        }
    }
    for p in store.pending_list()? {
        if let Some(agent) = id(&p.public_key) {
            out.push(AgentItem { agent, state: "waiting".into(), name: None, since: p.first_seen });
        }
    }
    for b in store.blocked_list()? {
        if let Some(agent) = id(&b.public_key) {
            out.push(AgentItem { agent, state: "blocked".into(), name: None, since: b.blocked_at });
        }
    }
    Ok(out)
}

/// Registers an agent that asked to (it must be waiting): its steps are then decided by the
/// rules, or asked about. The same as letting it in from the consent prompt; audited.
pub fn approve(ctx: &Context, agent: &str, name: Option<String>) -> Result<gatehouse_store::TrustEntry> {
    approve_with(ctx, agent, name, gatehouse_store::Policy::default())
}

/// [`approve`] with the limits the user gave (steps per hour or day, their size, every
/// step asked, registered only for a while): the gate applies them to the agent as to any
/// sender. It is registered for the guardian's scope whatever `policy` names.
pub fn approve_with(ctx: &Context, agent: &str, name: Option<String>, policy: gatehouse_store::Policy) -> Result<gatehouse_store::TrustEntry> {
    let agent = agent.trim().trim_start_matches("asop:");
    if agent.is_empty() {
        return Err(CommandError::new(Code::Invalid, "name the agent (its id)"));
    }
    let grant_until = policy.grant_until.into_iter().filter(|(s, _)| s == ASOP_SCOPE).collect();
    let policy = gatehouse_store::Policy { allowed_scopes: vec![ASOP_SCOPE.into()], grant_until, ..policy };
    let name = name.or_else(|| Some(format!("agent {agent}")));
    crate::trust::approve(ctx, &format!("asop:{agent}"), name, policy, None, chrono::Utc::now())
}

/// Blocks an agent: the guardian refuses its steps and it is never asked about again.
pub fn block(ctx: &Context, agent: &str) -> Result<()> {
    let agent = agent.trim().trim_start_matches("asop:");
    Ok(crate::trust::block(ctx, &crate::doors::guardian::agent_key(agent), chrono::Utc::now())?)
}
