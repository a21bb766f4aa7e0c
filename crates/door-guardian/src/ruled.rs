//! A step the user's rules decide, decided and recorded in one go on the calling thread,
//! which may block (the store is read and written): the guardian's own steps, and another
//! door's, judged in the same trip off the async workers as its gate's admission (an MCP
//! call). Each trip off the workers costs thread switches on every step.

use gatehouse_asop::jsonrpc::{self, RpcError};
use gatehouse_asop::rules::{self, Action};
use gatehouse_asop::{schema, Step, METHODS};
use gatehouse_store::asop::NewAsopStep;
use gatehouse_store::{AcceptRefusal, Durable, RateCount, StoreError};
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

/// A step a rule decided, recorded (and when it is on disk); or the count it was to be
/// recorded with, refused (nothing recorded).
pub(crate) type Kept = Result<(Ruled, Durable), AcceptRefusal>;

/// How a step a rule decides is recorded.
pub(crate) enum Recording<'a> {
    /// Its commit waits for the disk.
    Durable,
    /// Its commit does not wait for the disk (it is on disk once the [`Durable`] is done).
    FlushedLater,
    /// As [`Recording::FlushedLater`], and counted against its sender's rate in the same
    /// transaction (for a door that let it in uncounted).
    Counted(&'a RateCount),
}

/// What the user's rules made of a step another door let in ([`Guardian::judge_by_rule`]).
#[derive(Debug)]
pub enum ByRule {
    /// Decided and recorded (counted, when its count was given): the result, and when its
    /// record is on disk.
    Decided(Value, Durable),
    /// No rule decides it (or one says to ask): nothing was recorded or counted.
    Undecided,
    /// Its count was refused (the registry changed since the door let it in, or its rate
    /// is over): nothing was recorded; the door judges it again.
    NotCounted,
}

impl Guardian {
    /// What the user's rules decide of `req` (`held`: its agent's every step is asked of
    /// the user, whatever they say), recorded as `recording` says: the result, its row and
    /// the action, and when the record is on disk; `None` when no rule decides it (or one
    /// says to ask); the count's refusal when it was to be counted and was not (nothing
    /// recorded).
    pub(crate) fn by_rule(&self, req: &jsonrpc::Request, step: &Step, held: bool, recording: Recording<'_>) -> Result<Option<Kept>, StoreError> {
        if held {
            return Ok(None);
        }
        let rules = self.rules()?;
        let Some(r) = rules::decide(&rules, step).filter(|r| r.action != Action::Ask) else { return Ok(None) };
        let result = match outcome(&req.raw, r.action, r.note.clone(), r.redact.as_deref(), "rule") {
            Ok(v) => v,
            Err(e) => return Ok(Some(Ok((Err(e), Durable::now())))),
        };
        let recorded = record(req, step, r.action.as_str(), result["message"].as_str().map(str::to_string), Some(r.id), "rule");
        let (row, durable) = match recording {
            Recording::Durable => (self.store.asop_step_add(&recorded)?, Durable::now()),
            Recording::FlushedLater => self.store.asop_step_add_flushed_later(&recorded)?,
            Recording::Counted(count) => match self.store.asop_step_add_counted(&recorded, count)? {
                Ok(kept) => kept,
                Err(refused) => return Ok(Some(Err(refused))),
            },
        };
        Ok(Some(Ok((Ok((result, row, r.action)), durable))))
    }

    /// Decides a step of an agent another door let in (`held` as for
    /// [`Guardian::judge_admitted`]) by the user's rules alone, here, on a thread that may
    /// block: the result, recorded and announced, and when its record is on disk (its
    /// commit does not wait for the disk: what the step allowed may start meanwhile, but
    /// nothing that depends on it is acknowledged before). `count`: the door let it in
    /// uncounted; it is counted in its record's transaction. When no rule decides it the
    /// door goes on with [`Guardian::judge_admitted`], which asks the user.
    pub fn judge_by_rule(&self, raw: &Value, held: bool, count: Option<&RateCount>) -> Result<ByRule, RpcError> {
        let (req, step) = read(raw)?;
        let recording = match count {
            Some(c) => Recording::Counted(c),
            None => Recording::FlushedLater,
        };
        match self.by_rule(&req, &step, held, recording).map_err(internal)? {
            None => Ok(ByRule::Undecided),
            Some(Err(_refused)) => Ok(ByRule::NotCounted),
            Some(Ok((ruled, durable))) => {
                let (result, row, action) = ruled?;
                let _ = self.events.send(GuardianEvent::Decided { row, decision: action.as_str().into() });
                Ok(ByRule::Decided(result, durable))
            }
        }
    }
}
