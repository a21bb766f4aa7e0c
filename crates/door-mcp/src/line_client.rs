//! The wrap's end of its line ([`crate::line`]): opened when a call is first asked, opened
//! again after it breaks. Where the gate offers none (a gate that does not know lines, a
//! proxy that does not pass upgrades), the wrap asks by signed requests instead
//! ([`Asking::Unavailable`]); a call sent on a line that then broke is refused, never sent
//! twice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ed25519_dalek::SigningKey;
use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use crate::frame::{Line, Lines};
use crate::line::{Hello, Said, CHALLENGE_HEADER, HELLO_WITHIN, LINE_PATH, MAX_FRAME, MAX_IN_FLIGHT, UPGRADE, WRITE_WITHIN};
use crate::relay::OnDisk;
use crate::signed::{Asked, Decided};

/// Why a call got no answer on the line.
#[derive(Debug, PartialEq, Eq)]
pub enum Asking {
    /// There is no line (none offered, or it could not be opened): ask another way.
    Unavailable(String),
    /// The call was sent but not decided: refuse it, in these words.
    Failed(String),
}

/// A wrap's line to its gate.
pub struct LineClient {
    gate: String,
    server: String,
    key: SigningKey,
    http: reqwest::Client,
    /// How long a call may wait for its decision.
    within: Duration,
    open: tokio::sync::Mutex<Option<Arc<Open>>>,
    /// The gate answered that it offers no line: it is not asked again.
    none_offered: AtomicBool,
}

type Decision = Result<(Decided, bool), String>;

/// Who waits for what about one call.
struct Waiter {
    decided: Option<oneshot::Sender<Decision>>,
    kept: Option<oneshot::Sender<Result<(), String>>>,
}

/// An open line.
struct Open {
    to_gate: mpsc::Sender<Vec<u8>>,
    waiting: Mutex<HashMap<u64, Waiter>>,
    next: AtomicU64,
    closed: AtomicBool,
}

impl Open {
    /// Ends the line: every call waiting on it is told `why`.
    fn close(&self, why: &str) {
        self.closed.store(true, Ordering::Release);
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|p| p.into_inner()));
        for (_, w) in waiting {
            if let Some(d) = w.decided {
                let _ = d.send(Err(why.to_string()));
            }
            if let Some(k) = w.kept {
                let _ = k.send(Err(why.to_string()));
            }
        }
    }

    fn take(&self, id: u64) -> Option<Waiter> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&id)
    }

    /// What the gate said, handed to whoever waits for it; false when the line must end.
    fn heard(&self, said: Said) -> bool {
        match said {
            Said::Decided { id, decided, keeping } => {
                let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
                let tell = match keeping {
                    true => waiting.get_mut(&id).and_then(|w| w.decided.take()),
                    false => waiting.remove(&id).and_then(|w| w.decided),
                };
                if let Some(t) = tell {
                    let _ = t.send(Ok((decided, keeping)));
                }
                true
            }
            Said::Kept { id, error } => {
                if let Some(k) = self.take(id).and_then(|w| w.kept) {
                    let _ = k.send(error.map_or(Ok(()), Err));
                }
                true
            }
            Said::Refused { id: Some(id), error } => {
                if let Some(d) = self.take(id).and_then(|w| w.decided) {
                    let _ = d.send(Err(format!("Gatehouse refused to judge it: {error}")));
                }
                true
            }
            Said::Refused { id: None, error } => {
                self.close(&format!("Gatehouse closed the line: {error}; the call was not sent"));
                false
            }
            Said::Ready => {
                self.close("Gatehouse said what is not its MCP door's; the call was not sent");
                false
            }
        }
    }
}

#[derive(Serialize)]
struct SentRef<'a> {
    id: u64,
    call: &'a Asked,
}

impl LineClient {
    /// The line of the server `server` (signed in with `key`) to the gate at `gate`, each
    /// call waiting at most `within` for its decision.
    pub fn new(gate: &str, server: &str, key: SigningKey, within: Duration) -> Result<LineClient, String> {
        let http = reqwest::Client::builder()
            .http1_only()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(LineClient {
            gate: gate.trim_end_matches('/').to_string(),
            server: server.to_string(),
            key,
            http,
            within,
            open: tokio::sync::Mutex::new(None),
            none_offered: AtomicBool::new(false),
        })
    }

    /// The gate's decision on `asked`, and when its record is on disk if it was not yet.
    pub async fn call(&self, asked: &Asked) -> Result<(Decided, Option<OnDisk>), Asking> {
        let open = self.line().await?;
        let id = open.next.fetch_add(1, Ordering::Relaxed);
        let mut frame = serde_json::to_vec(&SentRef { id, call: asked }).map_err(|e| Asking::Failed(e.to_string()))?;
        frame.push(b'\n');
        if frame.len() > MAX_FRAME {
            return Err(Asking::Unavailable("the call is larger than a line takes".into()));
        }
        let (decided, decision) = oneshot::channel();
        let (kept, on_disk) = oneshot::channel();
        open.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(id, Waiter { decided: Some(decided), kept: Some(kept) });
        // Not sent at all: the line was closing; the next call opens another.
        if open.closed.load(Ordering::Acquire) || open.to_gate.send(frame).await.is_err() {
            open.take(id);
            return Err(Asking::Unavailable("the line to Gatehouse closed".into()));
        }
        let decided = match tokio::time::timeout(self.within, decision).await {
            Ok(Ok(Ok(d))) => d,
            Ok(Ok(Err(why))) => return Err(Asking::Failed(why)),
            Ok(Err(_)) => return Err(Asking::Failed("Gatehouse closed the line before it decided; the call was not sent".into())),
            Err(_) => {
                open.take(id);
                let minutes = self.within.as_secs() / 60;
                return Err(Asking::Failed(format!("Gatehouse at {} did not decide within {minutes} minutes; the call was not sent", self.gate)));
            }
        };
        match decided {
            (decided, false) => Ok((decided, None)),
            (decided, true) => {
                let on_disk: OnDisk =
                    Box::pin(async move { on_disk.await.unwrap_or_else(|_| Err("Gatehouse closed the line before it said it kept the call".into())) });
                Ok((decided, Some(on_disk)))
            }
        }
    }

    /// The open line, opened if it is not.
    async fn line(&self) -> Result<Arc<Open>, Asking> {
        if self.none_offered.load(Ordering::Relaxed) {
            return Err(Asking::Unavailable("Gatehouse offers no line".into()));
        }
        let mut slot = self.open.lock().await;
        if let Some(open) = slot.as_ref().filter(|o| !o.closed.load(Ordering::Acquire)) {
            return Ok(open.clone());
        }
        *slot = None;
        match self.connect().await {
            Ok(open) => {
                *slot = Some(open.clone());
                Ok(open)
            }
            Err((for_good, why)) => {
                if for_good {
                    tracing::info!(server = %self.server, "no line to Gatehouse ({why}): each call is asked by a request of its own");
                    self.none_offered.store(true, Ordering::Relaxed);
                }
                Err(Asking::Unavailable(why))
            }
        }
    }

    /// Opens a line: upgraded, the hello taken; or why not (and whether to stop trying).
    async fn connect(&self) -> Result<Arc<Open>, (bool, String)> {
        let asked =
            self.http.get(format!("{}{LINE_PATH}", self.gate)).header(reqwest::header::CONNECTION, "upgrade").header(reqwest::header::UPGRADE, UPGRADE).send();
        let r = tokio::time::timeout(HELLO_WITHIN, asked).await.map_err(|_| (false, "no answer in time".to_string()))?.map_err(|e| (false, e.to_string()))?;
        if r.status() != reqwest::StatusCode::SWITCHING_PROTOCOLS {
            // Full now, or not offered at all.
            return Err((r.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE, format!("answered {}", r.status())));
        }
        let challenge = r.headers().get(CHALLENGE_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string).ok_or((true, "no challenge given".to_string()))?;
        let io = r.upgrade().await.map_err(|e| (false, e.to_string()))?;
        let (read, mut write) = tokio::io::split(io);
        let mut lines = Lines::new(tokio::io::BufReader::new(read), MAX_FRAME);
        let mut hello = serde_json::to_vec(&Hello::new(&self.key, &challenge, &self.server)).unwrap_or_default();
        hello.push(b'\n');
        let said = tokio::time::timeout(HELLO_WITHIN, async {
            write.write_all(&hello).await.ok()?;
            match lines.next().await {
                Ok(Some(Line::Message(m))) => m.json::<Said>().ok(),
                _ => None,
            }
        })
        .await;
        match said {
            Ok(Some(Said::Ready)) => {}
            Ok(Some(Said::Refused { error, .. })) => return Err((false, format!("Gatehouse refused the line: {error}"))),
            Ok(_) => return Err((true, "what answered is not Gatehouse's line".into())),
            Err(_) => return Err((false, "the line was not taken in time".into())),
        }
        let (to_gate, mut rx) = mpsc::channel::<Vec<u8>>(MAX_IN_FLIGHT);
        let open = Arc::new(Open { to_gate, waiting: Mutex::new(HashMap::new()), next: AtomicU64::new(1), closed: AtomicBool::new(false) });
        // (Held weakly: the line's sender is in it, and the writer ends when the line goes.)
        let writing = Arc::downgrade(&open);
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                if !matches!(tokio::time::timeout(WRITE_WITHIN, write.write_all(&frame)).await, Ok(Ok(()))) {
                    if let Some(open) = writing.upgrade() {
                        open.close("Gatehouse stopped taking calls on the line; the call was not sent");
                    }
                    return;
                }
            }
        });
        let reading = open.clone();
        tokio::spawn(async move {
            loop {
                let said = match lines.next().await {
                    Ok(Some(Line::Message(m))) => m.json::<Said>().ok(),
                    Ok(Some(Line::TooLong(_))) => None,
                    Ok(None) | Err(_) => {
                        reading.close("Gatehouse closed the line before it answered; the call was not sent");
                        return;
                    }
                };
                let Some(said) = said else {
                    reading.close("Gatehouse said what is not its MCP door's; the call was not sent");
                    return;
                };
                if !reading.heard(said) {
                    return;
                }
            }
        });
        Ok(open)
    }
}
