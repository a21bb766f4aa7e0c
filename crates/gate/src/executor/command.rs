//! The command executor: a program (no shell) with the work's text on stdin and its facts
//! in the environment, its output handed to the door's sink as it comes. Nothing from a
//! message ever becomes part of a command line. The program and everything it starts die
//! with its process group when it ends, times out, is cancelled or the run is dropped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use super::Sink;
use crate::process;

/// Bytes read from the program's stdout at a time (one frame of a door's stream at most).
pub const CHUNK_BYTES: usize = 16 * 1024;
/// Output kept from a command, per stream, for the record the user reads.
pub const KEEP_OUTPUT_BYTES: usize = 64 * 1024;
/// How much of the output's start is kept to tell what kind of data it is.
const HEAD_BYTES: usize = 512;

pub struct Command<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: &'a [(&'static str, String)],
    pub stdin: &'a str,
    pub timeout: Duration,
}

/// How the program ended.
#[derive(Debug)]
pub enum End {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Cancelled,
    WaitFailed(String),
    ReadFailed(String),
}

/// What a program did: how it ended, what it wrote.
pub struct Ran {
    pub end: End,
    /// The start of its stdout (up to [`KEEP_OUTPUT_BYTES`]), as the record keeps it.
    pub stdout: Vec<u8>,
    pub stdout_truncated: bool,
    /// All stdout bytes it wrote.
    pub bytes: usize,
    pub all_utf8: bool,
    pub stderr: String,
    pub stderr_truncated: bool,
    pub duration: Duration,
}

impl Ran {
    pub fn succeeded(&self) -> bool {
        matches!(&self.end, End::Exited(s) if s.success())
    }

    pub fn exit_code(&self) -> Option<i32> {
        match &self.end {
            End::Exited(s) => s.code(),
            _ => None,
        }
    }

    /// Why it failed, in words (None when it succeeded).
    pub fn failure(&self) -> Option<String> {
        match &self.end {
            End::Exited(s) if s.success() => None,
            End::Exited(s) => Some(match s.code() {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".to_string(),
            }),
            End::TimedOut(t) => Some(format!("timed out after {} s and was killed", t.as_secs())),
            End::Cancelled => Some("was cancelled".into()),
            End::WaitFailed(e) => Some(format!("waiting for the command failed: {e}")),
            End::ReadFailed(e) => Some(format!("reading its output failed: {e}")),
        }
    }

    /// The media type of what it wrote (the spec's image example ends with it).
    pub fn mime(&self) -> &'static str {
        match infer::get(&self.stdout[..self.stdout.len().min(HEAD_BYTES)]) {
            Some(t) => t.mime_type(),
            None if self.all_utf8 => "text/plain; charset=utf-8",
            None => "application/octet-stream",
        }
    }
}

/// Runs the program until it ends, times out or `cancel` turns true. `Err`: it did not
/// start. `Ok(Err)`: the sink stopped taking output, which stopped the program.
pub async fn run<S: Sink>(c: &Command<'_>, sink: &mut S, cancel: Option<watch::Receiver<bool>>) -> Result<Result<Ran, (S::Stop, Ran)>, String> {
    let started = Instant::now();
    let mut cmd = process::command(c.program);
    cmd.args(c.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in c.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut group = process::Group::of(&child);
    let mut stdin = child.stdin.take().expect("piped");
    let prompt = c.stdin.to_string();
    let feed = tokio::spawn(async move {
        // A command that ignores stdin closes it early; that is not an error.
        let _ = stdin.write_all(prompt.as_bytes()).await;
    });
    let err_task = tokio::spawn(read_capped(child.stderr.take().expect("piped")));
    let mut stdout = child.stdout.take().expect("piped");
    let deadline = tokio::time::Instant::now() + c.timeout;
    // Without a cancel signal, one that never fires (its sender kept for the run).
    let (_never, never) = watch::channel(false);
    let mut cancel = cancel.unwrap_or(never);
    let mut cancel_open = true;
    let mut out = Collected::default();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut status = None;
    let mut eof = false;
    // Once the program has exited, what is still in the pipe is read for at most this
    // long: a process that escaped the group and holds the pipe cannot hold the executor.
    let mut drain_until = None;
    let mut stopped = None;
    let end = 'run: loop {
        if *cancel.borrow() {
            break End::Cancelled;
        }
        if let (true, Some(s)) = (eof, status) {
            break End::Exited(s);
        }
        let drain = drain_until.unwrap_or(deadline);
        tokio::select! {
            r = stdout.read(&mut buf), if !eof => match r {
                Ok(0) => eof = true,
                Ok(n) => {
                    out.take(&buf[..n]);
                    // While the sink is full this waits, and the program blocks on its full pipe.
                    let taken = {
                        let output = sink.output(&buf[..n]);
                        tokio::pin!(output);
                        loop {
                            tokio::select! {
                                r = &mut output => break r,
                                _ = tokio::time::sleep_until(deadline) => break 'run End::TimedOut(c.timeout),
                                r = cancel.changed(), if cancel_open => match r {
                                    Ok(()) if *cancel.borrow() => break 'run End::Cancelled,
                                    Ok(()) => {}
                                    Err(_) => cancel_open = false,
                                },
                            }
                        }
                    };
                    if let Err(s) = taken {
                        stopped = Some(s);
                        break End::Cancelled;
                    }
                    // The drain bounds a pipe held open by something that escaped the
                    // group, not our own sink's back-pressure: a slow consumer's wait used
                    // it up and the rest of the output was dropped.
                    if drain_until.is_some() {
                        drain_until = Some(tokio::time::Instant::now() + process::DRAIN);
                    }
                }
                Err(e) => break End::ReadFailed(e.to_string()),
            },
            s = child.wait(), if status.is_none() => {
                // Whatever it left behind dies with it, which also closes the pipe.
                group.kill();
                match s {
                    Ok(s) => {
                        status = Some(s);
                        drain_until = Some(tokio::time::Instant::now() + process::DRAIN);
                    }
                    Err(e) => break End::WaitFailed(e.to_string()),
                }
            }
            _ = tokio::time::sleep_until(drain), if drain_until.is_some() && !eof => eof = true,
            _ = tokio::time::sleep_until(deadline) => break End::TimedOut(c.timeout),
            r = cancel.changed(), if cancel_open => if r.is_err() { cancel_open = false },
        }
    };
    // Whether it finished, timed out or was stopped, nothing it started lives on.
    group.kill();
    if status.is_none() {
        let _ = child.kill().await;
    }
    feed.abort();
    let (stderr, stderr_truncated) = process::drain(err_task).await;
    let ran = Ran {
        end,
        stdout: out.kept,
        stdout_truncated: out.truncated,
        bytes: out.bytes,
        all_utf8: out.all_utf8,
        stderr,
        stderr_truncated,
        duration: started.elapsed(),
    };
    Ok(match stopped {
        Some(s) => Err((s, ran)),
        None => Ok(ran),
    })
}

struct Collected {
    kept: Vec<u8>,
    truncated: bool,
    bytes: usize,
    all_utf8: bool,
}

impl Default for Collected {
    fn default() -> Self {
        Collected { kept: Vec::new(), truncated: false, bytes: 0, all_utf8: true }
    }
}

impl Collected {
    fn take(&mut self, b: &[u8]) {
        let room = KEEP_OUTPUT_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&b[..b.len().min(room)]);
        self.truncated |= b.len() > room;
        self.bytes += b.len();
        self.all_utf8 &= std::str::from_utf8(b).is_ok();
    }
}

/// A program's stderr, kept as its stdout is (the start, up to [`KEEP_OUTPUT_BYTES`]).
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(mut r: R) -> (String, bool) {
    let mut kept = Collected::default();
    let mut buf = [0u8; 8192];
    while let Ok(n @ 1..) = r.read(&mut buf).await {
        kept.take(&buf[..n]);
    }
    (String::from_utf8_lossy(&kept.kept).into_owned(), kept.truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes output only after a pause longer than the drain, as a door's stream whose
    /// consumer acknowledges slowly does.
    struct Slow(Vec<u8>);

    impl Sink for Slow {
        type Stop = ();
        async fn output(&mut self, bytes: &[u8]) -> Result<(), ()> {
            tokio::time::sleep(process::DRAIN + Duration::from_millis(100)).await;
            self.0.extend_from_slice(bytes);
            Ok(())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_sink_gets_all_the_output_of_a_program_that_has_exited() {
        // 40 000 bytes fit in the pipe: the program exits at once, before the sink has
        // taken the first of its three chunks. Whether the loss showed depended on which
        // ready branch the executor's select took, so sixteen runs go side by side.
        let mut runs = tokio::task::JoinSet::new();
        for _ in 0..16 {
            runs.spawn(async {
                let args = ["-c".to_string(), "40000".to_string(), "/dev/zero".to_string()];
                let c = Command { program: "head", args: &args, env: &[], stdin: "", timeout: Duration::from_secs(60) };
                let mut sink = Slow(Vec::new());
                let ran = run(&c, &mut sink, None).await.unwrap().unwrap_or_else(|_| panic!("the sink never stops"));
                (ran.succeeded(), sink.0.len())
            });
        }
        while let Some(r) = runs.join_next().await {
            assert_eq!(r.unwrap(), (true, 40_000), "every byte reached the sink");
        }
    }
}
