//! Streams opened by `ask` / `subscribe`: the scope's executor runs, its output becomes
//! `chunk` frames ending in `done` (or `error` / `cancel`), each kept in the store before
//! anyone can read it, and never more than `delta_window` frames un-acknowledged.
//!
//! Back-pressure reaches the executor itself: while the window is full nothing more is
//! read from the command's stdout, so its pipe fills and the command blocks.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use gatehouse_store::Store;
use gatehouse_uamp::envelope::Body;
use gatehouse_uamp::{Delta, DeltaType};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{broadcast, watch};

use super::UampInbox;
use crate::executor::ExecutorSpec;

/// Bytes of executor output per `chunk` frame.
pub const CHUNK_BYTES: usize = 16 * 1024;

/// What an accepted `ask` hands its stream.
#[derive(Debug, Clone)]
pub struct Job {
    pub spec: ExecutorSpec,
    pub message_id: String,
    pub sender: String,
    pub scope: String,
    pub body: Body,
    pub window: u32,
}

/// A stream while its executor runs.
pub struct Live {
    /// The highest acknowledged `delta_seq` (-1: none yet).
    acked: watch::Sender<i64>,
    /// Frames as they are stored, for SSE readers following along.
    pub frames: broadcast::Sender<(u64, String)>,
    cancel: watch::Sender<bool>,
}

fn new_live() -> Arc<Live> {
    Arc::new(Live { acked: watch::channel(-1).0, frames: broadcast::channel(1024).0, cancel: watch::channel(false).0 })
}

#[derive(Default)]
pub struct Streams {
    live: Mutex<HashMap<String, Arc<Live>>>,
}

impl Streams {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn active(&self) -> usize {
        self.map().len()
    }

    pub fn get(&self, stream_id: &str) -> Option<Arc<Live>> {
        self.map().get(stream_id).cloned()
    }

    /// Keeps a place for a stream that waits for the user, so its reader can follow it
    /// now and sees its frames when the user decides.
    pub fn hold(&self, stream_id: &str) {
        self.map().entry(stream_id.to_string()).or_insert_with(new_live);
    }

    /// Ends a held stream the user refused: one `cancel` frame, state CANCELLED.
    pub async fn refuse(&self, uamp: Arc<UampInbox>, stream_id: String) {
        let live = self.map().entry(stream_id.clone()).or_insert_with(new_live).clone();
        let mut p = Producer { uamp, stream_id: stream_id.clone(), live, next_seq: 0, window: 1 };
        if let Err(e) = p.emit(DeltaType::Cancel, json!({"reason": "the user did not allow this ask"}), Some("CANCELLED")).await {
            tracing::error!(error = ?e, stream = %stream_id, "could not store a refused stream's frame");
        }
        self.map().remove(&stream_id);
    }

    /// Starts the executor of a stream stored as NEW (just now, or released by the user).
    pub fn start(&self, uamp: Arc<UampInbox>, stream_id: String, job: Job) {
        // A held stream's readers already listen on its place: keep it.
        let live = self.map().entry(stream_id.clone()).or_insert_with(new_live).clone();
        tokio::spawn(async move {
            let mut producer = Producer { uamp: uamp.clone(), stream_id: stream_id.clone(), live, next_seq: 0, window: job.window.max(1) };
            let now = gatehouse_epp::utc_string(chrono::Utc::now());
            let _ = uamp.store().uamp_set_state(&stream_id, "IN_PROGRESS", None, &now);
            let end = run(&mut producer, &job).await;
            let (kind, payload, state, detail) = match end {
                End::Done(p) => (DeltaType::Done, p, "COMPLETED", None),
                End::Cancelled => (DeltaType::Cancel, json!({"reason": "cancelled by the sender"}), "CANCELLED", None),
                End::Failed { message, detail } => (DeltaType::Error, json!({"message": message}), "ERROR", Some(detail)),
            };
            if let Err(e) = producer.emit(kind, payload, Some(state)).await {
                tracing::error!(error = ?e, stream = %stream_id, "could not store a stream's last frame");
            }
            if let Some(d) = detail {
                let _ = uamp.store().uamp_set_state(&stream_id, state, Some(&d), &gatehouse_epp::utc_string(chrono::Utc::now()));
            }
            uamp.streams.map().remove(&stream_id);
        });
    }

    /// Acknowledges frames up to `seq` (a `progress` envelope); wakes a waiting producer.
    pub fn ack(&self, store: &Store, stream_id: &str, seq: i64) -> gatehouse_store::Result<i64> {
        let acked = store.uamp_ack(stream_id, seq)?;
        if let Some(live) = self.get(stream_id) {
            live.acked.send_if_modified(|v| {
                let changed = acked > *v;
                *v = (*v).max(acked);
                changed
            });
        }
        Ok(acked)
    }

    /// Stops a running stream's executor; false when it had already ended.
    pub fn cancel(&self, _store: &Store, stream_id: &str, _by: &str) -> bool {
        match self.get(stream_id) {
            Some(live) => {
                let _ = live.cancel.send(true);
                true
            }
            None => false,
        }
    }
}

enum End {
    Done(Value),
    Cancelled,
    Failed { message: String, detail: String },
}

struct Producer {
    uamp: Arc<UampInbox>,
    stream_id: String,
    live: Arc<Live>,
    next_seq: u64,
    window: u32,
}

#[derive(Debug)]
enum Stop {
    Cancelled,
    /// The executor failed; the message goes to the peer in the `error` frame.
    Failed(String),
    /// The store failed; the peer is told only that.
    Store(String),
}

impl Producer {
    /// Waits until the window has room (or the stream is cancelled).
    async fn room(&self) -> Result<(), Stop> {
        let mut acked = self.live.acked.subscribe();
        let mut cancel = self.live.cancel.subscribe();
        loop {
            if *cancel.borrow() {
                return Err(Stop::Cancelled);
            }
            let outstanding = self.next_seq as i64 - (*acked.borrow() + 1);
            if outstanding < i64::from(self.window) {
                return Ok(());
            }
            tokio::select! {
                r = acked.changed() => { if r.is_err() { return Err(Stop::Cancelled) } }
                r = cancel.changed() => { if r.is_err() { return Err(Stop::Cancelled) } }
            }
        }
    }

    /// Stores and publishes one frame. Data frames wait for window room; the terminal
    /// frame of a cancelled or failed stream does not (it carries no data and the stream
    /// could otherwise never end for a consumer that stopped acknowledging).
    async fn emit(&mut self, kind: DeltaType, payload: Value, state: Option<&str>) -> Result<(), Stop> {
        if !matches!(kind, DeltaType::Cancel | DeltaType::Error) {
            self.room().await?;
        }
        let delta = Delta {
            delta_seq: self.next_seq,
            stream_id: self.stream_id.clone(),
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            kind,
            payload: Some(payload),
        };
        let frame = delta.to_json().to_string();
        let store = self.uamp.store().clone();
        let (sid, seq, st, f) = (self.stream_id.clone(), self.next_seq, state.map(str::to_string), frame.clone());
        tokio::task::spawn_blocking(move || store.uamp_append_delta(&sid, seq, &f, st.as_deref(), &gatehouse_epp::utc_string(chrono::Utc::now())))
            .await
            .map_err(|e| Stop::Store(e.to_string()))?
            .map_err(|e| Stop::Store(e.to_string()))?;
        let _ = self.live.frames.send((self.next_seq, frame));
        self.next_seq += 1;
        Ok(())
    }

    fn cancelled(&self) -> bool {
        *self.live.cancel.borrow()
    }
}

async fn run(p: &mut Producer, job: &Job) -> End {
    let out = match &job.spec {
        ExecutorSpec::Noop => Ok(json!({"executor": "noop"})),
        ExecutorSpec::FileQueue { dir } => file_queue(dir, p, job).await,
        ExecutorSpec::Command { program, args, timeout_secs } => command(p, job, program, args, Duration::from_secs(*timeout_secs)).await,
        ExecutorSpec::Swarm { .. } | ExecutorSpec::Peer { .. } => {
            Err(Stop::Failed("this scope's executor hands prompts to another agent, for EPP prompts only".into()))
        }
        ExecutorSpec::Model { endpoint, model, system_prompt, timeout_secs, .. } => {
            let system = crate::model::system_prompt(system_prompt.as_deref(), &job.sender, &job.scope);
            match crate::model::ask(endpoint, None, model, &system, &job.body.content, Duration::from_secs(*timeout_secs), |_| {}).await {
                // The whole answer as one text chunk (the peer reassembles text chunks).
                Ok(a) => p
                    .emit(DeltaType::Chunk, json!({"text": a.answer}), None)
                    .await
                    .map(|()| json!({"executor": "model", "model": a.model, "mime": "text/plain"})),
                Err(e) => Err(Stop::Failed(e.to_string())),
            }
        }
    };
    match out {
        Ok(_) if p.cancelled() => End::Cancelled,
        Ok(v) => End::Done(v),
        Err(Stop::Cancelled) => End::Cancelled,
        Err(Stop::Failed(m)) => End::Failed { message: m.clone(), detail: m },
        Err(Stop::Store(e)) => End::Failed { message: "the inbox could not store the stream".into(), detail: e },
    }
}

async fn file_queue(dir: &std::path::Path, p: &mut Producer, job: &Job) -> Result<Value, Stop> {
    let record = json!({"message_id": job.message_id, "sender": job.sender, "scope": job.scope, "body": job.body, "stream_id": p.stream_id});
    // Named here, not after the sender's stream id: two ids that sanitise alike must not
    // overwrite each other's file, and no id is long or odd enough to fail the write.
    let name = format!("uamp-{}.json", uuid::Uuid::now_v7());
    let write = async {
        tokio::fs::create_dir_all(dir).await?;
        let tmp = dir.join(format!(".{name}.tmp"));
        tokio::fs::write(&tmp, serde_json::to_vec_pretty(&record).expect("serialises")).await?;
        tokio::fs::rename(&tmp, dir.join(&name)).await
    };
    match write.await {
        // The local path is the user's business, not the peer's.
        Ok(()) => Ok(json!({"executor": "file-queue", "queued": true})),
        Err(e) => Err(Stop::Store(format!("file queue {}: {e}", dir.display()))),
    }
}

/// Runs the command (no shell; the body on stdin, facts in UAMP_* variables) and streams
/// its stdout as `chunk_b64` frames. Failures end the stream with an `error` frame.
async fn command(p: &mut Producer, job: &Job, program: &str, args: &[String], timeout: Duration) -> Result<Value, Stop> {
    let spawned = crate::process::command(program)
        .args(args)
        .env("UAMP_MESSAGE_ID", &job.message_id)
        .env("UAMP_SENDER", &job.sender)
        .env("UAMP_SCOPE", &job.scope)
        .env("UAMP_STREAM_ID", &p.stream_id)
        .env("UAMP_BODY_TYPE", &job.body.media_type)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Err(Stop::Failed(format!("could not start {program}: {e}"))),
    };
    // Every way out of this function (timeout, cancel, a failed frame, the end) kills
    // the whole group as the guard drops.
    let group = crate::process::Group::of(&child);
    let mut stdin = child.stdin.take().expect("piped");
    let content = job.body.content.clone();
    tokio::spawn(async move {
        let _ = stdin.write_all(content.as_bytes()).await;
    });
    let mut stderr = child.stderr.take().expect("piped");
    let err_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = (&mut stderr).take(16 * 1024).read_to_end(&mut buf).await;
        String::from_utf8_lossy(&buf).into_owned()
    });
    let mut stdout = child.stdout.take().expect("piped");
    let deadline = tokio::time::Instant::now() + timeout;
    let mut cancel = p.live.cancel.subscribe();
    let mut total = 0usize;
    let mut all_utf8 = true;
    let mut head = Vec::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let timed_out = || Stop::Failed(format!("timed out after {} s and was killed", timeout.as_secs()));
    loop {
        let read = tokio::select! {
            r = stdout.read(&mut buf) => r,
            _ = tokio::time::sleep_until(deadline) => { let _ = child.kill().await; return Err(timed_out()) }
            _ = cancel.changed() => { let _ = child.kill().await; return Err(Stop::Cancelled) }
        };
        let n = match read {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(Stop::Failed(format!("reading its output failed: {e}"))),
        };
        all_utf8 &= std::str::from_utf8(&buf[..n]).is_ok();
        if head.len() < 512 {
            head.extend_from_slice(&buf[..n.min(512 - head.len())]);
        }
        total += n;
        let frame = json!({"chunk_b64": STANDARD.encode(&buf[..n])});
        // While the window is full this waits, and the command blocks on its full pipe.
        let emitted = tokio::select! {
            r = p.emit(DeltaType::Chunk, frame, None) => r,
            _ = tokio::time::sleep_until(deadline) => Err(timed_out()),
        };
        if let Err(stop) = emitted {
            let _ = child.kill().await;
            return Err(stop);
        }
    }
    let status = tokio::select! {
        s = child.wait() => s,
        _ = tokio::time::sleep_until(deadline) => { let _ = child.kill().await; return Err(timed_out()) }
        _ = cancel.changed() => { let _ = child.kill().await; return Err(Stop::Cancelled) }
    };
    drop(group);
    let stderr = crate::process::drain(err_task).await;
    match status {
        Ok(st) if st.success() => Ok(json!({
            "executor": "command",
            "exit_code": 0,
            "bytes": total,
            // The spec's image example ends with the type of what the chunks make up.
            "mime": match infer::get(&head) {
                Some(t) => t.mime_type(),
                None if all_utf8 => "text/plain; charset=utf-8",
                None => "application/octet-stream",
            },
        })),
        Ok(st) => Err(Stop::Failed(format!("{program} exited with status {}{}", st.code().map_or("(signal)".into(), |c| c.to_string()), tail(&stderr)))),
        Err(e) => Err(Stop::Failed(format!("waiting for {program} failed: {e}"))),
    }
}

fn tail(stderr: &str) -> String {
    let t = stderr.trim();
    if t.is_empty() {
        String::new()
    } else {
        format!(": {}", t.chars().rev().take(500).collect::<Vec<_>>().into_iter().rev().collect::<String>())
    }
}
