//! MAIL 2.0 (PyPI `mail-swarms` 2.x): email-like messages between users and agents, in
//! boxes on a server, behind a password login that yields a JWT. Read as the released
//! reference server (2.0.1) answers, which differs from its own openapi.yaml: messages
//! carry no `mail_version`, `reply_to` or `tags` (docs/interop.md, "MAIL 2.0").
//!
//! - [`Credentials`]: the address and password the user logs in with (kept in the keychain
//!   by the caller, for one server address).
//! - [`Message`]: a message read leniently: only what a user needs is required.
//! - [`Client`]: log in (again, once, when the token expires), boxes, send.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use gatehouse_http::HttpError;

use crate::client::{normalize_url, read_json, ClientError};

/// Whether `GET /` says the server speaks MAIL 2.x.
pub fn speaks_v2(root: &Value) -> bool {
    root.get("protocol_version").and_then(Value::as_str).is_some_and(|v| v.starts_with("2."))
}

/// What the user logs in with. The password is a secret: it is never shown or logged.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Credentials {
    /// `user:alice@host` (or an agent's `name@swarm@host`).
    pub address: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("address", &self.address).finish_non_exhaustive()
    }
}

/// A message as a 2.0 server sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub message_id: String,
    /// The message this one answers, when the server says (the spec's field; the released
    /// server drops it).
    pub reply_to: Option<String>,
    pub sender: String,
    pub recipients: Vec<String>,
    pub subject: String,
    pub body: String,
    pub sent_at: String,
    pub raw: Value,
}

impl Message {
    /// Reads a message; an id, a sender and a body are required, the rest may be missing.
    pub fn read(v: &Value) -> Result<Message, ClientError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let need = |k: &str| s(k).ok_or_else(|| ClientError::Protocol(format!("a MAIL 2.0 message without `{k}`")));
        Ok(Message {
            message_id: need("message_id")?,
            reply_to: s("reply_to").filter(|r| !r.is_empty()),
            sender: need("sender")?,
            recipients: v
                .get("recipients")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|r| r.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            subject: s("subject").unwrap_or_default(),
            body: need("body")?,
            sent_at: s("sent_at").unwrap_or_default(),
            raw: v.clone(),
        })
    }
}

/// A subject without its `Re:`/`Fwd:` prefixes: what a conversation is known by when the
/// server gives no `reply_to`.
pub fn thread_subject(subject: &str) -> String {
    let mut s = subject.trim();
    loop {
        let lower = s.to_ascii_lowercase();
        let Some(cut) = ["re:", "fwd:", "fw:"].iter().find(|p| lower.starts_with(*p)).map(|p| p.len()) else {
            return s.to_string();
        };
        // `cut` is the length of an ASCII prefix: a character boundary.
        s = s.get(cut..).unwrap_or_default().trim_start();
    }
}

/// Whether a server-given id may go into a path: the server's ids are UUIDs.
fn uuid_like(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Which box a listing comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Box {
    Inbox,
    Outbox,
}

impl Box {
    fn path(self) -> &'static str {
        match self {
            Box::Inbox => "/inbox",
            Box::Outbox => "/outbox",
        }
    }
}

/// The most a box listing returns per page (the server's own maximum).
pub const PAGE: usize = 100;

pub struct Client {
    base: String,
    creds: Credentials,
    http: reqwest::Client,
    token: tokio::sync::Mutex<Option<String>>,
}

impl Client {
    pub fn new(base_url: &str, creds: Credentials) -> Result<Client, ClientError> {
        let base = normalize_url(base_url)?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(Client { base, creds, http, token: tokio::sync::Mutex::new(None) })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn address(&self) -> &str {
        &self.creds.address
    }

    /// `GET /` (no login): `{protocol_name: "mail", protocol_version: "2.0", uptime}`.
    pub async fn root(&self) -> Result<Value, ClientError> {
        let resp = self.http.get(format!("{}/", self.base)).send().await.map_err(|e| HttpError::failed(&self.base, &e))?;
        read_json(&self.base, "/", resp).await
    }

    /// `GET /health` (no login): `{status: "ok"}` on mail-swarms 2.0.1.
    pub async fn health(&self) -> Result<Value, ClientError> {
        let resp = self.http.get(format!("{}/health", self.base)).send().await.map_err(|e| HttpError::failed(&self.base, &e))?;
        read_json(&self.base, "/health", resp).await
    }

    /// `POST /auth/token` with the password (an OAuth2 password form); keeps the token.
    pub async fn login(&self) -> Result<String, ClientError> {
        let form = [("grant_type", "password"), ("username", self.creds.address.as_str()), ("password", self.creds.password.as_str())];
        let resp = self.http.post(format!("{}/auth/token", self.base)).form(&form).send().await.map_err(|e| HttpError::failed(&self.base, &e))?;
        let v = read_json(&self.base, "/auth/token", resp).await.map_err(|e| match e {
            ClientError::Unauthorized { path, status, detail } => {
                ClientError::Unauthorized { path, status, detail: format!("{detail}: check the address ({}) and password", self.creds.address) }
            }
            other => other,
        })?;
        let token =
            v.get("access_token").and_then(Value::as_str).ok_or_else(|| ClientError::Protocol("/auth/token answered without an access_token".into()))?;
        *self.token.lock().await = Some(token.to_string());
        Ok(token.to_string())
    }

    /// A call with the kept token; logs in first when there is none, and once more when
    /// the server says the token expired.
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, ClientError> {
        let mut relogged = false;
        loop {
            // Bound first: a guard in the match would still be held while logging in.
            let kept = self.token.lock().await.clone();
            let token = match kept {
                Some(t) => t,
                None => {
                    relogged = true;
                    self.login().await?
                }
            };
            let mut r = self.http.request(method.clone(), format!("{}{path}", self.base)).bearer_auth(token);
            if let Some(b) = body {
                r = r.json(b);
            }
            let resp = r.send().await.map_err(|e| HttpError::failed(&self.base, &e))?;
            if resp.status() == reqwest::StatusCode::UNAUTHORIZED && !relogged {
                *self.token.lock().await = None;
                continue;
            }
            return read_json(&self.base, path, resp).await;
        }
    }

    /// `GET /auth/whoami`.
    pub async fn whoami(&self) -> Result<Value, ClientError> {
        self.call(reqwest::Method::GET, "/auth/whoami", None).await
    }

    /// `GET /swarms`: the swarms this server hosts (summaries).
    pub async fn swarms(&self) -> Result<Value, ClientError> {
        self.call(reqwest::Method::GET, "/swarms", None).await
    }

    /// `GET /swarms/{name}`: a swarm with its agents' names.
    pub async fn swarm(&self, name: &str) -> Result<Value, ClientError> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(ClientError::Protocol(format!("not a swarm name: {name:?}")));
        }
        self.call(reqwest::Method::GET, &format!("/swarms/{name}"), None).await
    }

    /// One page of a box, newest first: the summaries' message ids.
    pub async fn list(&self, which: Box, offset: usize) -> Result<Vec<String>, ClientError> {
        let v = self.call(reqwest::Method::GET, &format!("{}?limit={PAGE}&offset={offset}&order=desc", which.path()), None).await?;
        let entries = v.get("entries").and_then(Value::as_array).ok_or_else(|| ClientError::Protocol(format!("{} answered without entries", which.path())))?;
        Ok(entries.iter().filter_map(|e| e.get("message_id").and_then(Value::as_str).map(str::to_string)).collect())
    }

    /// One message of a box, in full (opening an inbox message marks it read).
    pub async fn open(&self, which: Box, message_id: &str) -> Result<Message, ClientError> {
        if !uuid_like(message_id) {
            return Err(ClientError::Protocol(format!("{} listed a message id that is not a UUID: {message_id:?}", which.path())));
        }
        let path = format!("{}/{message_id}", which.path());
        let v = self.call(reqwest::Method::GET, &path, None).await?;
        Message::read(v.pointer("/entry/message").unwrap_or(&Value::Null)).map_err(|e| ClientError::Protocol(format!("{path}: {e}")))
    }

    /// Writes a draft and sends it (`POST /drafts`, then `POST /drafts/{id}/send`).
    pub async fn send(&self, subject: &str, body: &str, reply_to: Option<&str>, recipients: &[String]) -> Result<Message, ClientError> {
        let mut draft = json!({"subject": subject, "body": body});
        if let (Some(r), Some(d)) = (reply_to, draft.as_object_mut()) {
            d.insert("reply_to".into(), r.into());
        }
        let d = self.call(reqwest::Method::POST, "/drafts", Some(&draft)).await?;
        let id =
            d.pointer("/entry/draft/draft_id").and_then(Value::as_str).ok_or_else(|| ClientError::Protocol("/drafts answered without a draft_id".into()))?;
        if !uuid_like(id) {
            return Err(ClientError::Protocol(format!("/drafts answered a draft id that is not a UUID: {id:?}")));
        }
        let path = format!("/drafts/{id}/send");
        let sent = self.call(reqwest::Method::POST, &path, Some(&json!({"recipients": recipients}))).await?;
        let mut m = Message::read(sent.get("message").unwrap_or(&Value::Null)).map_err(|e| ClientError::Protocol(format!("{path}: {e}")))?;
        if m.reply_to.is_none() {
            // What we asked for is what the conversation is, whether or not it came back.
            m.reply_to = reply_to.map(str::to_string);
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_known_by_its_subject_without_reply_prefixes() {
        assert_eq!(thread_subject("Re: RE: Fwd:  Hello"), "Hello");
        assert_eq!(thread_subject("Reply needed"), "Reply needed");
        assert_eq!(thread_subject("  re:"), "");
    }

    #[test]
    fn a_message_needs_an_id_a_sender_and_a_body() {
        let m = Message::read(&json!({"message_id": "a-1", "sender": "sage@chorus@localhost", "recipients": ["user:alice@localhost"], "subject": "Re: Hi", "body": "ok", "sent_at": "t", "metadata": {}})).unwrap();
        assert_eq!((m.reply_to, m.recipients.len()), (None, 1));
        let e = Message::read(&json!({"message_id": "a-1", "sender": "x"})).unwrap_err();
        assert!(e.to_string().contains("`body`"), "{e}");
    }

    #[test]
    fn the_password_is_not_printed() {
        let c = Credentials { address: "user:alice@localhost".into(), password: "hunter2".into() };
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
