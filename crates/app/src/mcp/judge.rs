//! The judge the composition gives the MCP door: a call of a server the gate let in is a
//! step of one of the user's own agents (`mcp:<name>`), decided by the guardian's rules
//! per tool with conditions on its arguments, or asked of the user in Waiting for you, on
//! the phone, by quorum; a refused one is recorded there too. The two doors meet only
//! here: neither imports the other.

use std::sync::{Arc, Weak};

use futures_util::future::BoxFuture;
use gatehouse_asop::jsonrpc::{self, RpcError};
use serde_json::{json, Value};

use crate::doors::guardian::{self, Guardian};
use crate::doors::mcp::at_gate::{Admission, AskedOfUser, ByRule, Judge, Judged};
use crate::doors::mcp::signed::{Answer, Answers, Decided};

/// The guardian's agent id of the MCP server `name`: its rules and its steps are kept
/// under it (the server itself is let in by its key, at the MCP door).
pub fn agent_id(name: &str) -> String {
    format!("{}{}", crate::doors::guardian::OTHER_DOORS_AGENTS, name.to_ascii_lowercase())
}

pub struct GuardianJudge {
    guardian: Weak<Guardian>,
}

impl GuardianJudge {
    pub fn new(guardian: &Arc<Guardian>) -> Arc<GuardianJudge> {
        Arc::new(GuardianJudge { guardian: Arc::downgrade(guardian) })
    }
}

/// The context of a step of the agent `mcp:<name>` (the server `server`, shown as
/// `shown_as`), its ids all `id`; `tools` as the server described them.
fn context(server: &str, session: &str, shown_as: &str, id: &str, tools: Option<Value>) -> Value {
    let mut agent = json!({"id": agent_id(server), "name": shown_as,
        "instructions": "A tool server the user's AI app reaches through Gatehouse (MCP)", "version": "1",
        "provider": {"name": server, "url": "https://modelcontextprotocol.io"}});
    if let Some(t) = tools {
        agent["tools"] = t;
    }
    json!({"agent": agent, "session": {"id": session}, "turnId": id, "stepId": id,
        "timestamp": crate::doors::gate::clock::utc_string(crate::doors::gate::clock::now())})
}

/// The call as a step of the agent `mcp:<name>`, in ASOP's words (what the guardian keeps
/// and shows; the decision is bound to these arguments), its ids all `id`.
fn step(j: &Judged, shown_as: &str, id: &str) -> Value {
    let a = &j.asked;
    let inputs: Vec<Value> = match &a.arguments {
        Value::Object(members) => members.iter().map(|(k, v)| json!({"name": k, "value": v})).collect(),
        _ => Vec::new(),
    };
    let mut tool = json!({"name": a.tool, "id": a.tool, "type": "mcp", "arguments": null, "outputs": null});
    if let Some(d) = &a.description {
        tool["description"] = json!(d);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "steps/toolCallRequest", "params": {
        "context": context(&a.server, &a.session, shown_as, id, Some(json!([tool]))),
        "toolCallRequest": {"executionId": id, "toolId": a.tool, "inputs": inputs},
    }})
}

/// A server's request for the user or their app as a step of the agent `mcp:<name>`: a
/// message it has for the user (`steps/message`), worded by the door.
fn request_step(r: &AskedOfUser, shown_as: &str) -> Value {
    let a = &r.asked;
    let id = uuid::Uuid::new_v4().to_string();
    json!({"jsonrpc": "2.0", "id": id, "method": "steps/message", "params": {
        "context": context(&a.server, &a.session, shown_as, &id, None),
        "message": {"role": "agent", "id": id, "content": [{"kind": "text", "text": r.words}],
            "metadata": {"mcpMethod": a.method}},
    }})
}

/// The name the user gave a server when they let it in; the server's own until then.
fn shown_as(named: &Option<String>, server: &str) -> String {
    named.clone().unwrap_or_else(|| format!("MCP server {server}"))
}

/// How the gate's admission reads as the guardian's verdict on a step.
fn admitted(a: &Admission) -> Result<bool, RpcError> {
    match a {
        Admission::Admitted { held } => Ok(*held),
        Admission::Knocked { message } => Err(RpcError::new(jsonrpc::AGENT_NOT_REGISTERED, message.clone())),
        Admission::Refused { message, blocked: true } => Err(RpcError::new(jsonrpc::AGENT_BLOCKED, message.clone())),
        Admission::Refused { message, blocked: false } => Err(RpcError::new(jsonrpc::POLICY_DENIED, message.clone())),
    }
}

/// The guardian's answer in the MCP door's words.
fn answer(decided: Result<Value, RpcError>) -> Answer {
    let result = match decided {
        Ok(r) => r,
        Err(e) => return Answer::Deny { message: e.message },
    };
    let message = result["message"].as_str().unwrap_or_default().to_string();
    match result["decision"].as_str() {
        Some("allow") => Answer::Allow,
        Some("modify") => match result.pointer("/modifiedRequest/params/toolCallRequest/inputs").and_then(Value::as_array) {
            Some(inputs) => Answer::Modify {
                arguments: Value::Object(inputs.iter().filter_map(|x| Some((x.get("name")?.as_str()?.to_string(), x.get("value")?.clone()))).collect()),
            },
            None => Answer::Deny { message: "Gatehouse changed this call but did not say how; it is not sent".into() },
        },
        _ => Answer::Deny { message: if message.is_empty() { "you denied this call".into() } else { message } },
    }
}

impl Judge for GuardianJudge {
    fn judge(&self, j: Judged) -> BoxFuture<'static, Decided> {
        let guardian = self.guardian.upgrade();
        Box::pin(async move {
            let Some(guardian) = guardian else {
                return Decided::unkept(Answer::Deny { message: "Gatehouse's guardian is stopping; the call was not sent".into() });
            };
            let shown_as = shown_as(&j.named, &j.asked.server);
            let id = uuid::Uuid::new_v4().to_string();
            let answer = answer(guardian.judge_admitted(step(&j, &shown_as, &id), admitted(&j.admission)).await);
            Decided { answer, step: Some(id) }
        })
    }

    fn by_rule(&self, j: &Judged) -> ByRule {
        let (Some(guardian), Admission::Admitted { held }) = (self.guardian.upgrade(), &j.admission) else { return ByRule::Undecided };
        let id = uuid::Uuid::new_v4().to_string();
        match guardian.judge_by_rule(&step(j, &shown_as(&j.named, &j.asked.server), &id), *held, j.count.as_ref()) {
            Ok(guardian::ByRule::Undecided) => ByRule::Undecided,
            Ok(guardian::ByRule::NotCounted) => ByRule::NotCounted,
            Ok(guardian::ByRule::Decided(result, on_disk)) => ByRule::Decided(Decided { answer: answer(Ok(result)), step: Some(id) }, on_disk),
            Err(e) => ByRule::Decided(Decided { answer: answer(Err(e)), step: Some(id) }, gatehouse_store::Durable::now()),
        }
    }

    fn answered(&self, _sender: String, told: Answers) -> BoxFuture<'static, usize> {
        let guardian = self.guardian.upgrade();
        Box::pin(async move {
            let Some(guardian) = guardian else { return 0 };
            let answers =
                told.answers.into_iter().map(|a| (a.step, json!({"bytes": a.bytes, "failed": a.failed, "excerpt": a.excerpt, "flags": a.flags}))).collect();
            guardian.answered(&agent_id(&told.server), answers).await
        })
    }

    fn server_asks(&self, r: AskedOfUser) -> BoxFuture<'static, Answer> {
        let guardian = self.guardian.upgrade();
        Box::pin(async move {
            let Some(guardian) = guardian else { return Answer::Deny { message: "Gatehouse's guardian is stopping".into() } };
            let shown_as = shown_as(&r.named, &r.asked.server);
            // Held: asked of the user whatever the rules say; never answered for them.
            let admitted = admitted(&r.admission).map(|_| true);
            match guardian.judge_admitted(request_step(&r, &shown_as), admitted).await {
                Ok(v) if v["decision"] == "allow" => Answer::Allow,
                Ok(v) => Answer::Deny { message: v["message"].as_str().filter(|m| !m.is_empty()).unwrap_or("the user did not let it through").to_string() },
                Err(e) => Answer::Deny { message: e.message },
            }
        })
    }
}
