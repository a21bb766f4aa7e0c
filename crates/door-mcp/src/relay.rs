//! The relay between an MCP client and an MCP server: every message passes through as
//! the bytes it came as, except what the gate must see first. A client's `tools/call`
//! waits for the [`Keeper`]'s verdict (telling the client progress meanwhile, when it
//! asked for it) and goes on, goes on with other arguments, or is answered with a
//! refusal; the server's answer to `tools/list` is shown to the keeper, which may
//! withhold tools (a changed one, until the user accepted the change); a request of the
//! server's to the client (sampling, elicitation) waits for the keeper too. The server's
//! answer to a call passes on as it came, then is read for the call's timeline
//! ([`crate::answered`]) and told to the keeper. Each direction is read by one task and
//! written by one; what waits does not stop anything else from passing.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_json::Json;
use gatehouse_mcp::call::ToolCall;
use gatehouse_mcp::message::{peek, Id, Kind};
use gatehouse_mcp::tools::Pin;
use gatehouse_mcp::{reply, MAX_MESSAGE};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};

use crate::answered::Summary;
use crate::frame::{Line, Lines, Message};

/// What the gate says of something that waits for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Let it through as it came.
    Pass,
    /// Let the call through with these arguments instead (a rule that narrows it).
    Arguments(Json),
    /// Answer it with this refusal, in words the client shows.
    Refuse(String),
}

/// The gate's verdict on a call, the step it keeps the call as (its answer is told under
/// it), and when the gate's record of it is on disk if it was not yet when the verdict
/// came: the call goes on at once, but its answer reaches the client only after.
pub struct Called {
    pub verdict: Verdict,
    pub step: Option<String>,
    pub on_disk: Option<OnDisk>,
}

/// Resolves once the gate's record of a call is on disk, or with why it could not be put
/// there.
pub type OnDisk = futures_util::future::BoxFuture<'static, Result<(), String>>;

/// How long a server's answer waits for the gate to confirm its record of the call is on
/// disk; past it the client is told the answer was withheld.
pub const ON_DISK_WITHIN: Duration = Duration::from_secs(30);

/// The gate behind the door, for one server.
pub trait Keeper: Send + Sync + 'static {
    /// A call of one of the server's tools, as the client asked it.
    fn call(&self, call: &ToolCall) -> impl Future<Output = Called> + Send;
    /// What answered the call kept as `step`, read once it had gone on to the client.
    fn answered(&self, step: String, answer: Summary) -> impl Future<Output = ()> + Send;
    /// The tools the server listed: the names of those to withhold from the client.
    fn listed(&self, tools: &[Pin]) -> impl Future<Output = Vec<String>> + Send;
    /// A request of the server's to the client or its user (`method`, the whole message).
    fn server_asks(&self, method: &str, message: &[u8]) -> impl Future<Output = Verdict> + Send;
}

/// Calls and requests waiting for the gate at once, per relay (and tool lists asked for
/// and not yet answered); more are refused at once.
pub const MAX_WAITING: usize = 32;
/// Messages queued for a side that is slow to read, per direction.
const QUEUED: usize = 64;
/// Notifications a server may send the client per second (progress, logs, changes); the
/// rest of a flood is dropped, and how many were is logged.
pub const NOTIFICATIONS_PER_SECOND: u32 = 100;

/// Calls gone on to the server and not yet answered whose answers are watched for; beyond
/// it the oldest is forgotten (its answer passes on all the same, unread).
pub const MAX_RUNNING: usize = 256;
/// Answers being read and told at once; an answer beyond it passes on unread (and that is
/// logged).
const READING: usize = 16;

/// How often a client that asked for progress hears that its call still waits.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How a relay ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The client closed its side (it disconnected, or quit).
    Client,
    /// The server closed its side (it exited).
    Server,
}

struct Shared<K> {
    keeper: K,
    /// Ids of the client's `tools/list` requests still unanswered.
    listing: Mutex<HashSet<Id>>,
    running: Mutex<Running>,
    waiting: Arc<Semaphore>,
    reading: Arc<Semaphore>,
    /// Answers held until the gate's record of their call is on disk.
    holding: Arc<Semaphore>,
    to_client: mpsc::Sender<Arc<Message>>,
    to_server: mpsc::Sender<Arc<Message>>,
}

/// Calls gone on to the server, by id; and how many went so far.
#[derive(Default)]
struct Running {
    sent: u64,
    calls: HashMap<Id, Run>,
}

/// A call gone on to the server: the order it went in, its step, and its record.
struct Run {
    at: u64,
    step: Option<String>,
    record: Record,
}

/// Where the gate's record of a call that went on is.
enum Record {
    OnDisk,
    Waiting(OnDisk),
    Failed(String),
}

impl Record {
    /// Takes in what the gate said since, without waiting.
    fn settle(&mut self) {
        if let Record::Waiting(f) = self {
            if let Some(r) = futures_util::FutureExt::now_or_never(f) {
                *self = r.map_or_else(Record::Failed, |()| Record::OnDisk);
            }
        }
    }
}

/// A message of Gatehouse's own, or one passed on whole.
fn out(bytes: Vec<u8>) -> Arc<Message> {
    Arc::new(bytes.into())
}

/// Relays between a client (`client_in` read, `client_out` written) and a server until
/// either side closes.
pub async fn run<K: Keeper>(
    client_in: impl AsyncBufRead + Unpin + Send + 'static,
    client_out: impl AsyncWrite + Unpin + Send + 'static,
    server_in: impl AsyncBufRead + Unpin + Send + 'static,
    server_out: impl AsyncWrite + Unpin + Send + 'static,
    keeper: K,
) -> std::io::Result<Ended> {
    let (to_client, client_rx) = mpsc::channel(QUEUED);
    let (to_server, server_rx) = mpsc::channel(QUEUED);
    let shared = Arc::new(Shared {
        keeper,
        listing: Mutex::new(HashSet::new()),
        running: Mutex::default(),
        waiting: Arc::new(Semaphore::new(MAX_WAITING)),
        reading: Arc::new(Semaphore::new(READING)),
        holding: Arc::new(Semaphore::new(MAX_RUNNING)),
        to_client,
        to_server,
    });
    let writers = [tokio::spawn(write(client_rx, client_out)), tokio::spawn(write(server_rx, server_out))];
    let from_client = tokio::spawn(from_client(Lines::new(client_in, MAX_MESSAGE), shared.clone()));
    let from_server = tokio::spawn(from_server(Lines::new(server_in, MAX_MESSAGE), shared.clone()));
    let ended = tokio::select! {
        r = from_client => r.unwrap_or(Ok(())).map(|()| Ended::Client),
        r = from_server => r.unwrap_or(Ok(())).map(|()| Ended::Server),
    };
    // What answered the last calls is told before the relay ends, within a bound: a gate
    // that does not answer cannot hold the app's session open.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let held = shared.holding.acquire_many(MAX_RUNNING as u32).await;
        let read = shared.reading.acquire_many(READING as u32).await;
        (held, read)
    })
    .await;
    for w in writers {
        w.abort();
    }
    ended
}

async fn write(mut rx: mpsc::Receiver<Arc<Message>>, out: impl AsyncWrite + Unpin) {
    // A message and its line end leave in one write; a long one's pieces go as they are.
    let mut out = tokio::io::BufWriter::with_capacity(crate::frame::PIECE, out);
    while let Some(m) = rx.recv().await {
        for piece in m.pieces() {
            if out.write_all(piece).await.is_err() {
                return;
            }
        }
        if out.write_all(b"\n").await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}

async fn from_client<K: Keeper>(mut lines: Lines<impl AsyncBufRead + Unpin>, s: Arc<Shared<K>>) -> std::io::Result<()> {
    while let Some(line) = lines.next().await? {
        let bytes = match line {
            Line::Message(m) => m.into_vec(),
            Line::TooLong(n) => {
                let _ = s
                    .to_client
                    .send(out(reply::unreadable(reply::INVALID_REQUEST, &format!("a message of {n} bytes is over the {MAX_MESSAGE}-byte bound"))))
                    .await;
                continue;
            }
        };
        match peek(&bytes) {
            Err(e) => {
                let _ = s.to_client.send(out(reply::unreadable(reply::INVALID_REQUEST, &e.to_string()))).await;
            }
            Ok(Kind::Request { id, method }) if method == "tools/call" => {
                let Ok(permit) = s.waiting.clone().try_acquire_owned() else {
                    let _ = s
                        .to_client
                        .send(out(reply::error(&id, reply::REFUSED, "Gatehouse: too many calls are waiting for your answer; try again once they are decided")))
                        .await;
                    continue;
                };
                let s = s.clone();
                tokio::spawn(async move {
                    judge_call(&s, id, bytes).await;
                    drop(permit);
                });
            }
            // Gatehouse speaks the handshake revisions: a client probing for the stateless
            // one is told it is not here and falls back to `initialize` (docs/interop.md).
            Ok(Kind::Request { id, method }) if method == "server/discover" => {
                let _ = s.to_client.send(out(reply::error(&id, reply::METHOD_NOT_FOUND, "server/discover: this server speaks the initialize handshake"))).await;
            }
            Ok(Kind::Request { id, method }) if method == "tools/list" => {
                let kept = {
                    let mut listing = s.listing.lock().unwrap_or_else(|p| p.into_inner());
                    listing.len() < MAX_WAITING && listing.insert(id.clone())
                };
                // An answer the gate would not be watching for must not reach the client
                // unread: a list asked for beyond the bound (or under an id already
                // waiting) is refused instead.
                s.on_or_refused(kept, &id, bytes, reply::INVALID_REQUEST, "Gatehouse: too many tool lists are being asked for at once").await;
            }
            Ok(_) => {
                let _ = s.to_server.send(out(bytes)).await;
            }
        }
    }
    Ok(())
}

async fn judge_call<K: Keeper>(s: &Shared<K>, id: Id, bytes: Vec<u8>) {
    let call = match ToolCall::read(&bytes) {
        Ok(c) => c,
        Err(e) => {
            let _ = s.to_client.send(out(reply::error(&id, reply::INVALID_REQUEST, &e.to_string()))).await;
            return;
        }
    };
    let Called { verdict, step, on_disk } = {
        let judged = s.keeper.call(&call);
        tokio::pin!(judged);
        // The first tick after one period: an interval's immediate first tick still waits
        // for the timer's next millisecond, which every call would pay.
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let mut told: u64 = 0;
        loop {
            tokio::select! {
                v = &mut judged => break v,
                _ = tick.tick() => {
                    if let Some(token) = &call.progress_token {
                        told = told.saturating_add(1);
                        let _ = s.to_client.send(out(reply::progress(token, told, "waiting for the user to decide in Gatehouse"))).await;
                    }
                }
            }
        }
    };
    let bytes = match verdict {
        Verdict::Pass => bytes,
        Verdict::Arguments(a) => match ToolCall::with_arguments(&bytes, &a) {
            Ok(b) => b,
            Err(e) => {
                let _ = s.to_client.send(out(reply::error(&id, reply::REFUSED, &format!("Gatehouse could not change the call's arguments: {e}")))).await;
                return;
            }
        },
        Verdict::Refuse(why) => {
            let _ = s.to_client.send(out(reply::error(&id, reply::REFUSED, &why))).await;
            return;
        }
    };
    let record = on_disk.map_or(Record::OnDisk, Record::Waiting);
    let go = s.run(id.clone(), step, record);
    s.on_or_refused(go, &id, bytes, reply::REFUSED, "Gatehouse: this server has too many calls running whose records are not yet on disk").await;
}

impl<K: Keeper> Shared<K> {
    /// Sends the client's request `bytes` on to the server when `go`; else answers it
    /// (`id`) with the error `code` and `why`.
    async fn on_or_refused(&self, go: bool, id: &Id, bytes: Vec<u8>, code: i64, why: &str) {
        let _ = match go {
            true => self.to_server.send(out(bytes)).await,
            false => self.to_client.send(out(reply::error(id, code, why))).await,
        };
    }

    /// Watches for the answer to the call `id`, gone on as `step` with its `record`
    /// (before it is sent: the answer cannot come first). False when it must not go on:
    /// the oldest call watched for, which would make room, has a record not yet on disk
    /// (its answer must wait for it, so it cannot be forgotten).
    fn run(&self, id: Id, step: Option<String>, record: Record) -> bool {
        if step.is_none() && matches!(record, Record::OnDisk) {
            return true;
        }
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let Running { sent, calls } = &mut *running;
        if calls.len() >= MAX_RUNNING {
            let Some((oldest, run)) = calls.iter_mut().min_by_key(|(_, r)| r.at) else { return false };
            run.record.settle();
            if !matches!(run.record, Record::OnDisk) {
                return false;
            }
            let oldest = oldest.clone();
            calls.remove(&oldest);
            tracing::warn!("an MCP server left {MAX_RUNNING} calls unanswered: the oldest one's answer will not be read");
        }
        *sent = sent.saturating_add(1);
        calls.insert(id, Run { at: *sent, step, record });
        true
    }

    /// The call `id` answered now, if its answer was watched for.
    fn answered(&self, id: &Id) -> Option<Run> {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).calls.remove(id)
    }
}

/// Passes on the answer `m` to the call `id`, once the gate's record of the call is on
/// disk (waiting for it off the reading task), then reads it for the call's timeline; or
/// tells the client it was withheld, when the record could not be put there.
async fn deliver<K: Keeper>(s: &Arc<Shared<K>>, id: Id, m: Arc<Message>, run: Run) {
    let Run { step, mut record, .. } = run;
    record.settle();
    match record {
        Record::OnDisk => {
            let _ = s.to_client.send(m.clone()).await;
            if let Some(step) = step {
                read_answer(s, step, m);
            }
        }
        Record::Failed(why) => {
            let _ = s.to_client.send(withheld(&id, &why)).await;
        }
        Record::Waiting(on_disk) => {
            let Ok(permit) = s.holding.clone().try_acquire_owned() else {
                let _ = s.to_client.send(withheld(&id, "too many answers are waiting for it")).await;
                return;
            };
            let s = s.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(ON_DISK_WITHIN, on_disk).await {
                    Ok(Ok(())) => {
                        let _ = s.to_client.send(m.clone()).await;
                        if let Some(step) = step {
                            read_answer(&s, step, m);
                        }
                    }
                    Ok(Err(why)) => {
                        let _ = s.to_client.send(withheld(&id, &why)).await;
                    }
                    Err(_) => {
                        let _ = s.to_client.send(withheld(&id, &format!("Gatehouse did not confirm it within {} s", ON_DISK_WITHIN.as_secs()))).await;
                    }
                }
                drop(permit);
            });
        }
    }
}

/// What the client is told instead of the answer to the call `id`, when the gate's record
/// of the call could not be put on disk (the tool ran; the app never sees its answer).
fn withheld(id: &Id, why: &str) -> Arc<Message> {
    out(reply::error(id, reply::REFUSED, &format!("Gatehouse could not keep its record of this call ({why}); the server's answer is withheld")))
}

/// Reads an answer that went on to the client and tells the keeper (a long one off the
/// async workers).
fn read_answer<K: Keeper>(s: &Arc<Shared<K>>, step: String, m: Arc<Message>) {
    let Ok(permit) = s.reading.clone().try_acquire_owned() else {
        tracing::warn!("{READING} MCP answers are being read: one passed on unread");
        return;
    };
    let s = s.clone();
    tokio::spawn(async move {
        let summary = match m.pieces().len() {
            0 | 1 => Some(crate::answered::read(&m)),
            _ => tokio::task::spawn_blocking(move || crate::answered::read(&m)).await.ok(),
        };
        if let Some(summary) = summary {
            s.keeper.answered(step, summary).await;
        }
        drop(permit);
    });
}

/// How many notifications went through in the current second, and how many were dropped.
struct Budget {
    second: tokio::time::Instant,
    sent: u32,
    dropped: u64,
}

impl Budget {
    /// Whether one more notification may go now.
    fn take(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        if now.duration_since(self.second) >= Duration::from_secs(1) {
            if self.dropped > 0 {
                tracing::warn!(
                    dropped = self.dropped,
                    per_second = NOTIFICATIONS_PER_SECOND,
                    "an MCP server's notifications over the bound were not passed on"
                );
            }
            *self = Budget { second: now, sent: 0, dropped: 0 };
        }
        self.sent = self.sent.saturating_add(1);
        if self.sent > NOTIFICATIONS_PER_SECOND {
            self.dropped = self.dropped.saturating_add(1);
            return false;
        }
        true
    }
}

async fn from_server<K: Keeper>(mut lines: Lines<impl AsyncBufRead + Unpin>, s: Arc<Shared<K>>) -> std::io::Result<()> {
    let mut budget = Budget { second: tokio::time::Instant::now(), sent: 0, dropped: 0 };
    while let Some(line) = lines.next().await? {
        let m = match line {
            Line::Message(m) => m,
            // Which request it answered cannot be read: the client's wait for it ends with
            // the client's own timeout, and the message is not passed on.
            Line::TooLong(n) => {
                tracing::warn!(bytes = n, "an MCP server's message over the bound was not passed on");
                continue;
            }
        };
        match m.kind() {
            Ok(Kind::Response { id, error: false }) if s.listing.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) => {
                let listed = listed(&s.keeper, &id, m.into_vec()).await;
                let _ = s.to_client.send(out(listed)).await;
            }
            Ok(Kind::Request { id, method }) if method == "sampling/createMessage" || method == "elicitation/create" => {
                let Ok(permit) = s.waiting.clone().try_acquire_owned() else {
                    let _ = s.to_server.send(out(reply::error(&id, reply::REFUSED, "Gatehouse: too many requests are waiting for the user"))).await;
                    continue;
                };
                let s = s.clone();
                let bytes = m.into_vec();
                tokio::spawn(async move {
                    match s.keeper.server_asks(&method, &bytes).await {
                        Verdict::Pass | Verdict::Arguments(_) => {
                            let _ = s.to_client.send(out(bytes)).await;
                        }
                        Verdict::Refuse(why) => {
                            let _ = s.to_server.send(out(reply::error(&id, reply::REFUSED, &why))).await;
                        }
                    }
                    drop(permit);
                });
            }
            // A flood of notifications reaches the client at a bounded rate: what a server
            // says to no request in particular cannot keep the client busy.
            Ok(Kind::Notification { .. }) if !budget.take() => {}
            // An answer to a call: on to the client as it came (once the gate's record of
            // the call is on disk), then read for its timeline.
            Ok(Kind::Response { id, .. }) => {
                let m = Arc::new(m);
                match s.answered(&id) {
                    Some(run) => deliver(&s, id, m, run).await,
                    None => {
                        let _ = s.to_client.send(m).await;
                    }
                }
            }
            Ok(_) => {
                let _ = s.to_client.send(Arc::new(m)).await;
            }
            // A server's message that is not MCP is not passed on (the client would have
            // to make sense of it).
            Err(e) => tracing::warn!(error = %e, "an MCP server sent what is not an MCP message"),
        }
    }
    Ok(())
}

/// The server's answer to `tools/list` shown to the keeper, and passed on without the
/// tools it withholds (unchanged when it withholds none). A list the gate cannot read
/// does not reach the client: the model would be shown tools nobody pinned.
async fn listed<K: Keeper>(keeper: &K, id: &Id, bytes: Vec<u8>) -> Vec<u8> {
    let refused = |why: String| reply::error(id, reply::REFUSED, &format!("Gatehouse could not read this server's tool list: {why}"));
    let mut msg: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(m) => m,
        Err(e) => return refused(e.to_string()),
    };
    let pins = match msg.get("result").map(gatehouse_mcp::tools::pins) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return refused(e.to_string()),
        None => return refused("it has no result".into()),
    };
    let withheld = keeper.listed(&pins).await;
    if withheld.is_empty() {
        return bytes;
    }
    if let Some(tools) = msg.get_mut("result").and_then(|r| r.get_mut("tools")).and_then(serde_json::Value::as_array_mut) {
        tools.retain(|t| !t.get("name").and_then(serde_json::Value::as_str).is_some_and(|n| withheld.iter().any(|w| w == n)));
    }
    serde_json::to_vec(&msg).unwrap_or_else(|e| refused(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt as _, BufReader};

    struct Nobody;

    impl Keeper for Nobody {
        async fn call(&self, _call: &ToolCall) -> Called {
            Called { verdict: Verdict::Pass, step: None, on_disk: None }
        }
        async fn answered(&self, _step: String, _answer: crate::answered::Summary) {}
        async fn listed(&self, _tools: &[Pin]) -> Vec<String> {
            Vec::new()
        }
        async fn server_asks(&self, _method: &str, _message: &[u8]) -> Verdict {
            Verdict::Pass
        }
    }

    #[tokio::test]
    async fn tool_lists_asked_for_beyond_the_bound_are_refused_not_passed_unwatched() {
        let (client, relay_client) = tokio::io::duplex(1 << 20);
        let (server, relay_server) = tokio::io::duplex(1 << 20);
        let (rc_in, rc_out) = tokio::io::split(relay_client);
        let (rs_in, rs_out) = tokio::io::split(relay_server);
        tokio::spawn(run(BufReader::new(rc_in), rc_out, BufReader::new(rs_in), rs_out, Nobody));
        let (client_in, mut client_out) = tokio::io::split(client);
        // A server that never answers: every list waits.
        let (server_in, _server_out) = tokio::io::split(server);
        for n in 0..=MAX_WAITING {
            client_out.write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"tools/list\"}}\n").as_bytes()).await.unwrap();
        }
        client_out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/list\"}\n").await.unwrap();
        let mut answers = BufReader::new(client_in).lines();
        for want in [MAX_WAITING, 0] {
            let line = tokio::time::timeout(Duration::from_secs(5), answers.next_line()).await.unwrap().unwrap().unwrap();
            let Ok(Kind::Response { id, error: true }) = peek(line.as_bytes()) else { panic!("{line}") };
            assert_eq!(id.json(), want.to_string(), "{line}");
        }
        let mut forwarded = BufReader::new(server_in).lines();
        for n in 0..MAX_WAITING {
            let line = forwarded.next_line().await.unwrap().unwrap();
            assert!(line.contains(&format!("\"id\":{n},")), "{line}");
        }
    }
}
