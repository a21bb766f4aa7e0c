//! The ASOP guardian as the user runs it: steps waiting for the user (answered to the
//! running guardian that holds them), the rules (checked before they are kept), and each
//! session's timeline. Every change is audited.

use gatehouse_asop::rules::{Action, Condition, Rule};
use gatehouse_inbox::guardian::{Guardian, UserAnswer};
use gatehouse_store::asop::{AsopRuleRow, AsopStepRow};
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};

use crate::{now, Code, CommandError, Result};

impl From<gatehouse_inbox::guardian::GuardianError> for CommandError {
    fn from(e: gatehouse_inbox::guardian::GuardianError) -> Self {
        CommandError::coded(e.code(), e.to_string())
    }
}

/// Steps an agent is waiting on the user for (none while the inbox is paused: nothing is
/// held then).
pub fn pending(guardian: Option<&Guardian>) -> Result<Vec<AsopStepRow>> {
    match guardian {
        Some(g) => Ok(g.pending()?),
        None => Ok(Vec::new()),
    }
}

/// Answers a waiting step; the agent hears it at once. Audited.
pub fn answer(store: &Store, guardian: Option<&Guardian>, row: i64, answer: UserAnswer) -> Result<()> {
    let g = guardian.ok_or_else(|| CommandError::new(Code::NotRunning, "the inbox is paused; the agent's request is gone"))?;
    g.answer(row, answer.clone())?;
    store.audit("asop.answer", None, &serde_json::json!({"row": row, "decision": answer.decision, "always": answer.always}), &now())?;
    Ok(())
}

pub fn rules(store: &Store) -> Result<Vec<AsopRuleRow>> {
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
pub fn rule_add(store: &Store, input: RuleInput) -> Result<AsopRuleRow> {
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
        created_at: now(),
    };
    row.id = store.asop_rule_add(&row)?;
    store.audit("asop.rule_add", None, &serde_json::to_value(&row).unwrap_or_default(), &now())?;
    Ok(row)
}

pub fn rule_remove(store: &Store, id: i64) -> Result<()> {
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

pub fn sessions(store: &Store, limit: usize) -> Result<Vec<SessionItem>> {
    Ok(store.asop_sessions(limit)?.into_iter().map(|(session_id, agent, steps, last)| SessionItem { session_id, agent, steps, last }).collect())
}

/// Every step of a session, in order.
pub fn session(store: &Store, session_id: &str) -> Result<Vec<AsopStepRow>> {
    Ok(store.asop_session(session_id)?)
}
