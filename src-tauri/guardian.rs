//! The ASOP guardian in the window: steps waiting for the user (answered here, held by the
//! guardian until then), the rules, and each session's timeline.

use gatehouse_asop::rules::{Action, Condition, Rule};
use gatehouse_inbox::guardian::UserAnswer;
use gatehouse_store::asop::{AsopRuleRow, AsopStepRow};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};

use crate::commands::{blocking, Code, CommandError, CoreState};

type Result<T> = std::result::Result<T, CommandError>;

fn now() -> String {
    gatehouse_epp::utc_string(chrono::Utc::now())
}

/// Steps an agent is waiting on the user for.
#[tauri::command]
#[specta::specta]
pub async fn asop_pending(core: CoreState<'_>) -> Result<Vec<AsopStepRow>> {
    let c = core.inner().clone();
    blocking(move || match c.inbox().door::<gatehouse_inbox::guardian::Guardian>() {
        Some(g) => Ok(g.pending()?),
        None => Ok(Vec::new()),
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn asop_answer<R: Runtime>(app: AppHandle<R>, core: CoreState<'_>, row: i64, answer: UserAnswer) -> Result<()> {
    let c = core.inner().clone();
    let g = c
        .inbox()
        .door::<gatehouse_inbox::guardian::Guardian>()
        .ok_or_else(|| CommandError::new(Code::NotRunning, "the inbox is paused; the agent's request is gone"))?;
    g.answer(row, answer.clone()).map_err(|e| CommandError::coded(e.code(), e.to_string()))?;
    blocking(move || Ok(c.store.audit("asop.answer", None, &serde_json::json!({"row": row, "decision": answer.decision, "always": answer.always}), &now())?))
        .await?;
    crate::tray::refresh(&app);
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn asop_rules(core: CoreState<'_>) -> Result<Vec<AsopRuleRow>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.asop_rules()?)).await
}

#[derive(Deserialize, specta::Type)]
pub struct RuleInput {
    pub agent: String,
    pub method: String,
    pub tool: String,
    pub condition: Option<Condition>,
    pub action: Action,
    pub redact: Option<String>,
    pub note: Option<String>,
}

/// Adds a rule after checking it (a usable pattern for modify and for `matches`).
#[tauri::command]
#[specta::specta]
pub async fn asop_rule_add(core: CoreState<'_>, input: RuleInput) -> Result<AsopRuleRow> {
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
    let c = core.inner().clone();
    blocking(move || {
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
        row.id = c.store.asop_rule_add(&row)?;
        c.store.audit("asop.rule_add", None, &serde_json::to_value(&row).unwrap_or_default(), &now())?;
        Ok(row)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn asop_rule_remove(core: CoreState<'_>, id: i64) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || {
        if !c.store.asop_rule_remove(id)? {
            return Err(CommandError::new(Code::NotFound, format!("no rule {id}")));
        }
        c.store.audit("asop.rule_remove", None, &serde_json::json!({"id": id}), &now())?;
        Ok(())
    })
    .await
}

#[derive(Serialize, specta::Type)]
pub struct SessionItem {
    pub session_id: String,
    pub agent: Option<String>,
    pub steps: i64,
    pub last: String,
}

#[tauri::command]
#[specta::specta]
pub async fn asop_sessions(core: CoreState<'_>) -> Result<Vec<SessionItem>> {
    let c = core.inner().clone();
    blocking(move || {
        Ok(c.store.asop_sessions(200)?.into_iter().map(|(session_id, agent, steps, last)| SessionItem { session_id, agent, steps, last }).collect())
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn asop_session(core: CoreState<'_>, session_id: String) -> Result<Vec<AsopStepRow>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.asop_session(&session_id)?)).await
}
