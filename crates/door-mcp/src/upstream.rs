//! A remote MCP server reached by address over Streamable HTTP, made to look like a
//! server's stdio: the relay writes lines to it and reads lines from it, as it does with a
//! child's pipes ([`connect`]). Each message the relay sends is POSTed; what comes back
//! (one JSON message, or an SSE stream of them) is handed back as lines. The session id
//! the server gives at `initialize` and the protocol version it agreed go with every later
//! request; the server's own stream (a GET) is listened to while the session lasts, and
//! the session is ended (a DELETE) when the relay closes its side.
//!
//! Everything read is bounded: a message at most [`MAX_MESSAGE`], at most
//! [`MAX_STREAMS`] answers read at once (one that never ends holds one of them, and is
//! dropped once it has answered the request it was for), no redirect followed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use gatehouse_mcp::message::{peek, Id, Kind};
use gatehouse_mcp::{reply, MAX_MESSAGE};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use tokio::io::{AsyncWriteExt as _, DuplexStream};
use tokio::sync::{mpsc, Semaphore};

use crate::frame::{Line, Lines};

/// Answers read from the server at once (POST answers and its own stream).
pub const MAX_STREAMS: usize = 16;
/// How long the server has to begin answering a message.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(60);
const CONNECT: Duration = Duration::from_secs(10);
const SESSION: &str = "mcp-session-id";
const VERSION: &str = "mcp-protocol-version";

/// What is known of the session so far.
#[derive(Default)]
struct Session {
    id: Option<HeaderValue>,
    version: Option<HeaderValue>,
    listening: bool,
}

struct Upstream {
    url: String,
    http: reqwest::Client,
    /// Headers every request carries (the user's credentials for this server).
    headers: HeaderMap,
    session: Mutex<Session>,
    streams: Semaphore,
    back: mpsc::Sender<Vec<u8>>,
}

/// The relay's side of a connection to the MCP server at `url` (an address the user gave;
/// `headers` go with every request). Reading it gives the server's messages, one a line;
/// writing lines to it sends them.
pub fn connect(url: &str, headers: HeaderMap) -> Result<DuplexStream, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let (relay, ours) = tokio::io::duplex(64 * 1024);
    let (read, mut write) = tokio::io::split(ours);
    let (back, mut rx) = mpsc::channel::<Vec<u8>>(64);
    let up = Arc::new(Upstream { url: url.to_string(), http, headers, session: Mutex::default(), streams: Semaphore::new(MAX_STREAMS), back });
    tokio::spawn(async move {
        while let Some(mut line) = rx.recv().await {
            line.push(b'\n');
            if write.write_all(&line).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        let mut lines = Lines::new(tokio::io::BufReader::new(read), MAX_MESSAGE);
        while let Ok(Some(line)) = lines.next().await {
            let Line::Message(msg) = line else { continue };
            let up = up.clone();
            tokio::spawn(async move { up.send(msg.into_vec()).await });
        }
        up.end().await;
    });
    Ok(relay)
}

impl Upstream {
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, &self.url).headers(self.headers.clone());
        let s = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(id) = &s.id {
            r = r.header(SESSION, id.clone());
        }
        if let Some(v) = &s.version {
            r = r.header(VERSION, v.clone());
        }
        r
    }

    /// POSTs one message and hands back what answers it.
    async fn send(self: Arc<Self>, msg: Vec<u8>) {
        let kind = peek(&msg).ok();
        let request = match &kind {
            Some(Kind::Request { id, method }) => Some((id.clone(), method.clone())),
            _ => None,
        };
        let Ok(_permit) = self.streams.acquire().await else { return };
        let sent =
            self.request(reqwest::Method::POST).header(CONTENT_TYPE, "application/json").header(ACCEPT, "application/json, text/event-stream").body(msg).send();
        let resp = match tokio::time::timeout(ANSWER_WITHIN, sent).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return self.failed(request.as_ref(), &format!("could not reach it: {}", gatehouse_http::innermost(&e))).await,
            Err(_) => return self.failed(request.as_ref(), &format!("it did not answer within {} s", ANSWER_WITHIN.as_secs())).await,
        };
        let status = resp.status();
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        if !status.is_success() {
            let why = match status {
                reqwest::StatusCode::NOT_FOUND if self.session.lock().unwrap_or_else(|p| p.into_inner()).id.is_some() => {
                    "its session ended (HTTP 404)".to_string()
                }
                s => format!("it answered HTTP {}", s.as_u16()),
            };
            return self.failed(request.as_ref(), &why).await;
        }
        if let Some((_, method)) = &request {
            if method == "initialize" {
                if let Some(id) = resp.headers().get(SESSION) {
                    self.session.lock().unwrap_or_else(|p| p.into_inner()).id = Some(id.clone());
                }
            }
        }
        let is_stream = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/event-stream"));
        let answers = request.as_ref().map(|(id, _)| id);
        if is_stream {
            self.read_stream(resp, answers).await;
        } else {
            match gatehouse_http::read_limited(&self.url, resp, MAX_MESSAGE).await {
                Ok(body) => self.pass(body).await,
                Err(e) => self.failed(request.as_ref(), &e.to_string()).await,
            }
        }
        if request.as_ref().is_some_and(|(_, m)| m == "initialize") {
            self.clone().listen();
        }
    }

    /// Hands one of the server's messages back (on one line), noting what the session
    /// agreed when it is the answer to `initialize`.
    async fn pass(&self, body: Vec<u8>) {
        let body = match body.contains(&b'\n') {
            // One message a line: a server that pretty-prints is written compactly.
            true => match serde_json::from_slice::<serde_json::Value>(&body) {
                Ok(v) => serde_json::to_vec(&v).unwrap_or_default(),
                Err(_) => return,
            },
            false => body,
        };
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) {
            if let Some(version) = v.pointer("/result/protocolVersion").and_then(serde_json::Value::as_str) {
                if let Ok(h) = HeaderValue::from_str(version) {
                    self.session.lock().unwrap_or_else(|p| p.into_inner()).version.get_or_insert(h);
                }
            }
        }
        let _ = self.back.send(body).await;
    }

    /// Reads an SSE answer until it has answered `answers` (the request it was for) or
    /// ends.
    async fn read_stream(&self, resp: reqwest::Response, answers: Option<&Id>) {
        let mut events = std::pin::pin!(gatehouse_sse::events(resp.bytes_stream(), MAX_MESSAGE));
        while let Some(Ok(e)) = events.next().await {
            if e.data.is_empty() {
                continue;
            }
            let done = matches!((peek(e.data.as_bytes()), answers), (Ok(Kind::Response { id, .. }), Some(want)) if id == *want);
            self.pass(e.data.into_bytes()).await;
            if done {
                return;
            }
        }
    }

    /// The server's own stream, once the session began (a server that offers none
    /// answers 405).
    fn listen(self: Arc<Self>) {
        {
            let mut s = self.session.lock().unwrap_or_else(|p| p.into_inner());
            if s.listening {
                return;
            }
            s.listening = true;
        }
        tokio::spawn(async move {
            let Ok(_permit) = self.streams.acquire().await else { return };
            let Ok(resp) = self.request(reqwest::Method::GET).header(ACCEPT, "text/event-stream").send().await else { return };
            if resp.status().is_success() {
                self.read_stream(resp, None).await;
            }
        });
    }

    /// Answers a request of the client's that the server did not.
    async fn failed(&self, request: Option<&(Id, String)>, why: &str) {
        tracing::debug!(url = %self.url, why, "an MCP server by address failed a message");
        if let Some((id, _)) = request {
            let _ = self.back.send(reply::error(id, reply::INTERNAL_ERROR, &format!("the MCP server at {}: {why}", self.url))).await;
        }
    }

    /// Ends the session when the relay closed its side.
    async fn end(&self) {
        if self.session.lock().unwrap_or_else(|p| p.into_inner()).id.is_some() {
            let _ = tokio::time::timeout(CONNECT, self.request(reqwest::Method::DELETE).send()).await;
        }
    }
}
