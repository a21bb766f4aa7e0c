//! What the CLI tests share: running `gatehouse` on a data dir, and `gatehouse serve` as a
//! real process on a free loopback port (killed, with its keychain entry removed, at the
//! end of the test).
#![allow(dead_code)]

use std::io::Write as _;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

pub fn gh(dir: &Path, args: &[&str]) -> Output {
    gh_in(dir, args, "")
}

/// `gatehouse` with `stdin` given (tokens are read from it).
pub fn gh_in(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("GATEHOUSE_KEYSTORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// stdout of a command that must succeed.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = gh(dir, args);
    assert!(out.status.success(), "gatehouse {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The `--json` output of a command that must succeed.
pub fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = ok(dir, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("gatehouse {args:?} printed no JSON ({e}): {out}"))
}

/// stderr of a command that must fail.
pub fn fails(dir: &Path, args: &[&str]) -> String {
    let out = gh(dir, args);
    assert!(!out.status.success(), "gatehouse {args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `gatehouse serve` on a free loopback port; killed when dropped.
pub struct Server(pub Child, pub String);

impl Server {
    pub fn start(dir: &Path) -> Server {
        Server::start_with(dir, None)
    }

    /// [`Server::start`] whose clock is moved by the seconds written in `clock` (a debug
    /// build reads `GATEHOUSE_TEST_CLOCK`; the commands the test runs keep the real clock).
    pub fn start_with(dir: &Path, clock: Option<&Path>) -> Server {
        let port = free_port();
        let mut cmd = Command::new(BIN);
        if let Some(c) = clock {
            cmd.env("GATEHOUSE_TEST_CLOCK", c);
        }
        let child = cmd
            .arg("--data-dir")
            .arg(dir)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env_remove("GATEHOUSE_KEYSTORE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let t = Instant::now();
        while reqwest::blocking::get(format!("{base}/health")).is_err() {
            assert!(t.elapsed() < Duration::from_secs(20), "server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Server(child, base)
    }

    /// [`Server::start`] with its TLS listener (UAMP and A2A) too, on another free port;
    /// returns that port once it accepts connections.
    pub fn start_tls(dir: &Path) -> (Server, u16) {
        let (http, tls) = {
            let (a, b) = (TcpListener::bind("127.0.0.1:0").unwrap(), TcpListener::bind("127.0.0.1:0").unwrap());
            (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
        };
        let child = Command::new(BIN)
            .arg("--data-dir")
            .arg(dir)
            .args(["serve", "--listen", &format!("127.0.0.1:{http}"), "--uamp-listen", &format!("127.0.0.1:{tls}")])
            .env_remove("GATEHOUSE_KEYSTORE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let served = Server(child, format!("http://127.0.0.1:{http}"));
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", tls)).is_err() {
            assert!(t.elapsed() < Duration::from_secs(20), "the TLS listener did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        (served, tls)
    }

    pub fn submit(&self) -> String {
        format!("{}/epp/v1/submit", self.1)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Removes the identities the test created from the keychain.
pub struct Cleanup(pub Vec<std::path::PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = gatehouse_keys::delete(d);
        }
    }
}
