//! The MAIL reference servers themselves, unmodified, for tests: 1.3 (PyPI mail-swarms
//! 1.3.6) started offline on loopback by tests/peers/mail-1.3/swarm.py (a stub auth service
//! and scripted agents; keys `user-key` → alice, `admin-key` → root), and 2.0 (PyPI
//! mail-swarms-server 2.0.1) by tests/peers/mail-2.0/server.py (a memory deployment, its
//! daemon, a scripted agent `sage`), each from the virtualenv scripts/setup-peers.sh makes,
//! in its own process group, killed whole when dropped. Beside them, the A2A SDK as an
//! agent (tests/peers/a2a/server.py), started the same way.

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

/// Where scripts/setup-peers.sh installs the peers.
fn peers_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/gatehouse/peers"))
}

/// `path` if it is there; else None (the reason printed) when the run does not require
/// the peers; scripts/test.sh sets GATEHOUSE_REQUIRE_PEERS, so CI fails instead.
fn installed(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let why = format!("the {what} is not installed at {}; run scripts/setup-peers.sh", path.display());
    assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// The Python of one of the peers' virtualenvs (MAIL's references, the A2A SDK).
pub fn python(venv: &str, what: &str) -> Option<PathBuf> {
    installed(peers_dir().join(venv).join("bin/python"), &format!("{what} reference"))
}

/// The folder of one of the Node peers (its node_modules inside; the A2A JavaScript SDK).
pub fn node_peer(name: &str, what: &str) -> Option<PathBuf> {
    let dir = peers_dir().join(name);
    installed(dir.join("node_modules"), what).map(|_| dir)
}

/// Runs `script` with `py` in its own process group and returns it with what it printed
/// after `READY ` (at most two minutes). A script that exits before it is ready is started
/// again (twice at most): it picks its ports itself, and another process can take one
/// between its choice and its bind.
fn launch(py: PathBuf, script: &str, args: &[&str]) -> (Child, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers").join(script);
    for attempt in 1..=3 {
        let mut child = Command::new(&py)
            .arg(&script)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start the reference server");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("READY ") {
                    let _ = tx.send(rest.to_string());
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(r) => return (child, r),
            Err(e) => {
                let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
                let _ = child.wait();
                if matches!(e, std::sync::mpsc::RecvTimeoutError::Timeout) {
                    panic!("the reference server did not start within 120 s");
                }
                eprintln!("the reference server exited before it was ready (attempt {attempt} of 3)");
            }
        }
    }
    panic!("the reference server exited before it was ready, three times");
}

/// Starts the 1.3 reference and waits until it answers.
pub fn start() -> Option<Reference> {
    let (child, ready) = launch(python("mail-1.3.6", "MAIL 1.3")?, "mail-1.3/swarm.py", &[]);
    let (port, workdir) = ready.split_once(' ').expect("READY <port> <workdir>");
    Some(Reference { child, url: format!("http://127.0.0.1:{port}"), workdir: workdir.into() })
}

/// The A2A SDK as an agent (tests/peers/a2a/server.py): it answers each message with its
/// text in upper case, streamed in two pieces, over plain HTTP on loopback, to callers
/// that send `token`; its card names `endpoint` instead of its own when given.
pub fn start_a2a_agent(token: &str, endpoint: Option<&str>) -> Option<Reference> {
    let mut args = vec![token];
    args.extend(endpoint);
    let (child, ready) = launch(python("a2a-1.3.0", "A2A SDK")?, "a2a/server.py", &args);
    let (port, workdir) = ready.split_once(' ').expect("READY <port> <workdir>");
    Some(Reference { child, url: format!("http://127.0.0.1:{port}"), workdir: workdir.into() })
}

/// The MAIL 2.0 reference with one user to log in as and one scripted agent.
pub struct Reference2 {
    pub server: Reference,
    /// `user:alice@localhost`, and the password its deployment generated.
    pub address: String,
    pub password: String,
    /// `sage@chorus@localhost`: answers "sage heard: <body>"; "two steps …" twice;
    /// "silence …" never.
    pub agent: String,
    /// `user:bob@localhost` and its password: another user of the same server.
    pub other_address: String,
    pub other_password: String,
}

/// Starts the 2.0 reference (server, daemon, agent) and waits until it answers.
pub fn start_v2() -> Option<Reference2> {
    let (child, ready) = launch(python("mail-2.0.1", "MAIL 2.0")?, "mail-2.0/server.py", &[]);
    let v: serde_json::Value = serde_json::from_str(&ready).expect("READY {json}");
    let s = |k: &str| v[k].as_str().expect(k).to_string();
    // The scratch HOME's parent is the launcher's own directory (its log, the deployment).
    let workdir = PathBuf::from(s("home")).parent().expect("home has a parent").to_path_buf();
    let server = Reference { child, url: format!("http://127.0.0.1:{}", v["port"]), workdir };
    Some(Reference2 {
        server,
        address: s("address"),
        password: s("password"),
        agent: s("agent"),
        other_address: s("other_address"),
        other_password: s("other_password"),
    })
}
