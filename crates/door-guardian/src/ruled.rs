//! A step the user's rules decide, decided and recorded in one go on the calling thread,
//! which may block (the store is read and written): the guardian's own steps, and another
//! door's, judged in the same trip off the async workers as its gate's admission (an MCP
//! call). Each trip off the workers costs thread switches on every step.

use gatehouse_asop::jsonrpc::{self, RpcError};
use gatehouse_asop::rules::{self, Action};
use gatehouse_asop::{schema, Step, METHODS};
use gatehouse_store::asop::NewAsopStep;
use gatehouse_store::{Durable, StoreError};
use serde_json::Value;

use crate::{internal, now, outcome, Guardian, GuardianEvent};

/// The record of `req` (the step `step` of it), but for its decision and who made it.
pub(crate) fn record(req: &jsonrpc::Request, step: &Step, decision: &str, message: Option<String>, rule_id: Option<i64>, by: &str) -> NewAsopStep {
    NewAsopStep {
        session_id: step.session_id.clone(),
        turn_id: step.turn_id.clone(),
        step_id: step.step_id.clone(),
        agent_id: step.agent_id.clone(),
        agent_name: step.agent_name.clone(),
        method: req.method.clone(),
        summary: step.describe(),
        reasoning: step.reasoning.clone(),
        request: req.raw.clone(),
        decision: decision.into(),
        message,
        rule_id,
        decided_by: Some(by.into()),
        at: now(),
    }
}

/// A step read from ASOP's words and checked against its schema, ready to decide.
pub(crate) fn read(raw: &Value) -> Result<(jsonrpc::Request, Step), RpcError> {
    let req = jsonrpc::read(raw).map_err(|(_, e)| e)?;
    if !METHODS.contains(&req.method.as_str()) || req.method == "ping" {
        return Err(RpcError::new(jsonrpc::METHOD_NOT_FOUND, format!("Method not found: {}", req.method)));
    }
    schema::check(&req.method, &req.raw)?;
    let step = Step::of(&req.method, &req.params);
    if step.agent_id.is_none() {
        return Err(RpcError::new(jsonrpc::AGENT_NOT_REGISTERED, "The step names no agent (context.agent)"));
    }
    Ok((req, step))
}

/// What a rule decided: the result the agent is given, the step's row and the action; or
/// why the rule could not be applied.
pub(crate) type Ruled = Result<(Value, i64, Action), RpcError>;

impl Guardian {
    /// What the user's rules decide of `req` (`held`: its agent's every step is asked of
    /// the user, whatever they say), recorded: the result, its row and the action, and when
    /// the record is on disk (`flush_later`: its commit does not wait for it; otherwise it
    /// is on disk already); `None` when no rule decides it (or one says to ask).
    pub(crate) fn by_rule(&self, req: &jsonrpc::Request, step: &Step, held: bool, flush_later: bool) -> Result<Option<(Ruled, Durable)>, StoreError> {
        if held {
            return Ok(None);
        }
        let rules = self.rules()?;
        let Some(r) = rules::decide(&rules, step).filter(|r| r.action != Action::Ask) else { return Ok(None) };
        let result = match outcome(&req.raw, r.action, r.note.clone(), r.redact.as_deref(), "rule") {
            Ok(v) => v,
            Err(e) => return Ok(Some((Err(e), Durable::now()))),
        };
        let recorded = record(req, step, r.action.as_str(), result["message"].as_str().map(str::to_string), Some(r.id), "rule");
        let (row, durable) = match flush_later {
            true => self.store.asop_step_add_flushed_later(&recorded)?,
            false => (self.store.asop_step_add(&recorded)?, Durable::now()),
        };
        Ok(Some((Ok((result, row, r.action)), durable)))
    }

    /// Decides a step of an agent another door let in (`held` as for
    /// [`Guardian::judge_admitted`]) by the user's rules alone, here, on a thread that may
    /// block: the result, recorded and announced, and when its record is on disk (its
    /// commit does not wait for the disk: what the step allowed may start meanwhile, but
    /// nothing that depends on it is acknowledged before); `Ok(None)` when no rule decides
    /// it (the door goes on with [`Guardian::judge_admitted`], which asks the user).
    pub fn judge_by_rule(&self, raw: &Value, held: bool) -> Result<Option<(Value, Durable)>, RpcError> {
        let (req, step) = read(raw)?;
        match self.by_rule(&req, &step, held, true).map_err(internal)? {
            None => Ok(None),
            Some((ruled, durable)) => {
                let (result, row, action) = ruled?;
                let _ = self.events.send(GuardianEvent::Decided { row, decision: action.as_str().into() });
                Ok(Some((result, durable)))
            }
        }
    }
}
