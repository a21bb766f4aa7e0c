//! A `tools/call` allowed by the user's rule through Gatehouse, against the same call
//! straight to the server, with the official Python SDK's client (tests/peers/mcp/bench.py)
//! and server (server.py) on this machine: the latency each call adds (p50, p99), the CPU
//! Gatehouse spends per call (the wrap and the gate, `gatehouse serve`), and the wrap's peak
//! memory around one 10 MB result. Direct and wrapped runs alternate; the machine's cores,
//! the direct call's own latency (the floor) and the machine's round trip to another
//! process (the least a question to the gate can cost) are printed with them.
//!
//! Needs the MCP peer (scripts/setup-peers.sh): `cargo bench -p gatehouse-cli --bench
//! mcp_call` (`GATEHOUSE_BENCH_CALLS`: calls per run, 2,000 unless set; `GATEHOUSE_BENCH_ROUNDS`:
//! pairs of runs, 3).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

fn gh(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("--data-dir").arg(dir).args(args).env("GATEHOUSE_KEYSTORE", "file").output().unwrap();
    assert!(out.status.success(), "gatehouse {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn peer(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/mcp").join(name).display().to_string()
}

/// CPU seconds a process has used.
fn cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (field(11) + field(12)) / ticks
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// The machine's own limit on any trip to another process: a byte written to `cat` and
/// read back, `n` times (two wake-ups of a sleeping process, as a wrap's question to the
/// gate costs at the least): p50 and p99 in µs.
fn round_trip(n: usize) -> (f64, f64) {
    use std::io::{Read, Write};
    let mut cat = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let (mut to, mut from) = (cat.stdin.take().unwrap(), cat.stdout.take().unwrap());
    let mut took = Vec::with_capacity(n);
    let mut byte = [0u8; 1];
    for _ in 0..n {
        let t = Instant::now();
        to.write_all(b"x").unwrap();
        from.read_exact(&mut byte).unwrap();
        took.push(t.elapsed().as_secs_f64() * 1e6);
        // Apart as the calls are, so each trip finds the other process asleep.
        std::thread::sleep(Duration::from_micros(200));
    }
    drop(to);
    let _ = cat.wait();
    took.sort_by(f64::total_cmp);
    (quantile(&took, 0.5), quantile(&took, 0.99))
}

/// One run of the bench client against `server` (a command line).
fn run(py: &Path, server: &[String], calls: usize, big: usize) -> Value {
    let out = Command::new(py)
        .arg(peer("bench.py"))
        .arg(json!(server).to_string())
        .arg(calls.to_string())
        .arg(big.to_string())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the bench client failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn main() {
    let Some(py) = gatehouse_mail_testswarm::reference::python("mcp-2.3.0", "MCP Python SDK") else { return };
    let calls: usize = std::env::var("GATEHOUSE_BENCH_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let rounds: usize = std::env::var("GATEHOUSE_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gh(d, &["init"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut serve = Command::new(BIN)
        .arg("--data-dir")
        .arg(d)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("GATEHOUSE_KEYSTORE", "file")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let t = Instant::now();
    while reqwest::blocking::get(format!("{base}/health")).is_err() {
        assert!(t.elapsed() < Duration::from_secs(20), "gatehouse serve did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let direct: Vec<String> = vec![py.display().to_string(), peer("server.py")];
    let mut wrapped: Vec<String> = vec![BIN.into(), "--data-dir".into(), d.display().to_string()];
    wrapped.extend(["mcp", "wrap", "--name", "bench", "--gate", &base, "--"].map(String::from));
    wrapped.extend(direct.iter().cloned());

    // The server knocks with its tools; the user lets it in and allows echo and big by rule.
    let knock = Command::new(&py).arg(peer("app.py")).arg(json!(wrapped).to_string()).arg(json!(["list"]).to_string()).output().unwrap();
    assert!(knock.status.success());
    gh(d, &["mcp", "allow", "bench"]);
    gh(d, &["mcp", "rules", "add", "bench", "--tool", "echo", "--action", "allow"]);
    gh(d, &["mcp", "rules", "add", "bench", "--tool", "big", "--action", "allow"]);

    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        .unwrap_or_default();
    println!("machine: {cores} cores, {model}; {calls} calls a run, {rounds} pairs of runs alternated");
    let (mut p50s, mut p99s, mut cpus, mut floors, mut floors99) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut trips, mut trips99, mut busies) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (t50, t99) = round_trip(calls * 2);
        println!("round {round}: the machine's round trip to another process (a byte to cat and back) p50 {t50:.0} µs, p99 {t99:.0} µs");
        trips.push(t50);
        trips99.push(t99);
        let straight = run(&py, &direct, calls, 0);
        let busy = straight["busy"].as_f64().unwrap_or(0.0) * 100.0;
        let peers = (straight["client_cpu_s"].as_f64().unwrap_or(0.0) + straight["cpu_s"].as_f64().unwrap_or(0.0)) / calls as f64 * 1e6;
        println!("round {round}: the straight calls alone kept the machine's cores {busy:.0}% busy (the SDK's client and server {peers:.0} CPU-µs per call)");
        busies.push(busy);
        let gate_before = cpu(serve.id());
        let last = round + 1 == rounds;
        let through = run(&py, &wrapped, calls, if last { 10_000_000 } else { 0 });
        let gate_cpu = cpu(serve.id()) - gate_before;
        let lat = |v: &Value| {
            let mut m: Vec<f64> = v["micros"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            m.sort_by(f64::total_cmp);
            (quantile(&m, 0.5), quantile(&m, 0.99))
        };
        let ((s50, s99), (w50, w99)) = (lat(&straight), lat(&through));
        // The gate's CPU over the whole wrapped run (its calls, plus the session's start
        // and the large result in the last run) is charged to the timed calls: an upper bound.
        let per_call = (through["cpu_s"].as_f64().unwrap() + gate_cpu) / calls as f64 * 1e6;
        println!(
            "round {round}: straight p50 {s50:.0} µs p99 {s99:.0} µs; through Gatehouse p50 {w50:.0} µs p99 {w99:.0} µs; added p50 {:.0} µs p99 {:.0} µs; Gatehouse CPU {per_call:.0} µs per call (wrap {:.0}, gate {:.0})",
            w50 - s50,
            w99 - s99,
            through["cpu_s"].as_f64().unwrap() / calls as f64 * 1e6,
            gate_cpu / calls as f64 * 1e6
        );
        if last {
            // The message is larger than its text: the SDK's server sends the result as
            // text and again as structuredContent. Its size is the one the wrap read (the
            // call's answer in the log).
            std::thread::sleep(Duration::from_millis(1500));
            let log: Value = serde_json::from_str(&gh(d, &["mcp", "log", "bench", "--json", "--limit", "1"])).unwrap_or_default();
            println!(
                "10 MB result through the wrap: {} bytes of text in a message of {} bytes, in {:.0} ms; the wrap's peak RSS {:.1} MB before, {:.1} MB after",
                through["big_len"],
                log[0]["answer"]["bytes"],
                through["big_ms"].as_f64().unwrap_or(0.0),
                through["rss_before_kb"].as_f64().unwrap_or(0.0) / 1024.0,
                through["rss_after_kb"].as_f64().unwrap_or(0.0) / 1024.0
            );
        }
        p50s.push(w50 - s50);
        p99s.push(w99 - s99);
        cpus.push(per_call);
        floors.push(s50);
        floors99.push(s99);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "median of {rounds}: added p50 {:.0} µs, added p99 {:.0} µs, Gatehouse CPU {:.0} µs per allowed call; the straight call's own p50 {:.0} µs, p99 {:.0} µs; the machine's round trip to another process p50 {:.0} µs, p99 {:.0} µs; its cores {:.0}% busy with the straight call alone",
        median(&mut p50s),
        median(&mut p99s),
        median(&mut cpus),
        median(&mut floors),
        median(&mut floors99),
        median(&mut trips),
        median(&mut trips99),
        median(&mut busies)
    );
    let _ = serve.kill();
    let _ = serve.wait();
}
