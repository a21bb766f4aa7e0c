//! One step of the user's own agent at the gate: who may be guarded is the gate's
//! decision, as for every door ([`gatehouse_gate::Gate::accept`]): a blocked or revoked
//! agent is refused, an unknown one knocks, a registration that does not allow the step
//! (its scope, its size, its rate) refuses it, and one whose grant ended (or whose key
//! changed unverified) has every step asked of the user. What the step is kept as (its
//! row, its decision by rule or by the user) is the guardian's; the gate counts it
//! against the agent's rate, on the registry it decided on.

use gatehouse_asop::jsonrpc::{self, RpcError};
use gatehouse_gate::{Arrival, Keep, Refusal, Stored, Why, Words};
use gatehouse_store::Store;
use serde_json::{json, Value};

use crate::{DOOR, SCOPE};

/// What the gate answered: held (ask the user at every step), or why not (none: unknown,
/// it knocked).
pub(crate) type Verdict = Result<bool, Option<RpcError>>;

/// The gate's decision on one step of agent `who` (its registry key `key`).
pub(crate) fn judge(gate: &gatehouse_gate::Gate, key: &str, who: &str, size: u64, at: chrono::DateTime<chrono::Utc>) -> Verdict {
    let received_at = gatehouse_gate::clock::utc_string(at);
    // A step is kept by the guardian, with its decision: nothing of it is the gate's.
    let arrival = Arrival::counted_only(DOOR, key.to_string(), SCOPE, size, at, &received_at);
    gate.accept(&Step { who }, &arrival).answer
}

struct Step<'a> {
    who: &'a str,
}

impl gatehouse_gate::Checks for Step<'_> {
    type Refusal = std::convert::Infallible;
}

impl gatehouse_gate::Door for Step<'_> {
    type Answer = Verdict;

    // The guardian announces its steps itself (what it asks, what was decided).
    fn accepted(&self, _a: &Arrival<'_>, _executor: &str, held: bool) -> Words<Verdict> {
        Words { code: None, message: None, receipt: Value::Null, answer: Ok(held), keep: false }
    }

    // Its refusals are kept as the agent's steps, by the guardian, with the knock.
    fn refused(&self, _a: &Arrival<'_>, why: &Why<std::convert::Infallible>) -> Words<Verdict> {
        Words { code: None, message: None, receipt: Value::Null, answer: Err(self.error(why)), keep: false }
    }

    fn outcome(&self, r: &std::convert::Infallible) -> gatehouse_code::Outcome {
        match *r {}
    }

    fn keep(&self, store: &Store, k: &Keep<'_>) -> Option<gatehouse_store::Result<Stored<std::convert::Infallible>>> {
        Some(k.count(store))
    }
}

impl Step<'_> {
    fn error(&self, why: &Why<std::convert::Infallible>) -> Option<RpcError> {
        let who = self.who;
        Some(match why {
            Why::Knock => return None,
            Why::Refused(Refusal::Blocked) => RpcError::new(jsonrpc::AGENT_BLOCKED, format!("The user blocked agent {who}")),
            Why::Refused(Refusal::Revoked(_)) => RpcError::new(jsonrpc::AGENT_BLOCKED, format!("The user revoked agent {who}'s registration")),
            Why::Refused(Refusal::Size { size, limit }) => {
                RpcError::new(jsonrpc::TOO_LARGE, format!("The step is {size} bytes; the user allows agent {who} {limit}"))
            }
            Why::Refused(Refusal::Scope(_) | Refusal::Delegation) | Why::Reserved(_) => {
                RpcError::new(jsonrpc::POLICY_DENIED, format!("The user's registration of agent {who} does not let it ask the guardian"))
            }
            Why::Refused(Refusal::Door(never)) => match *never {},
            Why::RateLimited { window, limit, retry_after_secs } => {
                RpcError::new(jsonrpc::RATE_LIMITED, format!("The user allows agent {who} {limit} steps per {window}; try again later"))
                    .with_data(json!({"retryAfter": retry_after_secs}))
            }
            other => RpcError::new(jsonrpc::INTERNAL_ERROR, format!("Internal server error: {}", other.outcome(|n| match *n {}).as_str())),
        })
    }
}
