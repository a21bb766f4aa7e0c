//! `gatehouse bench`: a load generator over loopback, with the machine's physical limits
//! measured in the same run so every figure has something to be read against.

pub mod reference;
mod server;
mod team;

use crate::terminal::say;
use server::{clock_ticks, cpu_seconds, Server};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ed25519_dalek::{Signer, SigningKey};
use gatehouse_app::trust::{Policy, TrustEntry};

pub struct BenchArgs {
    pub envelopes: usize,
    /// Envelopes posted before the measured ones, and not counted in their figures.
    pub warm_up: usize,
    pub senders: usize,
    pub concurrency: usize,
    pub folder: bool,
    pub keep: Option<std::path::PathBuf>,
    /// The EPP reference inbox to measure beside this one: its source and the Python that
    /// runs it.
    pub reference: Option<reference::Reference>,
    /// A team's gate: the PostgreSQL database its nodes share.
    pub database: Option<String>,
    /// How many `gatehouse serve` nodes take the load (a team's gate), in turn.
    pub nodes: usize,
}

/// Single-core Ed25519 verifications per second on this machine, by the check the inbox
/// runs (strict verdicts).
fn ed25519_verify_rate() -> f64 {
    let key = SigningKey::from_bytes(&[7; 32]);
    let msg = vec![b'x'; 400];
    let sig = key.sign(&msg);
    let vk = key.verifying_key();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_millis(700) {
        for _ in 0..100 {
            assert!(gatehouse_epp::crypto::verify_signature(&vk, &msg, &sig), "valid");
        }
        n += 100;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Durable (synchronous=FULL, one transaction each) SQLite inserts per second in `dir`.
fn sqlite_durable_insert_rate(dir: &std::path::Path) -> f64 {
    let conn = rusqlite::Connection::open(dir.join("limit.db")).expect("open");
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "FULL").unwrap();
    conn.execute_batch("CREATE TABLE t (k BLOB PRIMARY KEY, v TEXT)").unwrap();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_millis(700) {
        conn.execute("INSERT INTO t VALUES (?1, ?2)", rusqlite::params![n.to_le_bytes().to_vec(), "x".repeat(300)]).unwrap();
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// The store's CPU for keeping one accepted envelope (its record, receipt and nonce in a
/// group commit, 64 callers at once, as the inbox commits under load), in µs: with one
/// verification, the floor an envelope's ingest cannot go below.
fn store_commit_cpu_us(dir: &std::path::Path) -> f64 {
    const CALLERS: usize = 64;
    const EACH: usize = 150;
    let before = cpu_seconds("self");
    match gatehouse_app::limits::commit_many(&dir.join("floor.db"), CALLERS, EACH) {
        Ok(n) if n > 0 => (cpu_seconds("self") - before) * 1e6 / n as f64,
        _ => f64::NAN,
    }
}

/// Sequential write bandwidth to `dir` with an fsync every 4 MiB (MB/s): what a WAL
/// that is appended and synced continuously can get from this disk.
fn disk_write_rate(dir: &std::path::Path) -> f64 {
    use std::io::Write;
    let path = dir.join("bandwidth.tmp");
    let mut f = std::fs::File::create(&path).expect("a temp file");
    let chunk = vec![0x5au8; 256 * 1024];
    let start = Instant::now();
    let mut written = 0usize;
    while start.elapsed() < Duration::from_millis(700) || written < 16 << 20 {
        f.write_all(&chunk).expect("disk write");
        written += chunk.len();
        if written.is_multiple_of(4 << 20) {
            f.sync_data().expect("fsync");
        }
    }
    f.sync_data().expect("fsync");
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    written as f64 / 1e6 / secs
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The whole machine's CPU time so far (all cores, from /proc/stat), in seconds: whether
/// the run left any CPU unused is the limit every other figure is read against.
#[derive(Clone, Copy, Default)]
struct MachineCpu {
    busy: f64,
    iowait: f64,
    stolen: f64,
    total: f64,
}

impl MachineCpu {
    fn now() -> MachineCpu {
        let line = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // cpu  user nice system idle iowait irq softirq steal (guest time is inside user)
        let f: Vec<f64> = line.lines().next().unwrap_or_default().split_whitespace().skip(1).take(8).filter_map(|v| v.parse().ok()).collect();
        if f.len() < 8 {
            return MachineCpu::default();
        }
        let t = clock_ticks();
        MachineCpu { busy: (f[0] + f[1] + f[2] + f[5] + f[6]) / t, iowait: f[4] / t, stolen: f[7] / t, total: f.iter().sum::<f64>() / t }
    }

    fn since(self, before: MachineCpu) -> MachineCpu {
        MachineCpu { busy: self.busy - before.busy, iowait: self.iowait - before.iowait, stolen: self.stolen - before.stolen, total: self.total - before.total }
    }
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    say!("measuring this machine's limits…");
    let verify_rate = ed25519_verify_rate();
    let insert_rate = sqlite_durable_insert_rate(dir.path());
    say!("  Ed25519 verify, one core:        {verify_rate:>10.0} /s");
    say!("  SQLite durable insert (FULL):    {insert_rate:>10.0} /s");
    let disk_rate = disk_write_rate(dir.path());
    say!("  disk write, fsync every 4 MiB:   {disk_rate:>10.0} MB/s");
    let commit_us = store_commit_cpu_us(dir.path());
    let floor_us = 1e6 / verify_rate + commit_us;
    say!("  floor per envelope (one verify + the store's commit share): {floor_us:.0} CPU-µs ({:.0} + {commit_us:.0})", 1e6 / verify_rate);

    let data = dir.path().join("inbox");
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut init = std::process::Command::new(&exe);
    init.arg("init").env("GATEHOUSE_DATA_DIR", &data).env("GATEHOUSE_KEYSTORE", "file");
    if let Some(db) = &args.database {
        init.env("GATEHOUSE_DATABASE", db);
    }
    let init = init.output().map_err(|e| e.to_string())?;
    if !init.status.success() {
        return Err(format!("gatehouse init failed: {}", String::from_utf8_lossy(&init.stderr)));
    }
    let inbox_pub = String::from_utf8_lossy(&init.stdout).trim().to_string();
    let senders: Vec<SigningKey> = (0..args.senders.max(1)).map(|_| gatehouse_epp::generate_signing_key()).collect();
    {
        let ctx = gatehouse_app::Context::open_at(data.clone(), gatehouse_app::context::KeystoreKind::File, false, args.database.as_deref())
            .map_err(|e| e.to_string())?;
        for (i, s) in senders.iter().enumerate() {
            let entry = TrustEntry {
                door: "epp".into(),
                facts: Default::default(),
                public_key: gatehouse_epp::public_key_hex(s),
                name: format!("bench sender {i}"),
                added_at: gatehouse_epp::utc_string(chrono::Utc::now()),
                policy: Policy { allowed_scopes: vec!["*".into()], ..Policy::default() },
            };
            gatehouse_app::trust::add(&ctx, &entry, chrono::Utc::now()).map_err(|e| e.to_string())?;
        }
    }
    match args.warm_up {
        0 => say!("signing {} envelopes from {} senders…", args.envelopes, senders.len()),
        w => say!("signing {} envelopes (and {w} to warm up with) from {} senders…", args.envelopes, senders.len()),
    }
    let (warm, bodies) = sign_all(&inbox_pub, &senders, args.warm_up, args.envelopes);

    let watch = dir.path().join("drop");
    let servers = team::start_nodes(dir.path(), &data, args.nodes, args.database.as_deref(), args.folder.then_some(watch.as_path()))?;
    let database = match &args.database {
        Some(url) => Some(team::Database::open(&data, url)?),
        None => None,
    };
    let total = bodies.len();
    let ours = if args.folder {
        let m = Measuring::start(&servers);
        while !watch.join("rejected").exists() {
            std::thread::sleep(Duration::from_millis(20));
        }
        say!("dropping {total} files into the watched folder…");
        let start = Instant::now();
        for (i, b) in bodies.iter().enumerate() {
            // Written elsewhere and renamed in: each file appears complete.
            let tmp = dir.path().join(format!("tmp-{i}.json"));
            std::fs::write(&tmp, b).map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, watch.join(format!("env-{i:06}.json"))).map_err(|e| e.to_string())?;
        }
        let count = |d: &str| std::fs::read_dir(watch.join(d)).map(|d| d.count()).unwrap_or(0) / 2;
        loop {
            let done = count("accepted") + count("rejected");
            if done >= total {
                break;
            }
            if start.elapsed() > Duration::from_secs(600) {
                return Err(format!("only {done} of {total} files receipted after 10 minutes"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let secs = start.elapsed().as_secs_f64();
        let accepted = count("accepted");
        say!("folder: {total} files receipted ({accepted} accepted) in {secs:.2} s = {:.0} files/s", total as f64 / secs);
        m.report(&servers, total, secs, "inbox")
    } else {
        warm_up(&servers, warm, args.concurrency, "inbox")?;
        let before = database.as_ref().map(team::Database::counters);
        let figures = measure_http(&servers, bodies, args.concurrency, "inbox")?;
        if let (Some(db), Some(before)) = (&database, before) {
            db.report(before, total);
        }
        say!("inbox CPU per envelope: {:.0} µs = {:.2}× the floor ({floor_us:.0} µs)", figures.cpu_us, figures.cpu_us / floor_us);
        figures
    };
    drop(servers);
    if let Some(r) = &args.reference {
        let (reference, reference_pub) = r.start(dir.path(), &senders)?;
        let (warm, bodies) = sign_all(&reference_pub, &senders, args.warm_up, args.envelopes);
        warm_up(std::slice::from_ref(&reference), warm, args.concurrency, "reference")?;
        let theirs = measure_http(std::slice::from_ref(&reference), bodies, args.concurrency, "reference")?;
        drop(reference);
        say!(
            "Gatehouse / the EPP reference, same client, same machine, same run: {:.1}× the accepted/s, {:.1}× less CPU per envelope",
            ours.rate / theirs.rate.max(f64::MIN_POSITIVE),
            theirs.cpu_us / ours.cpu_us.max(f64::MIN_POSITIVE),
        );
    }
    if let Some(keep) = args.keep {
        // A rename within one filesystem, or a copy of the store where it cannot be one.
        if std::fs::rename(&data, &keep).is_err() {
            std::fs::create_dir_all(&keep).map_err(|e| format!("cannot create {}: {e}", keep.display()))?;
            for f in std::fs::read_dir(&data).map_err(|e| e.to_string())?.flatten() {
                if f.path().is_file() {
                    std::fs::copy(f.path(), keep.join(f.file_name())).map_err(|e| e.to_string())?;
                }
            }
        }
        say!("the inbox's data is kept in {}", keep.display());
    }
    Ok(())
}

/// `warm + n` envelopes to `inbox_pub`, from the senders in turn, signed before anything
/// is timed: the first `warm` for the warm-up, the other `n` measured.
fn sign_all(inbox_pub: &str, senders: &[SigningKey], warm: usize, n: usize) -> (Vec<String>, Vec<String>) {
    let now = chrono::Utc::now();
    let mut all: Vec<String> = (0..warm + n)
        .map(|i| {
            let mut d = gatehouse_epp::Draft::new(inbox_pub, "bench", &format!("benchmark prompt number {i}: please summarise the attached ticket"));
            d.context = Some(serde_json::json!({"ticket": i, "priority": "normal"}));
            d.sign(&senders[i % senders.len()], now).to_string()
        })
        .collect();
    let measured = all.split_off(warm);
    (all, measured)
}

/// What one server did under the load, for comparing two.
struct Figures {
    /// Accepted (or receipted, for the folder) per second.
    rate: f64,
    cpu_us: f64,
}

/// The server's and the machine's counters at the start of a measurement.
struct Measuring {
    cpu: f64,
    written: u64,
    machine: MachineCpu,
    generator: f64,
    database: f64,
    at: Instant,
}

/// The servers' peak RSS (the largest) and CPU seconds (all together).
fn usage(servers: &[Server]) -> (f64, f64) {
    servers.iter().map(Server::usage).fold((0.0, 0.0), |(rss, cpu), (r, c)| (rss.max(r), cpu + c))
}

impl Measuring {
    fn start(servers: &[Server]) -> Measuring {
        Measuring {
            cpu: usage(servers).1,
            written: servers.iter().map(Server::written).sum(),
            machine: MachineCpu::now(),
            generator: cpu_seconds("self"),
            database: team::postgres_cpu_seconds(),
            at: Instant::now(),
        }
    }

    /// Prints what `servers` (called `who`) used for `total` envelopes over `secs`.
    fn report(self, servers: &[Server], total: usize, secs: f64, who: &str) -> Figures {
        let (rss, cpu_after) = usage(servers);
        let used = cpu_after - self.cpu;
        let database = team::postgres_cpu_seconds() - self.database;
        let machine = MachineCpu::now().since(self.machine);
        let generator = cpu_seconds("self") - self.generator;
        let wall = self.at.elapsed().as_secs_f64();
        let written = servers.iter().map(Server::written).sum::<u64>().saturating_sub(self.written);
        if machine.total > 0.0 {
            let pct = |v: f64| 100.0 * v / machine.total;
            let db = if database > 0.0 { format!(", PostgreSQL {:.2}", database / wall) } else { String::new() };
            say!(
                "machine: {:.0} cores {:.0}% busy ({who} {:.2} cores, this load generator {:.2}{db}, the rest {:.2}); I/O wait {:.0}%, stolen by the host {:.0}%",
                machine.total / wall,
                pct(machine.busy),
                used / wall,
                generator / wall,
                ((machine.busy - used - generator - database) / wall).max(0.0),
                pct(machine.iowait),
                pct(machine.stolen),
            );
        }
        let cpu_us = used * 1e6 / total as f64;
        let nodes = if servers.len() > 1 { format!("{} processes", servers.len()) } else { "process".to_string() };
        say!("{who} {nodes}: peak RSS {rss:.0} MB; {used:.2} CPU-seconds = {cpu_us:.0} µs per envelope ({:.2} cores busy)", used / secs);
        if database > 0.0 {
            say!("PostgreSQL: {database:.2} CPU-seconds = {:.0} µs per envelope", database * 1e6 / total as f64);
        }
        say!(
            "{who} process wrote {:.0} MB to disk = {:.1} KB per envelope ({:.0} MB/s)",
            written as f64 / 1e6,
            written as f64 / 1e3 / total as f64,
            written as f64 / 1e6 / secs,
        );
        Figures { rate: total as f64 / secs, cpu_us }
    }
}

/// Each server's EPP submit route.
fn submit_urls(servers: &[Server]) -> Vec<String> {
    servers.iter().map(|s| format!("http://{}/epp/v1/submit", s.addr)).collect()
}

/// Posts the warm-up's `bodies` as the measured ones are posted, and shows its own
/// figures apart: a server's first requests (connections opened, statements prepared,
/// caches filled) are its start, not its rate.
fn warm_up(servers: &[Server], bodies: Vec<String>, concurrency: usize, who: &str) -> Result<(), String> {
    if bodies.is_empty() {
        return Ok(());
    }
    let total = bodies.len();
    let urls = submit_urls(servers);
    let (accepted, lat, secs) = post_all(urls, bodies, concurrency)?;
    say!(
        "{who} warm-up, not counted: {accepted} of {total} accepted in {secs:.2} s; p50 {:.2} ms, p99 {:.2} ms, slowest {:.2} ms",
        percentile(&lat, 0.50).as_secs_f64() * 1000.0,
        percentile(&lat, 0.99).as_secs_f64() * 1000.0,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1000.0,
    );
    if accepted < total {
        return Err(format!("{who} accepted {accepted} of the warm-up's {total}"));
    }
    Ok(())
}

/// Posts `bodies` to `server`'s EPP submit route and prints what it did.
fn measure_http(servers: &[Server], bodies: Vec<String>, concurrency: usize, who: &str) -> Result<Figures, String> {
    let total = bodies.len();
    let urls = submit_urls(servers);
    say!("{who}: posting to {} with {concurrency} connections…", urls.join(" and "));
    let m = Measuring::start(servers);
    let (accepted, lat, secs) = post_all(urls, bodies, concurrency)?;
    say!(
        "{who} http: {accepted} of {total} accepted in {secs:.2} s = {:.0} accepted/s; p50 {:.2} ms, p99 {:.2} ms",
        accepted as f64 / secs,
        percentile(&lat, 0.50).as_secs_f64() * 1000.0,
        percentile(&lat, 0.99).as_secs_f64() * 1000.0,
    );
    if accepted < total {
        return Err(format!("{who} accepted {accepted} of {total}: the figures would not be of the same work"));
    }
    Ok(m.report(servers, total, secs, who))
}

/// Posts every body once over `concurrency` keep-alive connections; returns how many
/// were accepted, every request's latency, and the wall time. A bare HTTP/1.1 client
/// (hyper's connection API, no pool or redirect logic), so the load generator takes as
/// little as it can of the CPU it shares with the inbox, as wrk would.
fn post_all(urls: Vec<String>, bodies: Vec<String>, concurrency: usize) -> Result<(usize, Vec<Duration>, f64), String> {
    use http_body_util::{BodyExt, Full};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| e.to_string())?;
    // Connection k goes to node k mod n: a load balancer's round robin.
    let mut targets = Vec::new();
    for url in &urls {
        let uri: hyper::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let authority = uri.authority().map(|a| a.to_string()).ok_or("no host in the URL")?;
        targets.push((uri, authority));
    }
    rt.block_on(async move {
        let bodies: Arc<Vec<bytes::Bytes>> = Arc::new(bodies.into_iter().map(bytes::Bytes::from).collect());
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let mut workers = Vec::new();
        for k in 0..concurrency.max(1) {
            let (uri, authority) = targets[k % targets.len()].clone();
            let (bodies, next) = (bodies.clone(), next.clone());
            workers.push(tokio::spawn(async move {
                let stream = tokio::net::TcpStream::connect(&authority).await.map_err(|e| e.to_string())?;
                stream.set_nodelay(true).map_err(|e| e.to_string())?;
                let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                let mut lat = Vec::new();
                let mut accepted = 0usize;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= bodies.len() {
                        break;
                    }
                    let req = hyper::Request::post(uri.clone())
                        .header(hyper::header::HOST, &authority)
                        .header(hyper::header::CONTENT_TYPE, "application/json")
                        .body(Full::new(bodies[i].clone()))
                        .map_err(|e| e.to_string())?;
                    let t = Instant::now();
                    sender.ready().await.map_err(|e| e.to_string())?;
                    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
                    accepted += (resp.status() == 200) as usize;
                    let _ = resp.into_body().collect().await;
                    lat.push(t.elapsed());
                }
                Ok::<_, String>((lat, accepted))
            }));
        }
        let mut lat = Vec::new();
        let mut accepted = 0;
        for w in workers {
            let (l, a) = w.await.map_err(|e| e.to_string())??;
            lat.extend(l);
            accepted += a;
        }
        let secs = start.elapsed().as_secs_f64();
        lat.sort();
        Ok((accepted, lat, secs))
    })
}
