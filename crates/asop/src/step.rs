//! What a step is about, for rules and for the user: which agent, which method, which tool
//! with which arguments, what text it carries — and a sentence that says it plainly.

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub method: String,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub provider: Option<String>,
    pub session_id: Option<String>,
    pub turn_id: Option<String>,
    pub step_id: Option<String>,
    pub tool_id: Option<String>,
    /// Tool arguments (`toolCallRequest.inputs`) by name.
    pub arguments: Vec<(String, Value)>,
    /// Text the step carries (message parts, tool outputs, memory, trigger content).
    pub texts: Vec<String>,
    pub reasoning: Option<String>,
    pub timeout_ms: Option<u64>,
}

fn texts_of_parts(parts: Option<&Value>) -> Vec<String> {
    parts
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|p| p["kind"] == "text").filter_map(|p| p["text"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

impl Step {
    /// Reads the facts of a request already checked against the schema.
    pub fn of(method: &str, params: &Value) -> Step {
        let s = |p: &str| params.pointer(p).and_then(Value::as_str).map(str::to_string);
        let mut texts = Vec::new();
        texts.extend(texts_of_parts(params.pointer("/message/content")));
        texts.extend(texts_of_parts(params.pointer("/result/outputs")));
        texts.extend(texts_of_parts(params.pointer("/toolCallResult/result/outputs")));
        texts.extend(texts_of_parts(params.pointer("/trigger/content")));
        if let Some(m) = params.get("memory").and_then(Value::as_array) {
            texts.extend(m.iter().filter_map(|x| x.as_str().map(str::to_string)));
        }
        let arguments = params
            .pointer("/toolCallRequest/inputs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|i| Some((i["name"].as_str()?.to_string(), i.get("value").cloned().unwrap_or(Value::Null)))).collect())
            .unwrap_or_default();
        Step {
            method: method.to_string(),
            agent_id: s("/context/agent/id"),
            agent_name: s("/context/agent/name"),
            provider: s("/context/agent/provider/name"),
            session_id: s("/context/session/id"),
            turn_id: s("/context/turnId"),
            step_id: s("/context/stepId"),
            tool_id: s("/toolCallRequest/toolId"),
            arguments,
            texts,
            reasoning: s("/reasoning"),
            timeout_ms: params.get("timeout").and_then(Value::as_u64),
        }
    }

    pub fn argument(&self, name: &str) -> Option<&Value> {
        self.arguments.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// One sentence for the prompt the user answers.
    pub fn describe(&self) -> String {
        let who = self.agent_name.clone().or_else(|| self.agent_id.clone()).unwrap_or_else(|| "An agent".into());
        let show = |v: &Value| match v {
            Value::String(s) => format!("“{s}”"),
            other => other.to_string(),
        };
        match self.method.as_str() {
            "steps/toolCallRequest" => {
                let args = self.arguments.iter().map(|(n, v)| format!("{n} = {}", show(v))).collect::<Vec<_>>().join(", ");
                let tool = self.tool_id.clone().unwrap_or_else(|| "a tool".into());
                if args.is_empty() {
                    format!("{who} wants to use {tool}.")
                } else {
                    format!("{who} wants to use {tool} with {args}.")
                }
            }
            "steps/toolCallResult" => format!("{who} got a tool's result and wants to pass it on: {}", self.texts.join(" ")),
            "steps/message" => format!("{who} has a message: {}", self.texts.join(" ")),
            "steps/agentTrigger" => format!("{who} was triggered: {}", self.texts.join(" ")),
            "steps/knowledgeRetrieval" => format!("{who} retrieved knowledge."),
            "steps/memoryStore" => format!("{who} wants to remember: {}", self.texts.join(" | ")),
            "steps/memoryContextRetrieval" => format!("{who} recalled: {}", self.texts.join(" | ")),
            "protocols/A2A" => format!("{who} is exchanging a message with another agent (A2A)."),
            "protocols/MCP" => format!("{who} is calling an MCP server."),
            m => format!("{who}: {m}"),
        }
    }
}
