//! MCP servers the user's AI app reaches through Gatehouse. `wrap` is what an app's MCP
//! configuration runs instead of the server: Gatehouse starts the server as its child and
//! relays between the app and it (`door-mcp`), and each `tools/call` is judged as a step of
//! one of the user's own agents by the running gate's guardian (`mcp-<name>`: let in once,
//! then its rules per tool with conditions on arguments, or asked in Waiting for you, on
//! the phone, by quorum). The guardian is reached at `gate`, by default where the inbox
//! listens unless told otherwise (`http://127.0.0.1:8765`, or `$GATEHOUSE_PORT`): an app
//! starts its MCP servers with little of the user's environment (no keychain), so the wrap
//! opens nothing of the data dir.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gatehouse_json::Json;
use serde_json::{json, Value};

use crate::doors::mcp::relay::{self, Keeper, Verdict};
use crate::{Code, CommandError, Result};
use gatehouse_mcp::call::ToolCall;
use gatehouse_mcp::tools::Pin;

/// The guardian's agent id for the MCP server named `name`.
pub fn agent_id(name: &str) -> String {
    format!("mcp-{name}")
}

/// A server's name: what the user calls it in their app's configuration.
fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match ok {
        true => Ok(()),
        false => Err(CommandError::new(Code::Invalid, format!("{name:?}: a server's name is 1 to 64 letters, digits, - or _"))),
    }
}

/// Where the guardian listens: `gate` when given, else the inbox's default address on
/// this computer.
pub fn guardian_url(gate: Option<&str>) -> String {
    let gate = match gate {
        Some(g) => g.trim_end_matches('/').to_string(),
        None => {
            let port = std::env::var("GATEHOUSE_PORT").ok().and_then(|p| p.parse::<u16>().ok()).unwrap_or(crate::settings::DEFAULT_PORT);
            format!("http://127.0.0.1:{port}")
        }
    };
    format!("{gate}{}", crate::doors::guardian::PATH)
}

/// Runs `program` with `args` as the MCP server `name` and relays between the app (on
/// `client_in`/`client_out`) and it until either goes; the server's whole process group
/// goes with it.
pub async fn wrap(
    name: &str,
    program: &str,
    args: &[String],
    gate: Option<&str>,
    client_in: impl tokio::io::AsyncBufRead + Unpin + Send + 'static,
    client_out: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) -> Result<()> {
    check_name(name)?;
    let keeper = GuardianKeeper::new(name, &guardian_url(gate))?;
    let mut server = crate::doors::mcp::child::start(program, args)
        .map_err(|e| CommandError::new(Code::Unreachable, format!("cannot start the MCP server {program}: {e}")))?;
    let (stdin, stdout) = server.take_pipes().ok_or_else(|| CommandError::new(Code::Internal, "the server's pipes were taken"))?;
    let relayed = relay::run(client_in, client_out, tokio::io::BufReader::new(stdout), stdin, keeper);
    // An app that quits may signal its servers rather than close their stdin: the server
    // is in a process group of its own, so it goes with us either way.
    let ended = tokio::select! {
        r = relayed => r.map(|_| ()).map_err(|e| CommandError::new(Code::Internal, format!("the MCP relay failed: {e}"))),
        () = ended_by_signal() => Ok(()),
    };
    server.stop();
    ended
}

/// Judges each call as a step of the agent `mcp-<name>` at the guardian.
struct GuardianKeeper {
    url: String,
    http: reqwest::Client,
    name: String,
    session: String,
    steps: AtomicU64,
}

/// How long a call may wait for the guardian's answer: its longest wait for the user and a
/// minute more (this only ends a gate that stopped answering).
const ANSWER_WITHIN: Duration = Duration::from_secs(crate::doors::guardian::MAX_ASK_TIMEOUT.as_secs() + 60);

impl GuardianKeeper {
    fn new(name: &str, url: &str) -> Result<GuardianKeeper> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(ANSWER_WITHIN)
            .build()
            .map_err(|e| CommandError::new(Code::Internal, format!("cannot make an HTTP client: {e}")))?;
        Ok(GuardianKeeper { url: url.to_string(), http, name: name.to_string(), session: uuid::Uuid::new_v4().to_string(), steps: AtomicU64::new(0) })
    }

    /// The ASOP step for `call`.
    fn step(&self, call: &ToolCall) -> Value {
        let n = self.steps.fetch_add(1, Ordering::Relaxed);
        let inputs: Vec<Value> = match &call.arguments {
            Json::Object(members) => members.iter().map(|(k, v)| json!({"name": k, "value": v.to_serde()})).collect(),
            _ => Vec::new(),
        };
        json!({"jsonrpc": "2.0", "id": n, "method": "steps/toolCallRequest", "params": {
            "context": {
                "agent": {"id": agent_id(&self.name), "name": format!("MCP server {}", self.name),
                    "instructions": "A tool server the user's AI app reaches through Gatehouse (MCP)", "version": "1",
                    "provider": {"name": self.name, "url": "https://modelcontextprotocol.io"}},
                "session": {"id": self.session}, "turnId": format!("turn-{n}"), "stepId": format!("step-{n}"),
                "timestamp": crate::doors::gate::clock::utc_string(crate::doors::gate::clock::now()),
            },
            "toolCallRequest": {"executionId": format!("call-{n}"), "toolId": call.name, "inputs": inputs},
        }})
    }
}

impl Keeper for GuardianKeeper {
    async fn call(&self, call: &ToolCall) -> Verdict {
        let answer = match self.http.post(&self.url).json(&self.step(call)).send().await {
            Ok(r) => r.json::<Value>().await,
            Err(e) if e.is_timeout() => {
                return Verdict::Refuse(format!(
                    "Gatehouse at {} did not decide within {} minutes; the call was not sent",
                    self.url,
                    ANSWER_WITHIN.as_secs() / 60
                ))
            }
            Err(e) => {
                return Verdict::Refuse(format!(
                    "Gatehouse is not answering at {} ({}): start it (the app, or `gatehouse serve`) to use this server's tools",
                    self.url,
                    gatehouse_http::innermost(&e)
                ))
            }
        };
        let Ok(answer) = answer else { return Verdict::Refuse(format!("Gatehouse at {} gave an answer that is not its guardian's", self.url)) };
        if let Some(e) = answer.get("error") {
            let message = e.get("message").and_then(Value::as_str).unwrap_or("refused");
            return Verdict::Refuse(format!("Gatehouse: {message}"));
        }
        let result = &answer["result"];
        let message = result["message"].as_str().unwrap_or_default();
        match result["decision"].as_str() {
            Some("allow") => Verdict::Pass,
            Some("modify") => {
                let inputs = result.pointer("/modifiedRequest/params/toolCallRequest/inputs").and_then(Value::as_array);
                match inputs {
                    Some(i) => Verdict::Arguments(Json::Object(
                        i.iter().filter_map(|x| Some((x.get("name")?.as_str()?.to_string(), Json::from_serde(x.get("value")?)))).collect(),
                    )),
                    None => Verdict::Refuse("Gatehouse changed this call but did not say how; it is not sent".into()),
                }
            }
            _ => Verdict::Refuse(format!("Gatehouse: {}", if message.is_empty() { "you denied this call" } else { message })),
        }
    }

    async fn listed(&self, _tools: &[Pin]) -> Vec<String> {
        Vec::new()
    }

    async fn server_asks(&self, method: &str, _message: &[u8]) -> Verdict {
        Verdict::Refuse(format!("Gatehouse does not pass an MCP server's {method} requests to the app yet"))
    }
}

/// Resolves when the process is told to stop (SIGTERM, SIGINT, SIGHUP); never, where it
/// cannot listen for them.
async fn ended_by_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}
