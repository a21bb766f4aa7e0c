//! A real PostgreSQL on loopback for the tests of a team's gate (issue 36): Debian's
//! PostgreSQL, a cluster of its own made by `initdb` in a temp dir and run by `pg_ctl`,
//! stopped at once when dropped. `initdb` and `postgres` refuse to run as root: under root
//! the cluster is made and run as `nobody`, which owns the temp dir.
//!
//! Missing binaries skip the test, unless `GATEHOUSE_REQUIRE_PEERS` is set (the README's
//! test command sets it after `scripts/setup.sh` installed them): then they fail it.
//! `GATEHOUSE_PG_BIN` names another directory holding `initdb` and `pg_ctl`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The cluster's superuser; it logs in without a password, from loopback only.
pub const USER: &str = "gatehouse";
/// The database every cluster has from the start.
pub const DATABASE: &str = "postgres";

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Whom the cluster runs as (uid, gid), when this process is root.
    run_as: Option<(u32, u32)>,
    pub port: u16,
    /// The server's options beyond port and sockets (TLS).
    options: String,
}

/// The directory of Debian's PostgreSQL binaries (the newest installed), or the one
/// `GATEHOUSE_PG_BIN` names.
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("GATEHOUSE_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `nobody`'s uid and gid, when this process is root (PostgreSQL will not run as root).
fn unprivileged() -> Option<(u32, u32)> {
    // SAFETY: geteuid cannot fail; getpwnam returns null or a pointer valid until the next
    // call, read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let pw = libc::getpwnam(c"nobody".as_ptr());
        assert!(!pw.is_null(), "running as root, and there is no user 'nobody' to run PostgreSQL as");
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

impl Postgres {
    /// A new cluster, started and taking connections; `None` (the test skips) when
    /// PostgreSQL is not installed.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = bin_dir() else {
            let why = "PostgreSQL is not installed (Debian: postgresql); run scripts/setup.sh";
            assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        };
        let dir = tempfile::Builder::new().prefix("gatehouse-pg-").tempdir().unwrap();
        let run_as = unprivileged();
        if let Some((uid, gid)) = run_as {
            let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid C path; the directory is ours, just made.
            assert_eq!(unsafe { libc::chown(path.as_ptr(), uid, gid) }, 0, "chown {}", dir.path().display());
        }
        let pg = Postgres { dir, bin, run_as, port: free_port(), options: String::new() };
        let data = pg.data();
        let out = pg.run("initdb", &["-D", data.to_str().unwrap(), "-U", USER, "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-instructions"]);
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        pg.resume();
        Some(pg)
    }

    /// A new cluster that also takes TLS connections, with a certificate for 127.0.0.1
    /// and localhost made for it; the certificate's path, which a client is told to trust.
    pub fn start_tls() -> Option<(Postgres, PathBuf)> {
        let mut pg = Postgres::start()?;
        pg.stop();
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let (crt, key_file, ca) = (pg.dir.path().join("server.crt"), pg.dir.path().join("server.key"), pg.dir.path().join("ca.pem"));
        std::fs::write(&crt, cert.pem()).unwrap();
        std::fs::write(&ca, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        // PostgreSQL takes a key only its own user can read.
        std::fs::set_permissions(&key_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        if let Some((uid, gid)) = pg.run_as {
            for f in [&crt, &key_file] {
                std::os::unix::fs::chown(f, Some(uid), Some(gid)).unwrap();
            }
        }
        pg.options = format!("-c ssl=on -c ssl_cert_file={} -c ssl_key_file={}", crt.display(), key_file.display());
        pg.resume();
        Some((pg, ca))
    }

    /// One cluster for every test of this process, each test with a database of its own
    /// ([`Postgres::fresh_database`]): one `initdb` per test binary instead of per test.
    /// A watchdog in a session of its own stops the cluster and removes its directory
    /// once this process is gone (statics are never dropped, and a test run may be
    /// killed).
    pub fn shared() -> Option<&'static Postgres> {
        static SHARED: std::sync::OnceLock<Option<Postgres>> = std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| {
                let pg = Postgres::start()?;
                let script = format!(
                    "while [ -d /proc/{pid} ]; do sleep 1; done; '{pg_ctl}' -D '{data}' -w -m immediate stop >/dev/null 2>&1; rm -rf '{dir}'",
                    pid = std::process::id(),
                    pg_ctl = pg.bin.join("pg_ctl").display(),
                    data = pg.data().display(),
                    dir = pg.dir.path().display(),
                );
                let mut cmd = Command::new("sh");
                cmd.args(["-c", &script]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
                if let Some((uid, gid)) = pg.run_as {
                    cmd.uid(uid).gid(gid);
                }
                // Never waited for: it outlives this process by design (init reaps it).
                #[allow(clippy::zombie_processes)]
                cmd.spawn().expect("cannot start the PostgreSQL watchdog");
                Some(pg)
            })
            .as_ref()
    }

    /// A new, empty database in this cluster, for one test; its URL.
    pub fn fresh_database(&self) -> String {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!("t{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.psql(&format!("CREATE DATABASE {name}")).unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        self.url_of(&name)
    }

    /// Where a client connects.
    pub fn url(&self) -> String {
        self.url_of(DATABASE)
    }

    /// Where a client connects to `database`.
    pub fn url_of(&self, database: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{database}", self.port)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let mut cmd = Command::new(self.bin.join(program));
        cmd.args(args).current_dir(self.dir.path()).stdin(Stdio::null());
        if let Some((uid, gid)) = self.run_as {
            cmd.uid(uid).gid(gid).env("HOME", self.dir.path());
        }
        cmd.output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
    }

    fn pg_ctl(&self, args: &[&str]) -> Output {
        let data = self.data();
        let mut all = vec!["-D", data.to_str().unwrap()];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all)
    }

    /// Starts the cluster (again) on its port, and returns once it takes connections.
    pub fn resume(&self) {
        let options = format!("-p {} -c listen_addresses=127.0.0.1 -k {} {}", self.port, self.dir.path().display(), self.options);
        let log = self.dir.path().join("postgres.log");
        let out = self.pg_ctl(&["-w", "-t", "60", "-l", log.to_str().unwrap(), "-o", &options, "start"]);
        assert!(
            out.status.success(),
            "PostgreSQL did not start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Stops the cluster as an operator would (open connections are closed); `resume`
    /// starts it again with everything it committed.
    pub fn stop(&self) {
        let out = self.pg_ctl(&["-w", "-m", "fast", "stop"]);
        assert!(out.status.success(), "PostgreSQL did not stop: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Freezes every process of the cluster (SIGSTOP to the postmaster and each of its
    /// children, which PostgreSQL puts in sessions of their own): a database that takes
    /// connections and answers nothing, as a hung one does. [`Postgres::thaw`] lets it go on.
    pub fn freeze(&self) {
        self.signal_all(libc::SIGSTOP);
    }

    pub fn thaw(&self) {
        self.signal_all(libc::SIGCONT);
    }

    fn signal_all(&self, signal: libc::c_int) {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid")).expect("the cluster runs");
        let postmaster: i32 = pid_file.lines().next().and_then(|l| l.trim().parse().ok()).expect("postmaster.pid names the postmaster");
        // SAFETY (each kill): kill takes plain integers; a process gone meanwhile is an error return.
        unsafe { libc::kill(postmaster, signal) };
        // The postmaster first, and only once it has stopped are its children listed: one it
        // forked while the list was read (a pool opening a connection) would otherwise go on
        // answering a "frozen" database. A fork under way when the signal came still ends,
        // so the list is read again until a reading finds no one new.
        if signal == libc::SIGSTOP {
            let stopped = || process_stat(postmaster).is_some_and(|(state, _)| state == 'T' || state == 't');
            let since = std::time::Instant::now();
            while !stopped() && since.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let mut told = std::collections::HashSet::new();
        loop {
            let children: Vec<i32> = std::fs::read_dir("/proc")
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|p| p.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| process_stat(*pid).is_some_and(|(_, ppid)| ppid == postmaster))
                .filter(|pid| !told.contains(pid))
                .collect();
            if children.is_empty() {
                break;
            }
            for pid in children {
                unsafe { libc::kill(pid, signal) };
                told.insert(pid);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs one SQL statement with the cluster's own `psql`, as its superuser.
    pub fn psql(&self, sql: &str) -> Result<String, String> {
        self.psql_in(DATABASE, sql)
    }

    /// Runs one SQL statement in `database`.
    pub fn psql_in(&self, database: &str, sql: &str) -> Result<String, String> {
        let port = self.port.to_string();
        let out = self.run("psql", &["-h", "127.0.0.1", "-p", &port, "-U", USER, "-d", database, "-XAtqc", sql]);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// The temp dir the cluster lives in (its log is `postgres.log` there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Nothing to keep: stopped at once, then the temp dir goes.
        let _ = self.pg_ctl(&["-w", "-m", "immediate", "stop"]);
    }
}

/// A process's state letter and parent, from `/proc/PID/stat` ("pid (comm) state ppid …").
fn process_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}
