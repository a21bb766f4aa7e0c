//! The A2A executor: an accepted prompt is sent to an A2A agent the user added, its answer
//! streamed into the inbox detail as it comes and kept as the result. Registered as a
//! delegate by the composition.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use gatehouse_gate::executor::{default_model_timeout, secret, Delegate, Delegation, ExecutorSpec, Update, Work};
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::client::{self, Agent};

/// The kind this door's executor is registered under.
pub const KIND: &str = "a2a";
/// Where the agents the user added are kept (a setting: addresses are not secrets).
pub const AGENTS_SETTING: &str = "a2a_agents";

/// Which agent, and how long its answer may take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    pub agent: String,
    #[serde(default = "default_model_timeout")]
    pub timeout_secs: u64,
}

impl AgentSpec {
    pub fn executor(agent: &str, timeout_secs: u64) -> ExecutorSpec {
        Delegation::of(KIND, &AgentSpec { agent: agent.to_string(), timeout_secs })
    }
}

/// The keychain name of an agent's bearer token: it names the address it was given for,
/// so an agent re-added elsewhere under the same name never gets the old token.
pub fn token_name(agent: &Agent) -> String {
    format!("a2a-token:{}@{}", agent.name, agent.url)
}

/// The agents the user added.
pub fn agents(store: &Store) -> gatehouse_store::Result<Vec<Agent>> {
    Ok(store.setting::<Vec<Agent>>(AGENTS_SETTING)?.unwrap_or_default())
}

pub struct AgentExecutor {
    pub store: Arc<Store>,
}

impl Delegate for AgentExecutor {
    fn run<'a>(&'a self, spec: &'a Delegation, work: &'a Work, on_update: &'a mut (dyn FnMut(Update<'_>) + Send)) -> BoxFuture<'a, Result<Value, Value>> {
        Box::pin(async move {
            let AgentSpec { agent, timeout_secs } = spec.read().map_err(|e| json!({"executor": KIND, "error": e}))?;
            let fail = |e: String| json!({"executor": KIND, "agent": agent, "error": e});
            let found = agents(&self.store).map_err(|e| fail(e.to_string()))?.into_iter().find(|a| a.name == agent);
            let a = found.ok_or_else(|| fail(format!("no A2A agent {agent:?} was added")))?;
            let token = secret(&self.store, &token_name(&a)).map_err(fail)?;
            let sent = client::send(&a, token.as_deref(), &work.prompt, |so_far| on_update(Update::Text(so_far)));
            match tokio::time::timeout(Duration::from_secs(timeout_secs), sent).await {
                Err(_) => Err(fail(format!("{} did not answer within {timeout_secs} s", a.name))),
                Ok(Err(e)) => Err(fail(format!("{e} [{}]", e.code()))),
                Ok(Ok(answer)) => Ok(json!({"executor": KIND, "agent": a.name, "url": a.url, "task_id": answer.task_id, "answer": answer.text})),
            }
        })
    }
}
