//! `gatehouse mcp wrap`: what an app's MCP configuration runs instead of the server.
//! Gatehouse starts the server as its child and relays between the app and it
//! (`door-mcp`); each `tools/call` is asked of the running gate's MCP door, signed with
//! this server's own key (`<data dir>/mcp/<name>.key`, 0600: an app starts its servers
//! with little of the user's environment and no keychain), and goes on only as the gate
//! answers. Calls are asked on a line kept open to the gate, signed into once
//! (`door-mcp`'s `line`), where the gate offers one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use ed25519_dalek::SigningKey;

use crate::doors::mcp::answered::Summary;
use crate::doors::mcp::line_client::{Asking, LineClient};
use crate::doors::mcp::relay::{self, Called, Keeper, Verdict};
use crate::doors::mcp::signed::{self, Answer, Answered, Answers, Asked, Decided, Listed, ServerAsks, Withheld};
use crate::{Code, CommandError, Result};
use gatehouse_mcp::call::ToolCall;
use gatehouse_mcp::tools::Pin;

/// Where the server `name`'s key is kept in `data_dir`.
pub fn key_file(data_dir: &Path, name: &str) -> std::path::PathBuf {
    data_dir.join("mcp").join(format!("{name}.key"))
}

/// Where the gate listens: at `gate` when given, else at the inbox's default address on
/// this computer.
pub fn gate_url(gate: Option<&str>) -> String {
    match gate {
        Some(g) => g.trim_end_matches('/').to_string(),
        None => {
            let port = std::env::var("GATEHOUSE_PORT").ok().and_then(|p| p.parse::<u16>().ok()).unwrap_or(crate::settings::DEFAULT_PORT);
            format!("http://127.0.0.1:{port}")
        }
    }
}

/// The MCP server a wrap reaches: a command it starts (stdio), or an address (Streamable
/// HTTP), as the user's app configuration names it.
pub enum Server<'a> {
    Command { program: &'a str, args: &'a [String] },
    Address(&'a str),
}

/// An address a server may be reached at: https, or http on this computer only (a tool
/// call's arguments are the user's, and no one between must read them).
pub(crate) fn address_ok(url: &str) -> Result<()> {
    let u = reqwest::Url::parse(url).map_err(|e| CommandError::new(Code::Invalid, format!("{url:?} is not an address: {e}")))?;
    let loopback = match u.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match (u.scheme(), loopback) {
        ("https", _) | ("http", true) => Ok(()),
        _ => Err(CommandError::new(Code::Invalid, format!("{url}: a server is reached over https (plain http only on this computer)"))),
    }
}

/// Relays between the app (on `client_in`/`client_out`) and the MCP server `name` until
/// either goes; a server it started goes with its whole process group. The server's key is
/// read from (or made in) `data_dir`.
pub async fn wrap(
    data_dir: &Path,
    name: &str,
    server: Server<'_>,
    gate: Option<&str>,
    client_in: impl tokio::io::AsyncBufRead + Unpin + Send + 'static,
    client_out: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) -> Result<()> {
    if !signed::name_ok(name) {
        return Err(CommandError::new(Code::Invalid, format!("{name:?}: a server's name is 1 to 64 letters, digits, - or _")));
    }
    if let Server::Address(url) = &server {
        address_ok(url)?;
    }
    let key = gatehouse_keys::load_or_create_file(&key_file(data_dir, name))
        .map_err(|e| CommandError::new(Code::Invalid, format!("cannot read or make the server's key: {e}")))?;
    let (keeper, reporter) = GateKeeper::new(name, &gate_url(gate), key)?;
    type Relayed = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<relay::Ended>> + Send>>;
    let (mut child, relayed): (_, Relayed) = match server {
        Server::Command { program, args } => {
            let mut started = crate::doors::mcp::child::start(program, args)
                .map_err(|e| CommandError::new(Code::Unreachable, format!("cannot start the MCP server {program}: {e}")))?;
            let (stdin, stdout) = started.take_pipes().ok_or_else(|| CommandError::new(Code::Internal, "the server's pipes were taken"))?;
            (Some(started), Box::pin(relay::run(client_in, client_out, tokio::io::BufReader::new(stdout), stdin, keeper)))
        }
        Server::Address(url) => {
            let side = crate::doors::mcp::upstream::connect(url, Default::default()).map_err(|e| CommandError::new(Code::Internal, e))?;
            let (from_server, to_server) = tokio::io::split(side);
            (None, Box::pin(relay::run(client_in, client_out, tokio::io::BufReader::new(from_server), to_server, keeper)))
        }
    };
    // An app that quits may signal its servers rather than close their stdin: a server
    // started here is in a process group of its own, so it goes with us either way.
    let ended = tokio::select! {
        r = relayed => r.map(|_| ()).map_err(|e| CommandError::new(Code::Internal, format!("the MCP relay failed: {e}"))),
        () = ended_by_signal() => Ok(()),
    };
    if let Some(c) = child.as_mut() {
        c.stop();
    }
    reporter.finish().await;
    ended
}

/// Asks the gate's MCP door about each call.
struct GateKeeper {
    poster: Poster,
    /// Calls are asked on a kept line where the gate offers one (by the poster where not).
    line: LineClient,
    session: String,
    /// What the server last said each tool does, shown with its calls.
    described: Mutex<HashMap<String, String>>,
    /// What answered calls, on its way to the gate a batch at a time.
    answers: tokio::sync::mpsc::Sender<Answered>,
}

/// How often what answered calls is told to the gate (one request and one write a batch:
/// the next call is not made to wait behind each).
const REPORT_EVERY: Duration = Duration::from_secs(1);
/// Answers waiting to be told; beyond it one is only logged.
const REPORT_QUEUE: usize = 1024;

/// Tells the gate what answered calls, a batch at a time, until told to finish.
struct Reporter {
    end: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Reporter {
    /// Tells what is left, within a bound (a gate that does not answer does not hold the
    /// app's session open).
    async fn finish(self) {
        let _ = self.end.send(());
        let _ = tokio::time::timeout(Duration::from_secs(3), self.task).await;
    }
}

async fn report(poster: Poster, mut rx: tokio::sync::mpsc::Receiver<Answered>, mut end: tokio::sync::oneshot::Receiver<()>) {
    let mut ending = false;
    while !ending {
        // The first answer of a batch (or the end), then what follows within a second.
        let first = tokio::select! {
            a = rx.recv() => a,
            _ = &mut end => None,
        };
        let mut batch: Vec<Answered> = first.into_iter().collect();
        ending = batch.is_empty();
        let due = tokio::time::sleep(REPORT_EVERY);
        tokio::pin!(due);
        while !ending && batch.len() < signed::MAX_ANSWERS {
            tokio::select! {
                a = rx.recv() => match a {
                    Some(a) => batch.push(a),
                    None => ending = true,
                },
                () = &mut due => break,
                _ = &mut end => ending = true,
            }
        }
        if ending {
            while let Ok(a) = rx.try_recv() {
                batch.push(a);
            }
        }
        // At most as many a request as the gate takes: what is left at the end may be more.
        while !batch.is_empty() {
            let rest = batch.split_off(batch.len().min(signed::MAX_ANSWERS));
            poster.tell(std::mem::replace(&mut batch, rest)).await;
        }
    }
}

/// Signs and posts to the gate's MCP door.
#[derive(Clone)]
struct Poster {
    /// The gate's address (its door's paths are added to it).
    gate: String,
    http: reqwest::Client,
    name: String,
    key: SigningKey,
}

impl Poster {
    /// Posts `body` to the door's `path`, signed: the answer, or why there is none.
    async fn post<T: serde::de::DeserializeOwned>(&self, path: &str, body: Vec<u8>) -> std::result::Result<T, String> {
        let r = self.send(path, body).await?;
        let status = r.status();
        let v: serde_json::Value = r.json().await.map_err(|_| self.not_the_door())?;
        self.read(status, v)
    }

    fn not_the_door(&self) -> String {
        format!("Gatehouse at {} gave an answer that is not its MCP door's", self.gate)
    }

    /// What the door answered with `status`, as `T`.
    fn read<T: serde::de::DeserializeOwned>(&self, status: reqwest::StatusCode, v: serde_json::Value) -> std::result::Result<T, String> {
        if !status.is_success() {
            return Err(format!("Gatehouse refused to judge it: {}", v["error"].as_str().unwrap_or("no reason given")));
        }
        serde_json::from_value(v).map_err(|_| self.not_the_door())
    }

    /// Posts the call `body`: the gate's answer, and when its record of the call is on
    /// disk if it was not yet (a second line of the answer says when).
    async fn call(&self, body: Vec<u8>) -> std::result::Result<(Decided, Option<relay::OnDisk>), String> {
        let mut r = self.send(signed::PATH, body).await?;
        let status = r.status();
        let mut read = Vec::new();
        let first = next_line(&mut r, &mut read).await.ok_or_else(|| self.not_the_door())?;
        let v: serde_json::Value = serde_json::from_slice(&first).map_err(|_| self.not_the_door())?;
        let keeping = v[signed::KEEPING] == true;
        let decided: Decided = self.read(status, v)?;
        if !keeping {
            return Ok((decided, None));
        }
        let gate = self.gate.clone();
        // Read as soon as it comes, not when the server answers: the connection is free
        // for the next call meanwhile, and a server that never answers holds none.
        let (tell, told) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let kept = match next_line(&mut r, &mut read).await {
                None => Err(format!("Gatehouse at {gate} stopped before it said")),
                Some(line) => match serde_json::from_slice::<serde_json::Value>(&line) {
                    Ok(v) if v["kept"] == true => Ok(()),
                    Ok(v) => Err(v["error"].as_str().unwrap_or("no reason given").to_string()),
                    Err(_) => Err(format!("Gatehouse at {gate} said what is not its MCP door's")),
                },
            };
            let _ = tell.send(kept);
        });
        let on_disk: relay::OnDisk = Box::pin(async move { told.await.unwrap_or_else(|_| Err("the wrap stopped".into())) });
        Ok((decided, Some(on_disk)))
    }

    /// Posts `body` to the door's `path`, signed: the response, or why there is none.
    async fn send(&self, path: &str, body: Vec<u8>) -> std::result::Result<reqwest::Response, String> {
        let url = format!("{}{path}", self.gate);
        let mut req = self.http.post(&url).header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in signed::sign(&self.key, chrono::Utc::now().timestamp(), path, &body) {
            req = req.header(name, value);
        }
        let r = match req.body(body).send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return Err(format!("Gatehouse at {} did not decide within {} minutes; the call was not sent", self.gate, ANSWER_WITHIN.as_secs() / 60))
            }
            Err(e) => {
                return Err(format!(
                    "Gatehouse is not answering at {} ({}): start it (the app, or `gatehouse serve`) to use this server's tools",
                    self.gate,
                    gatehouse_http::innermost(&e)
                ))
            }
        };
        Ok(r)
    }

    /// Tells the gate what answered calls (nothing when there is nothing to tell).
    async fn tell(&self, answers: Vec<Answered>) {
        if answers.is_empty() {
            return;
        }
        let n = answers.len();
        let body = serde_json::to_vec(&Answers { server: self.name.clone(), answers }).unwrap_or_default();
        // The answers are the app's already: what the gate could not keep is only logged.
        if let Err(why) = self.post::<serde_json::Value>(signed::ANSWERS_PATH, body).await {
            tracing::warn!(server = %self.name, "what answered {n} call(s) was not kept: {why}");
        }
    }
}

/// A line of the gate's answer is at most this long (the door's answers are small).
const MAX_LINE: usize = 64 * 1024;

/// The next line of `r`'s body (`read`: what was read of it and not yet taken), or the
/// rest of it when it ends without one; `None` when nothing is left, it cannot be read, or
/// a line is over [`MAX_LINE`].
async fn next_line(r: &mut reqwest::Response, read: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = read.iter().position(|&b| b == b'\n') {
            let rest = read.split_off(end + 1);
            let mut line = std::mem::replace(read, rest);
            line.pop();
            return Some(line);
        }
        if read.len() > MAX_LINE {
            return None;
        }
        match r.chunk().await {
            Ok(Some(more)) => read.extend_from_slice(&more),
            Ok(None) if read.is_empty() => return None,
            Ok(None) => return Some(std::mem::take(read)),
            Err(_) => return None,
        }
    }
}

/// How long a call may wait for the gate's answer: its longest wait for the user and a
/// minute more (this only ends a gate that stopped answering).
const ANSWER_WITHIN: Duration = Duration::from_secs(crate::doors::guardian::MAX_ASK_TIMEOUT.as_secs() + 60);

impl GateKeeper {
    fn new(name: &str, gate: &str, key: SigningKey) -> Result<(GateKeeper, Reporter)> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(ANSWER_WITHIN)
            .build()
            .map_err(|e| CommandError::new(Code::Internal, format!("cannot make an HTTP client: {e}")))?;
        let poster = Poster { gate: gate.to_string(), http, name: name.to_string(), key };
        let (answers, rx) = tokio::sync::mpsc::channel(REPORT_QUEUE);
        let (end, ending) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(report(poster.clone(), rx, ending));
        let line = LineClient::new(gate, name, poster.key.clone(), ANSWER_WITHIN).map_err(|e| CommandError::new(Code::Internal, e))?;
        let keeper = GateKeeper { poster, line, session: uuid::Uuid::new_v4().to_string(), described: Mutex::new(HashMap::new()), answers };
        Ok((keeper, Reporter { end, task }))
    }

    fn name(&self) -> &str {
        &self.poster.name
    }

    async fn post<T: serde::de::DeserializeOwned>(&self, path: &str, body: Vec<u8>) -> std::result::Result<T, String> {
        self.poster.post(path, body).await
    }

    async fn ask(&self, call: &ToolCall) -> std::result::Result<(Decided, Option<relay::OnDisk>), String> {
        let description = self.described.lock().unwrap_or_else(|p| p.into_inner()).get(&call.name).cloned();
        let asked = Asked {
            server: self.name().to_string(),
            session: self.session.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.to_serde(),
            description,
        };
        match self.line.call(&asked).await {
            Ok(x) => Ok(x),
            Err(Asking::Failed(why)) => Err(why),
            Err(Asking::Unavailable(_)) => self.poster.call(serde_json::to_vec(&asked).map_err(|e| e.to_string())?).await,
        }
    }
}

impl Keeper for GateKeeper {
    async fn call(&self, call: &ToolCall) -> Called {
        match self.ask(call).await {
            Ok((decided, on_disk)) => decided.called(on_disk),
            Err(why) => Called { verdict: Verdict::Refuse(why), step: None, on_disk: None },
        }
    }

    async fn answered(&self, step: String, answer: Summary) {
        if self.answers.try_send(Answered::new(step, answer)).is_err() {
            tracing::warn!(server = %self.name(), "{REPORT_QUEUE} answers wait to be told to Gatehouse: one was not kept");
        }
    }

    async fn listed(&self, tools: &[Pin]) -> Vec<String> {
        {
            let mut described = self.described.lock().unwrap_or_else(|p| p.into_inner());
            described.clear();
            described.extend(tools.iter().map(|t| (t.name.clone(), t.description.clone())));
        }
        let listed = Listed { server: self.name().to_string(), session: self.session.clone(), tools: tools.to_vec() };
        let body = serde_json::to_vec(&listed).unwrap_or_default();
        // What the gate does not let through is withheld; with no answer, everything is.
        match self.post::<Withheld>(signed::TOOLS_PATH, body).await {
            Ok(w) => {
                if let Some(m) = w.message.filter(|_| !w.withhold.is_empty()) {
                    tracing::warn!(server = %self.name(), "tools withheld from the app: {m}");
                }
                w.withhold
            }
            Err(why) => {
                tracing::warn!(server = %self.name(), "every tool withheld from the app: {why}");
                tools.iter().map(|t| t.name.clone()).collect()
            }
        }
    }

    async fn server_asks(&self, method: &str, message: &[u8]) -> Verdict {
        let params = serde_json::from_slice::<serde_json::Value>(message).ok().and_then(|m| m.get("params").cloned()).unwrap_or_default();
        let asked = ServerAsks { server: self.name().to_string(), session: self.session.clone(), method: method.to_string(), params };
        self.post::<Answer>(signed::ASKS_PATH, serde_json::to_vec(&asked).unwrap_or_default()).await.map_or_else(Verdict::Refuse, Answer::for_request)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Everything queued when the session ends is told, each request within the gate's
    /// bound, none lost.
    #[tokio::test]
    async fn what_is_left_at_the_end_is_told_in_requests_the_gate_takes() {
        let sizes: Arc<Mutex<Vec<usize>>> = Arc::default();
        let seen = sizes.clone();
        let app = axum::Router::new().route(
            signed::ANSWERS_PATH,
            axum::routing::post(move |body: axum::body::Bytes| {
                let seen = seen.clone();
                async move {
                    let told: Answers = serde_json::from_slice(&body).unwrap();
                    seen.lock().unwrap().push(told.answers.len());
                    axum::Json(serde_json::json!({"kept": told.answers.len()}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gate = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let (keeper, reporter) = GateKeeper::new("files", &gate, SigningKey::from_bytes(&[7; 32])).unwrap();
        let summary = || Summary { bytes: 2, failed: false, excerpt: "ok".into(), flags: Vec::new() };
        for n in 0..600 {
            keeper.answered(format!("step-{n}"), summary()).await;
        }
        reporter.finish().await;
        let sizes = sizes.lock().unwrap().clone();
        assert_eq!(sizes.iter().sum::<usize>(), 600, "{sizes:?}");
        assert!(sizes.iter().all(|n| *n <= signed::MAX_ANSWERS), "{sizes:?}");
    }
}
