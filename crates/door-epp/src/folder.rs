//! The watched-folder transport (spec 8.2): `*.json` files dropped into a folder are
//! submitted once complete, then moved to `accepted/` or `rejected/` with
//! `<name>.receipt.json` beside them. Nothing is ever deleted.
//!
//! MAIL task logs (`*.mail.json`, `*.mail.jsonl`, `*.jsonl`) dropped there are imported
//! instead, and filed the same way with `<name>.import.json` (what was kept, which lines
//! were refused and why) beside them.
//!
//! "Complete" means the writer closed the file (inotify CLOSE_WRITE) or renamed it into
//! the folder. Where no close event arrives (other platforms, network filesystems), a
//! file is taken once its size and mtime have been still for [`QUIET`].

use crate::pipeline::Submit as _;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use gatehouse_epp::{ErrorCode, MAX_ENVELOPE_BYTES};
use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::pipeline::{sha256_hex, Outcome};
use gatehouse_gate::state::Gate;
use gatehouse_net::regular_file::ReadFailure;

pub const ACCEPTED: &str = "accepted";
pub const REJECTED: &str = "rejected";
/// Files being processed sit here; after a crash, what is left here is finished first.
pub const PROCESSING: &str = ".processing";
/// Fallback completeness rule for files whose writer's close was not seen. Linux reports
/// every close (inotify), so there the fallback only rescues missed events.
#[cfg(target_os = "linux")]
pub const QUIET: Duration = Duration::from_secs(60);
#[cfg(not(target_os = "linux"))]
pub const QUIET: Duration = Duration::from_secs(3);
/// Files found at start-up are taken once unchanged for this long.
const STARTUP_STILL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("cannot use {path} as the watched folder: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot watch {path}: {source}")]
    Watch { path: PathBuf, source: notify::Error },
}

/// What happened to one file, for logs and the app.
#[derive(Debug, Clone)]
pub struct Processed {
    pub file: PathBuf,
    pub moved_to: PathBuf,
    pub receipt_path: PathBuf,
    pub outcome: Outcome,
}

fn is_candidate(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let lower = name.to_ascii_lowercase();
    !name.starts_with('.') && (lower.ends_with(".json") || lower.ends_with(".jsonl"))
}

pub use gatehouse_net::dropped::{OtherFiles, Others};

#[derive(Debug, Clone, PartialEq)]
struct Seen {
    at: Instant,
    size: u64,
    mtime: Option<SystemTime>,
}

/// Size and time of what was dropped, without following a link: a symlink, a FIFO or a
/// device is taken like any drop (and refused with a receipt when read), never skipped.
fn stat(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    let m = std::fs::symlink_metadata(path).ok()?;
    (!m.is_dir()).then(|| (m.len(), m.modified().ok()))
}

/// Watches `dir` until `shutdown` resolves. `on_processed` sees every file handled.
pub async fn watch<F>(dir: PathBuf, inbox: Arc<Gate>, shutdown: impl std::future::Future<Output = ()>, on_processed: F) -> Result<(), FolderError>
where
    F: Fn(&Processed) + Send + Sync + 'static,
{
    for sub in ["", ACCEPTED, REJECTED, PROCESSING] {
        let p = dir.join(sub);
        std::fs::create_dir_all(&p).map_err(|source| FolderError::Io { path: p.clone(), source })?;
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<notify::Event>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res {
            let _ = tx.send(ev);
        }
    })
    .map_err(|source| FolderError::Watch { path: dir.clone(), source })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive).map_err(|source| FolderError::Watch { path: dir.clone(), source })?;

    let on_processed = Arc::new(on_processed);
    // Files a crash interrupted mid-processing come first.
    if let Ok(entries) = std::fs::read_dir(dir.join(PROCESSING)) {
        let stranded: Vec<(PathBuf, PathBuf)> = entries.flatten().map(|e| e.path()).filter(|p| is_candidate(p)).map(|p| (p.clone(), p)).collect();
        for chunk in stranded.chunks(CHUNK) {
            let (inbox, d, chunk) = (inbox.clone(), dir.clone(), chunk.to_vec());
            let r = tokio::task::spawn_blocking(move || (InFlight::default(), finish_chunk(&inbox, &d, chunk, true))).await;
            report(r, on_processed.as_ref());
        }
    }
    let mut pending: HashMap<PathBuf, Seen> = HashMap::new();
    let mut failed: HashSet<PathBuf> = HashSet::new();
    // Files already there at start-up: taken once they prove still (they may be mid-write).
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let p = e.path();
            if is_candidate(&p) {
                if let Some((size, mtime)) = stat(&p) {
                    pending.insert(p, Seen { at: Instant::now() - QUIET + STARTUP_STILL, size, mtime });
                }
            }
        }
    }
    tracing::info!(folder = %dir.display(), "watching folder for envelopes");
    // Ticks only while a file is waiting to prove still: an idle folder wakes nothing.
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tasks: tokio::task::JoinSet<(InFlight, ChunkResults)> = tokio::task::JoinSet::new();
    let mut in_flight = InFlight::default();
    tokio::pin!(shutdown);
    loop {
        let mut ready: Vec<PathBuf> = Vec::new();
        tokio::select! {
            _ = &mut shutdown => break,
            Some(ev) = rx.recv() => {
                // A burst of drops is taken together, so it is verified and committed in
                // chunks rather than one file at a time.
                let mut next = Some(ev);
                while let Some(ev) = next {
                    let complete = matches!(
                        ev.kind,
                        EventKind::Access(AccessKind::Close(AccessMode::Write))
                            | EventKind::Modify(ModifyKind::Name(RenameMode::To))
                            | EventKind::Modify(ModifyKind::Name(RenameMode::Both))
                    );
                    // For a rename within the folder, the last path is the new name.
                    let paths: Vec<PathBuf> = if matches!(ev.kind, EventKind::Modify(ModifyKind::Name(RenameMode::Both))) {
                        ev.paths.last().cloned().into_iter().collect()
                    } else {
                        ev.paths
                    };
                    for p in paths.into_iter().filter(|p| p.parent() == Some(dir.as_path()) && is_candidate(p)) {
                        failed.remove(&p);
                        // A link, FIFO or device is never "written": it is whole once it
                        // exists, and is taken (and refused with a receipt) at once.
                        let special = std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_file() && !m.is_dir());
                        if complete || special {
                            pending.remove(&p);
                            ready.push(p);
                        } else if let Some((size, mtime)) = stat(&p) {
                            pending.insert(p, Seen { at: Instant::now(), size, mtime });
                        }
                    }
                    next = if ready.len() < MAX_FILES_IN_FLIGHT { rx.try_recv().ok() } else { None };
                }
            }
            _ = tick.tick(), if !pending.is_empty() => {
                let now = Instant::now();
                let mut gone = Vec::new();
                for (p, seen) in pending.iter_mut() {
                    match stat(p) {
                        None => gone.push(p.clone()),
                        Some((size, mtime)) if size != seen.size || mtime != seen.mtime => {
                            *seen = Seen { at: now, size, mtime };
                        }
                        Some(_) if now.duration_since(seen.at) >= QUIET => ready.push(p.clone()),
                        Some(_) => {}
                    }
                }
                for p in gone.iter().chain(ready.iter()) {
                    pending.remove(p);
                }
            }
        }
        // (dropped as, claimed to, bytes it will take in memory)
        let mut claimed: std::collections::VecDeque<(PathBuf, PathBuf, u64)> = Default::default();
        for file in ready {
            if failed.contains(&file) || std::fs::symlink_metadata(&file).is_err() {
                continue;
            }
            // Claimed here, one at a time, so names never collide; verified and filed in
            // chunks, where the group commit of the store batches the acceptances.
            match claim(&dir, &file) {
                Ok(c) => {
                    // A file larger than an envelope may be is refused unread.
                    let bytes = std::fs::symlink_metadata(&c).map_or(0, |m| m.len()).min(MAX_ENVELOPE_BYTES as u64);
                    claimed.push_back((file, c, bytes));
                }
                Err(e) => {
                    // Leave the file where it is and do not spin on it; a new write retries.
                    tracing::error!(file = %file.display(), error = %e, "could not claim dropped file");
                    failed.insert(file);
                }
            }
        }
        while !claimed.is_empty() {
            let mut chunk = Vec::new();
            let mut weight = InFlight::default();
            while let Some((_, _, bytes)) = claimed.front() {
                if !chunk.is_empty() && (chunk.len() == CHUNK || weight.bytes + bytes > MAX_BYTES_IN_FLIGHT / 4) {
                    break;
                }
                let (dropped, c, bytes) = claimed.pop_front().expect("just looked");
                weight.add(InFlight { files: 1, bytes });
                chunk.push((dropped, c));
            }
            while in_flight.files > 0 && !in_flight.has_room_for(weight) {
                match tasks.join_next().await {
                    Some(r) => in_flight.remove(report(r, on_processed.as_ref())),
                    None => in_flight = InFlight::default(),
                }
            }
            in_flight.add(weight);
            let (inbox, d) = (inbox.clone(), dir.clone());
            tasks.spawn_blocking(move || (weight, finish_chunk(&inbox, &d, chunk, false)));
        }
        while let Some(r) = tasks.try_join_next() {
            in_flight.remove(report(r, on_processed.as_ref()));
        }
    }
    while let Some(r) = tasks.join_next().await {
        report(r, on_processed.as_ref());
    }
    drop(watcher);
    Ok(())
}

/// Files one blocking task verifies, submits together (one wait for their group
/// commit, not a thread blocked per file) and files.
const CHUNK: usize = 32;
/// Files in progress at once (claimed, not yet filed): enough for large group commits
/// while earlier chunks verify (measured: 256 gave 10% fewer files/s than 1,024)...
const MAX_FILES_IN_FLIGHT: usize = 1024;
/// ... and the memory their contents may take, since an envelope may be 10 MiB.
const MAX_BYTES_IN_FLIGHT: u64 = 64 << 20;

/// What the chunks in progress hold.
#[derive(Debug, Clone, Copy, Default)]
struct InFlight {
    files: usize,
    bytes: u64,
}

impl InFlight {
    fn add(&mut self, o: InFlight) {
        self.files += o.files;
        self.bytes += o.bytes;
    }

    fn remove(&mut self, o: InFlight) {
        self.files = self.files.saturating_sub(o.files);
        self.bytes = self.bytes.saturating_sub(o.bytes);
    }

    fn has_room_for(&self, o: InFlight) -> bool {
        self.files + o.files <= MAX_FILES_IN_FLIGHT && self.bytes + o.bytes <= MAX_BYTES_IN_FLIGHT
    }
}

/// Filing moves (choose a free name, rename) happen one at a time, so two files of the
/// same name can never both pick the same free slot and overwrite each other.
static FILING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What became of each file of a chunk (`None`: a MAIL log, imported and filed).
type ChunkResults = Vec<std::io::Result<Option<Processed>>>;

/// Reports a finished chunk; returns what it held.
fn report(r: Result<(InFlight, ChunkResults), tokio::task::JoinError>, on_processed: &(dyn Fn(&Processed) + Send + Sync)) -> InFlight {
    let (held, results) = match r {
        Ok(r) => r,
        // The chunk's claimed files stay in .processing/ and are finished at the next start.
        // (A panicked task cannot say what it held: that stays counted until no chunk is
        // in progress, when the count starts over.)
        Err(e) => {
            tracing::error!(error = %e, "folder task failed");
            return InFlight::default();
        }
    };
    for r in results {
        match r {
            Ok(None) => {}
            Ok(Some(done)) => {
                tracing::info!(file = %done.file.display(), to = %done.moved_to.display(), status = ?done.outcome.receipt.status, "processed dropped file");
                on_processed(&done);
            }
            // The claimed file stays in .processing/ and is finished at the next start.
            Err(e) => tracing::error!(error = %e, "could not file a dropped file"),
        }
    }
    held
}

/// Verifies and submits a chunk of claimed files together, then files each with its
/// receipt. `files`: (the name it was dropped as, where it was claimed to).
/// `after_crash`: the files may already have been accepted just before a crash.
fn finish_chunk(inbox: &Gate, dir: &Path, files: Vec<(PathBuf, PathBuf)>, after_crash: bool) -> ChunkResults {
    // Each file goes to the door that reads it (a MAIL task log), or is an envelope.
    let others = inbox.door::<Others>();
    let (mut other, mut envelopes) = (Vec::new(), Vec::new());
    for (dropped, claimed) in files {
        match others.as_ref().and_then(|o| o.0.iter().find(|r| r.claims(&claimed))) {
            Some(reader) => other.push((claimed, reader.clone())),
            None => envelopes.push((dropped, claimed)),
        }
    }
    let mut results: Vec<std::io::Result<Option<Processed>>> =
        other.iter().map(|(claimed, reader)| finish_other(inbox, dir, claimed, reader.as_ref()).map(|()| None)).collect();
    let now = gatehouse_gate::clock::now();
    let submissions = envelopes.iter().map(|(_, claimed)| submit_file(inbox, claimed, now, after_crash));
    // Each submission verifies when first polled and then waits for its commit, so the
    // whole chunk is verified, then committed together.
    let outcomes = tokio::runtime::Handle::current().block_on(futures_util::future::join_all(submissions));
    for ((dropped, claimed), outcome) in envelopes.into_iter().zip(outcomes) {
        results.push(file_away(dir, &claimed, outcome).map(|mut done| {
            done.file = dropped;
            Some(done)
        }));
    }
    results
}

fn transport_of(file: &Path) -> (String, String) {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("envelope.json").to_string();
    let transport = format!("folder:{name}");
    (name, transport)
}

async fn submit_file(inbox: &Gate, file: &Path, now: chrono::DateTime<chrono::Utc>, after_crash: bool) -> Outcome {
    let (_, transport) = transport_of(file);
    match gatehouse_net::regular_file::read(file, MAX_ENVELOPE_BYTES as u64, false) {
        Ok(bytes) => {
            let outcome = inbox.submit_async(&bytes, &transport, now).await;
            if after_crash {
                recover_accepted(inbox, &bytes, outcome)
            } else {
                outcome
            }
        }
        // Still a receipt, recorded like any rejection: nothing disappears silently.
        Err(failure) => {
            let code = match failure {
                ReadFailure::TooBig(_) => ErrorCode::SizeExceeded,
                ReadFailure::NotRegular(_) | ReadFailure::Io(_) => ErrorCode::InvalidFormat,
            };
            let message = match failure {
                ReadFailure::TooBig(n) => format!("file is {n} bytes; this inbox accepts at most {MAX_ENVELOPE_BYTES}"),
                other => other.to_string(),
            };
            inbox.submit_failure_async(code, message, &transport, now).await
        }
    }
}

/// Moves a dropped file into `.processing/`, so a crash mid-way leaves it where the
/// restart looks for it.
fn claim(dir: &Path, file: &Path) -> std::io::Result<PathBuf> {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("envelope.json").to_string();
    let _g = FILING.lock().unwrap_or_else(|p| p.into_inner());
    let claimed = unique_destination(&dir.join(PROCESSING), &name);
    std::fs::rename(file, &claimed)?;
    Ok(claimed)
}

/// Moves a submitted file to `accepted/` or `rejected/` with its receipt beside it.
fn file_away(dir: &Path, file: &Path, outcome: Outcome) -> std::io::Result<Processed> {
    let (name, _) = transport_of(file);
    let accepted = outcome.receipt.status == gatehouse_epp::ReceiptStatus::Accepted;
    let dest_dir = dir.join(if accepted { ACCEPTED } else { REJECTED });
    // Written before taking the filing lock (which every file waits for): no other file
    // in progress has this claimed name, so neither has its temporary receipt.
    let tmp = dest_dir.join(format!(".{name}.receipt.tmp"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&outcome.receipt).expect("receipts serialise"))?;
    let _g = FILING.lock().unwrap_or_else(|p| p.into_inner());
    let moved_to = unique_destination(&dest_dir, &name);
    let receipt_path = PathBuf::from(format!("{}.receipt.json", moved_to.display()));
    std::fs::rename(&tmp, &receipt_path)?;
    std::fs::rename(file, &moved_to)?;
    Ok(Processed { file: file.to_path_buf(), moved_to, receipt_path, outcome })
}

/// Hands a claimed file to the door that reads it and files it: `accepted/` when
/// anything was kept, `rejected/` when nothing was, with `<name>.import.json` beside it
/// either way.
fn finish_other(inbox: &Gate, dir: &Path, file: &Path, reader: &dyn OtherFiles) -> std::io::Result<()> {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("file.json").to_string();
    let (kept, report) = reader.import(inbox.store(), file);
    let dest_dir = dir.join(if kept { ACCEPTED } else { REJECTED });
    {
        let _g = FILING.lock().unwrap_or_else(|p| p.into_inner());
        let moved_to = unique_destination(&dest_dir, &name);
        let report_path = PathBuf::from(format!("{}.import.json", moved_to.display()));
        let tmp = dest_dir.join(format!(".{}.import.tmp", moved_to.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
        std::fs::write(&tmp, serde_json::to_vec_pretty(&report).expect("reports serialise"))?;
        std::fs::rename(&tmp, &report_path)?;
        std::fs::rename(file, &moved_to)?;
        tracing::info!(file = %name, to = %moved_to.display(), kept, kind = reader.kind(), "imported a dropped file");
    }
    // The window refreshes on inbox events; this one is no envelope, so it has no receipt.
    inbox.emit_event(gatehouse_gate::state::ArrivalEvent {
        receipt_id: format!("{}-import:{name}", reader.kind()),
        status: if kept { gatehouse_gate::state::Status::Accepted } else { gatehouse_gate::state::Status::Rejected },
        code: None,
        sender: None,
        scope: Some(reader.kind().into()),
        transport: format!("folder:{name}"),
        needs_consent: false,
        key_change: false,
    });
    Ok(())
}

/// A file accepted just before a crash (stored, but not yet filed) comes back as a
/// replay; if its exact bytes are an accepted envelope, it is filed as accepted with
/// the original receipt instead of being mislabelled. Only for files found in
/// `.processing/` at start-up: a file dropped twice is a replay like any other.
fn recover_accepted(inbox: &Gate, bytes: &[u8], outcome: Outcome) -> Outcome {
    if outcome.receipt.code() != Some(ErrorCode::ReplayDetected) {
        return outcome;
    }
    let Ok(env) = gatehouse_epp::Envelope::parse(bytes) else { return outcome };
    match inbox.store().accepted_by_nonce(&env.nonce_bytes, &sha256_hex(bytes)) {
        Ok(Some(row)) => match serde_json::from_value(row.receipt) {
            Ok(receipt) => Outcome { receipt, retry_after: None, row_id: None, arrival: gatehouse_code::Outcome::Accepted },
            Err(_) => outcome,
        },
        _ => outcome,
    }
}

/// `dir/name`, or `dir/stem-N.ext` when taken: an earlier file is never overwritten.
fn unique_destination(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if !first.exists() {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) => (s.to_string(), format!(".{e}")),
        None => (name.to_string(), String::new()),
    };
    (1..).map(|n| dir.join(format!("{stem}-{n}{ext}"))).find(|p| !p.exists()).expect("some suffix is free")
}
