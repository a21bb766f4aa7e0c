//! A wrap's kept line to the gate: one connection, authenticated once, then framed calls.
//! Asking about each call over its own signed HTTP request cost the trip most of what
//! Gatehouse adds to a call (docs/performance.md, issue 59): the request's parsing on both
//! sides and a signature made and checked each time.
//!
//! - The wrap asks the inbox to upgrade `GET` [`LINE_PATH`] to [`UPGRADE`] (the inbox's
//!   listener checks Host and Origin first, as for every request). The gate answers 101
//!   with a fresh [`CHALLENGE_HEADER`].
//! - The wrap's first line is its [`Hello`]: the server's name and key, and the key's
//!   signature over the challenge and the name. A hello seen once is worth nothing again:
//!   the challenge is never reused, so a copy of it opens nothing.
//! - Then each line the wrap sends is a [`Sent`] call of that server, and each the gate
//!   sends is a [`Said`]: its decision, and when the call's record is on disk if it was
//!   not yet. Calls are answered as they are decided, not in order: one that waits for the
//!   user holds no other.
//!
//! Bounds: [`MAX_LINES`] open at once on a gate, [`MAX_IN_FLIGHT`] calls undecided on one
//! line, a line of at most [`MAX_FRAME`] bytes, the hello within [`HELLO_WITHIN`], and a
//! wrap that does not read what the gate says within [`WRITE_WITHIN`] loses its line.

use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};

use crate::at_gate::McpDoor;
use crate::frame::{Line, Lines};
use crate::signed::{self, Asked, Decided};

/// Where a wrap asks for its line.
pub const LINE_PATH: &str = "/mcp/v1/line";
/// The protocol the connection is upgraded to.
pub const UPGRADE: &str = "gatehouse-mcp-line/1";
/// The gate's challenge, in the 101 answer: 32 random bytes, hex.
pub const CHALLENGE_HEADER: &str = "gatehouse-mcp-challenge";
/// Lines open at once on one gate (one for each wrapped server running); more are refused.
pub const MAX_LINES: usize = 64;
/// Calls of one line undecided at once; more are refused, each in its own answer.
pub const MAX_IN_FLIGHT: usize = 64;
/// A line of either side is at most this long: a call as large as the gate judges, and
/// its name and number.
pub const MAX_FRAME: usize = signed::MAX_BODY + 64 * 1024;
/// The hello must arrive within this time of the upgrade.
pub const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// What the gate says must be taken by the wrap within this time.
pub const WRITE_WITHIN: Duration = Duration::from_secs(10);
/// What a hello's signature is made over, before the challenge and the server's name.
const CONTEXT: &str = "gatehouse-mcp-line/1";

/// The wrap's first line: which server the line is for, proven with its key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub server: String,
    /// The server's public key, 64 hex digits.
    pub key: String,
    /// Its signature over [`CONTEXT`], the challenge and the server's name, 128 hex digits.
    pub signature: String,
}

impl Hello {
    /// The hello of the server `server` with the key `key`, answering `challenge` (hex).
    pub fn new(key: &SigningKey, challenge: &str, server: &str) -> Hello {
        let sig = key.sign(&message(challenge, server));
        Hello { server: server.to_string(), key: hex::encode(key.verifying_key().as_bytes()), signature: hex::encode(sig.to_bytes()) }
    }

    /// The key that made it for `challenge` (64 hex digits), or why it is not taken.
    pub fn verify(&self, challenge: &str) -> Result<String, String> {
        if !signed::name_ok(&self.server) {
            return Err("a hello names its server (1 to 64 letters, digits, - or _)".into());
        }
        let public: [u8; 32] = hex::decode(&self.key).ok().and_then(|b| b.try_into().ok()).ok_or("a hello's key is 64 hex digits")?;
        let sig: [u8; 64] = hex::decode(&self.signature).ok().and_then(|b| b.try_into().ok()).ok_or("a hello's signature is 128 hex digits")?;
        let public = VerifyingKey::from_bytes(&public).map_err(|_| "the hello's signature does not verify with the key it names")?;
        public
            .verify_strict(&message(challenge, &self.server), &Signature::from_bytes(&sig))
            .map_err(|_| "the hello's signature does not verify with the key it names (or answers another challenge)")?;
        Ok(hex::encode(public.as_bytes()))
    }
}

fn message(challenge: &str, server: &str) -> Vec<u8> {
    format!("{CONTEXT}\n{challenge}\n{server}").into_bytes()
}

/// A call the wrap sends on its line, numbered by the wrap.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sent {
    pub id: u64,
    pub call: Asked,
}

/// What the gate says on a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "said", rename_all = "snake_case")]
pub enum Said {
    /// The hello was taken: calls may follow.
    Ready,
    /// The call `id` was not judged (or, without one, the line is closed), and why.
    Refused { id: Option<u64>, error: String },
    /// The call `id` was decided; `keeping`: its record is not on disk yet, and a
    /// [`Said::Kept`] follows (the call may go on meanwhile; its answer must not reach the
    /// app before).
    Decided { id: u64, decided: Decided, keeping: bool },
    /// The record of the call `id` is on disk (`error`: it could not be kept).
    Kept { id: u64, error: Option<String> },
}

impl Said {
    /// The line it is sent as.
    pub fn line(&self) -> Vec<u8> {
        let mut l = serde_json::to_vec(self).unwrap_or_default();
        l.push(b'\n');
        l
    }
}

/// A fresh challenge, hex.
pub fn challenge() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// Serves one line, upgraded from the inbox, that was given `challenge`, until the wrap
/// closes it or breaks a rule of it.
pub async fn serve<S: AsyncRead + AsyncWrite + Send + 'static>(door: Arc<McpDoor>, io: S, challenge: String) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = Lines::new(tokio::io::BufReader::new(read), MAX_FRAME);
    let hello = match tokio::time::timeout(HELLO_WITHIN, lines.next()).await {
        Ok(Ok(Some(Line::Message(m)))) => m.json::<Hello>().map_err(|e| format!("the first line is a hello: {e}")),
        Ok(Ok(Some(Line::TooLong(_)))) => Err("the first line is a hello, far shorter than that".into()),
        Ok(_) => return,
        Err(_) => Err(format!("no hello within {} s", HELLO_WITHIN.as_secs())),
    };
    let (server, public) = match hello.and_then(|h| h.verify(&challenge).map(|k| (h.server, k))) {
        Ok(x) => x,
        Err(error) => {
            let _ = tokio::time::timeout(WRITE_WITHIN, write.write_all(&Said::Refused { id: None, error }.line())).await;
            return;
        }
    };
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(MAX_IN_FLIGHT * 2);
    let writer = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            match tokio::time::timeout(WRITE_WITHIN, write.write_all(&line)).await {
                Ok(Ok(())) => {}
                // Not read (or gone): the line ends; what is undecided is refused by the wrap.
                _ => return,
            }
        }
        let _ = write.shutdown().await;
    });
    if tx.send(Said::Ready.line()).await.is_err() {
        return;
    }
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    // Calls still undecided when the wrap goes are dropped with it, as a request's are when
    // its client goes: nothing waits for the user on behalf of an app that is gone.
    let mut calls = tokio::task::JoinSet::new();
    loop {
        while calls.try_join_next().is_some() {}
        let next = tokio::select! {
            next = lines.next() => next,
            // The wrap stopped reading: nothing more it sends is judged.
            () = tx.closed() => break,
        };
        let sent = match next {
            Ok(Some(Line::Message(m))) => m.json::<Sent>().map(|s| (s, m.len() as u64)).map_err(|e| format!("a line is a call: {e}")),
            Ok(Some(Line::TooLong(n))) => Err(format!("a line is at most {MAX_FRAME} bytes; one was {n}")),
            Ok(None) | Err(_) => break,
        };
        let (Sent { id, call }, size) = match sent {
            Ok(x) => x,
            // Not what a wrap sends: the line ends.
            Err(error) => {
                let _ = tx.send(Said::Refused { id: None, error }.line()).await;
                break;
            }
        };
        if call.server != server {
            let error = format!("this line is the server “{server}”'s; a call of “{}” is asked on its own", call.server);
            let _ = tx.send(Said::Refused { id: Some(id), error }.line()).await;
            continue;
        }
        if !call.well_formed() {
            let _ = tx.send(Said::Refused { id: Some(id), error: signed::MALFORMED_CALL.into() }.line()).await;
            continue;
        }
        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
            let error = format!("{MAX_IN_FLIGHT} calls of this server wait for Gatehouse already; the call was not sent");
            let _ = tx.send(Said::Refused { id: Some(id), error }.line()).await;
            continue;
        };
        let (door, tx, public) = (door.clone(), tx.clone(), public.clone());
        calls.spawn(async move {
            match door.ask(&public, call, size).await.now() {
                (decided, None) => {
                    let _ = tx.send(Said::Decided { id, decided, keeping: false }.line()).await;
                }
                (decided, Some(on_disk)) => {
                    let _ = tx.send(Said::Decided { id, decided, keeping: true }.line()).await;
                    let error = on_disk.done().await.err().map(|e| e.to_string());
                    let _ = tx.send(Said::Kept { id, error }.line()).await;
                }
            }
            drop(permit);
        });
    }
    calls.abort_all();
    drop(tx);
    let _ = writer.await;
}
