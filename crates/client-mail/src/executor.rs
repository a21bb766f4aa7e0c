//! The swarm executor: an accepted EPP prompt is handed to a MAIL swarm the user connected
//! (by its connection name) and its task followed; the task also shows in the Tasks view.
//! Registered as a delegate by the service.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use gatehouse_store::Store;
use serde_json::{json, Value};

use gatehouse_gate::executor::{secret, Delegate, Delegation, ExecutorSpec, Update, Work};
use serde::{Deserialize, Serialize};

/// The kind this door's executor is registered under.
pub const KIND: &str = "swarm";

/// Hands the prompt to a MAIL swarm the user connected (by its connection name) and
/// follows the task, which also shows in the MAIL task viewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwarmSpec {
    pub swarm: String,
    #[serde(default)]
    pub entrypoint: Option<String>,
}

impl SwarmSpec {
    pub fn executor(swarm: &str, entrypoint: Option<&str>) -> ExecutorSpec {
        Delegation::of(KIND, &SwarmSpec { swarm: swarm.to_string(), entrypoint: entrypoint.map(str::to_string) })
    }
}

pub struct SwarmExecutor {
    pub store: Arc<Store>,
}

impl Delegate for SwarmExecutor {
    fn run<'a>(&'a self, spec: &'a Delegation, work: &'a Work, _on_update: &'a mut (dyn FnMut(Update<'_>) + Send)) -> BoxFuture<'a, Result<Value, Value>> {
        Box::pin(async move {
            let SwarmSpec { swarm, entrypoint } = spec.read().map_err(|e| json!({"executor": KIND, "error": e}))?;
            hand_over(&self.store, &swarm, entrypoint.as_deref(), work).await
        })
    }
}

async fn hand_over(store: &Arc<Store>, swarm: &str, entrypoint: Option<&str>, work: &Work) -> Result<Value, Value> {
    let fail = |e: String| json!({"executor": "swarm", "swarm": swarm, "error": e});
    let row = store.mail_swarm(swarm).map_err(|e| fail(e.to_string()))?.ok_or_else(|| fail(format!("no MAIL swarm named {swarm:?} is connected")))?;
    let kept = secret(store, &super::token_name(swarm, &row.base_url)).map_err(fail)?;
    let m = gatehouse_mail::SendMessage {
        body: work.prompt.clone(),
        subject: Some(format!("{} from {} (via Gatehouse)", work.scope, work.who)),
        task_id: None,
        entrypoint: entrypoint.map(str::to_string),
    };
    // A 2.0 server's secret is a login (address and password): it logs in and sends with
    // the token it is given; the password goes nowhere but the login.
    let sent = if super::is_v2(row.info.as_ref()) {
        let creds = kept
            .and_then(|s| serde_json::from_str::<gatehouse_mail::v2::Credentials>(&s).ok())
            .ok_or_else(|| fail(format!("{swarm} speaks MAIL 2.0 and no login is kept for it: add it again with its address and password")))?;
        let client = gatehouse_mail::v2::Client::new(&row.base_url, creds).map_err(|e| fail(e.to_string()))?;
        super::v2::send(store.clone(), &client, swarm, &m, gatehouse_mail::client::DEADLINE, |_| {}).await
    } else {
        let client = gatehouse_mail::SwarmClient::new(&row.base_url, kept).map_err(|e| fail(e.to_string()))?;
        super::send(store.clone(), &client, swarm, &m, |_| {}).await
    };
    match sent {
        Ok(o) if o.completed => Ok(json!({"executor": "swarm", "swarm": swarm, "task_id": o.task_id, "answer": o.response})),
        Ok(o) => Err(json!({"executor": "swarm", "swarm": swarm, "task_id": o.task_id, "error": format!("the swarm's task failed: {}", o.response)})),
        Err(e) => Err(fail(format!("{e} [{}]", e.code()))),
    }
}
