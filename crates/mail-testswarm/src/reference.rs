//! The MAIL 1.3 reference server itself (PyPI mail-swarms 1.3.6, unmodified) for tests:
//! started offline on loopback by tests/peers/mail-1.3/swarm.py (a stub auth service and
//! scripted agents; keys `user-key` → alice, `admin-key` → root) from the virtualenv that
//! scripts/setup-peers.sh makes, in its own process group, killed whole when dropped.

use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Reference {
    child: Child,
    pub url: String,
    /// Where the server runs: it writes its files (the event dump) here.
    pub workdir: PathBuf,
}

impl Drop for Reference {
    fn drop(&mut self) {
        // The group holds uvicorn and anything it started.
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.workdir);
    }
}

/// The virtualenv's Python, or None (the reason printed) when it is missing and the run
/// does not require it; scripts/test.sh sets GATEHOUSE_REQUIRE_PEERS, so CI fails instead.
fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("GATEHOUSE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gatehouse/peers"))
        .join("mail-1.3.6/bin/python");
    if venv.exists() {
        return Some(venv);
    }
    let why = format!("the MAIL 1.3 reference is not installed at {}; run scripts/setup-peers.sh", venv.display());
    assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// Starts the reference and waits until it answers (at most two minutes).
pub fn start() -> Option<Reference> {
    let py = python()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/mail-1.3/swarm.py");
    let mut child = Command::new(py).arg(script).stdout(Stdio::piped()).stderr(Stdio::null()).process_group(0).spawn().expect("start the reference server");
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("READY ") {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    let ready = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(r) => r,
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            panic!("the reference server did not start within 120 s");
        }
    };
    let (port, workdir) = ready.split_once(' ').expect("READY <port> <workdir>");
    Some(Reference { child, url: format!("http://127.0.0.1:{port}"), workdir: workdir.into() })
}
