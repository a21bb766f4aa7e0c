//! The processes a bench measures (the inbox under test, the EPP reference beside it),
//! read from /proc: where they listen, what they wrote, their memory and CPU.

use crate::terminal::note;

/// The inbox under test: a separate `gatehouse serve` process, so the load generator's
/// CPU and memory are not counted as the server's (and the server gets no help from
/// sharing a runtime with its client).
pub(crate) struct Server {
    child: std::process::Child,
    pub(super) addr: String,
}

impl Server {
    pub(super) fn start(data_dir: &std::path::Path, watch: Option<&std::path::Path>, database: Option<&str>) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .env("GATEHOUSE_DATA_DIR", data_dir)
            .env("GATEHOUSE_KEYSTORE", "file")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if let Some(w) = watch {
            cmd.arg("--watch").arg(w);
        }
        if let Some(db) = database {
            cmd.env("GATEHOUSE_DATABASE", db);
        }
        let child = cmd.spawn().map_err(|e| format!("cannot start the inbox: {e}"))?;
        Server::listening(child, "listening on http://", "inbox")
    }

    /// A started server, once a line of its stderr says where it listens (after `marker`:
    /// `host:port`); its further lines are passed on, marked with `who`.
    pub(crate) fn listening(mut child: std::process::Child, marker: &str, who: &'static str) -> Result<Server, String> {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("piped")).lines();
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(rest) = line.split(marker).nth(1) {
                        break rest.split(|c: char| c == '/' || c.is_whitespace()).next().unwrap_or_default().to_string();
                    }
                }
                _ => {
                    let _ = child.kill();
                    return Err(format!("the {who} exited before it listened"));
                }
            }
        };
        // Keep draining its stderr so it never blocks on a full pipe; a line per request
        // (the reference logs each envelope at INFO) would bury the figures.
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok).filter(|l| !l.contains("INFO")) {
                note!("  {who}: {line}");
            }
        });
        Ok(Server { child, addr })
    }

    /// Bytes this process has caused to be written to disk so far.
    pub(super) fn written(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/io", self.child.id()))
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("write_bytes:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()))
            .unwrap_or(0)
    }

    /// Peak resident memory (MB) and CPU seconds used so far, from /proc.
    pub(super) fn usage(&self) -> (f64, f64) {
        let pid = self.child.id();
        let hwm = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<f64>().ok()))
            .map_or(0.0, |kb| kb / 1024.0);
        (hwm, cpu_seconds(&pid.to_string()))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: plain signal to our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// CPU seconds a process (a pid, or "self") has used so far, from /proc.
pub(super) fn cpu_seconds(pid: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; utime and stime are 14 and 15.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
            Some(ticks / clock_ticks())
        })
        .unwrap_or(0.0)
}

pub(super) fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}
