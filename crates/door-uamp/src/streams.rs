//! Streams opened by `ask` / `subscribe`: the scope's executor runs, its output becomes
//! `chunk` frames ending in `done` (or `error` / `cancel`), each kept in the store before
//! anyone can read it, and never more than `delta_window` frames un-acknowledged.
//!
//! Back-pressure reaches the executor itself: while the window is full nothing more is
//! read from the command's stdout, so its pipe fills and the command blocks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use gatehouse_store::Store;
use gatehouse_uamp::envelope::Body;
use gatehouse_uamp::{Delta, DeltaType};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, watch};

use super::UampDoor;
use gatehouse_gate::executor::{self, command, Delegates, Done, ExecutorSpec, Failed, Sink, Work};

/// Bytes of executor output per `chunk` frame.
pub const CHUNK_BYTES: usize = command::CHUNK_BYTES;

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
    pub async fn refuse(&self, uamp: Arc<UampDoor>, stream_id: String) {
        let live = self.map().entry(stream_id.clone()).or_insert_with(new_live).clone();
        let mut p = Producer { uamp, stream_id: stream_id.clone(), live, next_seq: 0, window: 1 };
        if let Err(e) = p.emit(DeltaType::Cancel, json!({"reason": "the user did not allow this ask"}), Some("CANCELLED")).await {
            tracing::error!(error = ?e, stream = %stream_id, "could not store a refused stream's frame");
        }
        self.map().remove(&stream_id);
    }

    /// Ends a stream that cannot run (its executor was changed while it waited): one
    /// `error` frame, state ERROR with the reason as its note.
    pub fn fail(&self, uamp: Arc<UampDoor>, stream_id: String, why: String) {
        let live = self.map().entry(stream_id.clone()).or_insert_with(new_live).clone();
        tokio::spawn(async move {
            let mut p = Producer { uamp: uamp.clone(), stream_id: stream_id.clone(), live, next_seq: 0, window: 1 };
            if let Err(e) = p.emit(DeltaType::Error, json!({"message": why}), Some("ERROR")).await {
                tracing::error!(error = ?e, stream = %stream_id, "could not store a stream's last frame");
            }
            let _ = uamp.store().uamp_set_state(&stream_id, "ERROR", Some(&why), &gatehouse_gate::clock::utc_string(chrono::Utc::now()));
            uamp.streams.map().remove(&stream_id);
        });
    }

    /// Starts the executor of a stream stored as NEW (just now, or released by the user).
    pub fn start(&self, uamp: Arc<UampDoor>, stream_id: String, job: Job) {
        // A held stream's readers already listen on its place: keep it.
        let live = self.map().entry(stream_id.clone()).or_insert_with(new_live).clone();
        tokio::spawn(async move {
            let mut producer = Producer { uamp: uamp.clone(), stream_id: stream_id.clone(), live, next_seq: 0, window: job.window.max(1) };
            let now = gatehouse_gate::clock::utc_string(chrono::Utc::now());
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
                let _ = uamp.store().uamp_set_state(&stream_id, state, Some(&d), &gatehouse_gate::clock::utc_string(chrono::Utc::now()));
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
    uamp: Arc<UampDoor>,
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
        tokio::task::spawn_blocking(move || store.uamp_append_delta(&sid, seq, &f, st.as_deref(), &gatehouse_gate::clock::utc_string(chrono::Utc::now())))
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

impl Sink for Producer {
    type Stop = Stop;

    /// A program's output goes out as `chunk_b64` frames, each waiting for window room.
    async fn output(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        self.emit(DeltaType::Chunk, json!({"chunk_b64": STANDARD.encode(bytes)}), None).await
    }
}

/// Runs the scope's executor (the gate's one implementation) with this stream as its
/// sink, and says how the stream ends.
async fn run(p: &mut Producer, job: &Job) -> End {
    let work = Work {
        who: job.sender.clone(),
        scope: job.scope.clone(),
        prompt: job.body.content.clone(),
        context: None,
        env: vec![
            ("UAMP_MESSAGE_ID", job.message_id.clone()),
            ("UAMP_SENDER", job.sender.clone()),
            ("UAMP_SCOPE", job.scope.clone()),
            ("UAMP_STREAM_ID", p.stream_id.clone()),
            ("UAMP_BODY_TYPE", job.body.media_type.clone()),
        ],
        // Named here, not after the sender's stream id: two ids that sanitise alike must not
        // overwrite each other's file, and no id is long or odd enough to fail the write.
        queue_file: (
            format!("uamp-{}.json", uuid::Uuid::now_v7()),
            json!({"message_id": job.message_id, "sender": job.sender, "scope": job.scope, "body": job.body, "stream_id": p.stream_id}),
        ),
        cancel: Some(p.live.cancel.subscribe()),
    };
    let store = p.uamp.store().clone();
    // Executors that hand work to another agent are for EPP prompts only: none here.
    let here = p.uamp.inbox().runs_here().clone();
    let out = executor::run(&job.spec, &work, &store, &Delegates::default(), &here, p).await;
    let program = match &job.spec {
        ExecutorSpec::Command { program, .. } => program.as_str(),
        _ => "",
    };
    let out = match out {
        Ok(Done::Noop) => Ok(json!({"executor": "noop"})),
        // The local path is the user's business, not the peer's.
        Ok(Done::Queued(_)) => Ok(json!({"executor": "file-queue", "queued": true})),
        Ok(Done::Command(ran)) => Ok(json!({"executor": "command", "exit_code": 0, "bytes": ran.bytes, "mime": ran.mime()})),
        // The whole answer as one text chunk (the peer reassembles text chunks).
        Ok(Done::Model(a)) => {
            p.emit(DeltaType::Chunk, json!({"text": a.answer}), None).await.map(|()| json!({"executor": "model", "model": a.model, "mime": "text/plain"}))
        }
        Err(Failed::Queue { dir, error }) => Err(Stop::Store(format!("file queue {}: {error}", dir.display()))),
        Err(Failed::Start { program, error }) => Err(Stop::Failed(format!("could not start {program}: {error}"))),
        Err(Failed::Command(ran)) => Err(match ran.end {
            command::End::Cancelled => Stop::Cancelled,
            command::End::TimedOut(t) => Stop::Failed(format!("timed out after {} s and was killed", t.as_secs())),
            command::End::Exited(st) => {
                Stop::Failed(format!("{program} exited with status {}{}", st.code().map_or("(signal)".into(), |c| c.to_string()), tail(&ran.stderr)))
            }
            command::End::WaitFailed(e) => Stop::Failed(format!("waiting for {program} failed: {e}")),
            command::End::ReadFailed(e) => Stop::Failed(format!("reading its output failed: {e}")),
        }),
        Err(Failed::Model { error, .. } | Failed::NotHere(error)) => Err(Stop::Failed(error)),
        Ok(Done::Delegated(_)) | Err(Failed::Delegated(_) | Failed::Unavailable(_)) => {
            Err(Stop::Failed("this scope's executor hands prompts to another agent, for EPP prompts only".into()))
        }
        Err(Failed::Stopped(stop)) => Err(stop),
    };
    match out {
        Ok(_) if p.cancelled() => End::Cancelled,
        Ok(v) => End::Done(v),
        Err(Stop::Cancelled) => End::Cancelled,
        Err(Stop::Failed(m)) => End::Failed { message: m.clone(), detail: m },
        Err(Stop::Store(e)) => End::Failed { message: "the inbox could not store the stream".into(), detail: e },
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

fn is_terminal(frame: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(frame)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).and_then(gatehouse_uamp::DeltaType::parse))
        .is_some_and(|t| t.is_terminal())
}

/// Feeds one SSE reader: stored frames first, then live ones, without gaps or repeats.
pub(crate) async fn follow(uamp: Arc<UampDoor>, id: String, mut next: u64, tx: mpsc::Sender<(u64, String)>) {
    // Subscribe before reading the store, so a frame stored in between is not missed.
    let mut live = uamp.streams.get(&id).map(|l| l.frames.subscribe());
    loop {
        let store = uamp.store().clone();
        let sid = id.clone();
        let stored = tokio::task::spawn_blocking(move || store.uamp_deltas(&sid, next)).await;
        let Ok(Ok(stored)) = stored else { return };
        for (seq, frame) in stored {
            let end = is_terminal(&frame);
            if tx.send((seq, frame)).await.is_err() || end {
                return;
            }
            next = seq + 1;
        }
        let Some(rx) = live.as_mut() else { return };
        loop {
            match rx.recv().await {
                Ok((seq, _)) if seq < next => continue,
                Ok((seq, frame)) if seq == next => {
                    let end = is_terminal(&frame);
                    if tx.send((seq, frame)).await.is_err() || end {
                        return;
                    }
                    next += 1;
                }
                // A gap (this reader fell behind): catch up from the store.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => break,
                Err(broadcast::error::RecvError::Closed) => {
                    live = None;
                    break;
                }
            }
        }
    }
}
