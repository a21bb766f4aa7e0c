//! The desktop app's memory with a 100,000-envelope store, next to a bare Tauri window
//! measured in the same run: PSS summed over the process and every process it started
//! (WebKit's web and network processes), from /proc/PID/smaps_rollup.
//!
//!   xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo bench --bench desktop_memory
//!
//! Then, with each window settled and nothing arriving, its idle cost over
//! GATEHOUSE_BENCH_IDLE_SECS (default 20; 60 for the figures in docs/performance.md):
//! wakeups (context switches of every thread of every process in the tree) per second and
//! CPU, against the bare window in the same run.
//!
//! Last, a burst: GATEHOUSE_BENCH_BURST envelopes (default 10,000) posted to the running
//! app's inbox as fast as it takes them (16 connections; aimed at 10,000/s) while the
//! window shows the inbox, and how many times the window redrew meanwhile (each redraw
//! asks for `app_info` once; the app names every command the window calls at debug level
//! under `gatehouse::window`).
//! GATEHOUSE_BENCH_BURST_ONLY=1 measures only the burst.
//!
//! (Numbers, not a test: they go in docs/performance.md.)

use gatehouse_app::doors::Submit as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// 100,000 unless GATEHOUSE_BENCH_ENVELOPES says otherwise (0 shows what the store costs).
fn envelopes() -> usize {
    std::env::var("GATEHOUSE_BENCH_ENVELOPES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

/// `pid` and all its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            if let Some(ppid) = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|s| s.parse::<u32>().ok()) {
                parent_of.push((p, ppid));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// Context switches per thread ((pid, tid) → count) and CPU clock ticks summed over `pids`.
fn activity(pids: &[u32]) -> (std::collections::HashMap<(u32, String), u64>, u64) {
    let (mut switches, mut ticks) = (std::collections::HashMap::new(), 0);
    for p in pids {
        for t in std::fs::read_dir(format!("/proc/{p}/task")).into_iter().flatten().flatten() {
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            let n = status
                .lines()
                .filter(|l| l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
            switches.insert((*p, t.file_name().to_string_lossy().into_owned()), n);
        }
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let f: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
            ticks += f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    (switches, ticks)
}

fn idle_secs() -> u64 {
    std::env::var("GATEHOUSE_BENCH_IDLE_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

fn clock_ticks() -> f64 {
    Command::new("getconf").arg("CLK_TCK").output().ok().and_then(|o| String::from_utf8(o.stdout).ok()).and_then(|s| s.trim().parse().ok()).unwrap_or(100.0)
}

/// Wakeups per second and CPU (% of one core) of the settled tree over the idle period.
fn idle_cost(pid: u32) -> (f64, f64) {
    let pids = tree(pid);
    let (s0, t0) = activity(&pids);
    let secs = idle_secs();
    std::thread::sleep(Duration::from_secs(secs));
    let (s1, t1) = activity(&pids);
    // Per thread: one that started meanwhile counts from 0; one that ended is not seen.
    let woke: u64 = s1.iter().map(|(k, n)| n.saturating_sub(*s0.get(k).unwrap_or(&0))).sum();
    (woke as f64 / secs as f64, t1.saturating_sub(t0) as f64 / clock_ticks() / secs as f64 * 100.0)
}

/// PSS (MB) summed over `pids`, and each process's name and share.
fn pss_of(pids: &[u32]) -> (f64, Vec<(String, f64)>) {
    let each: Vec<(String, f64)> = pids
        .iter()
        .filter_map(|p| {
            let rollup = std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).ok()?;
            let kb = rollup.lines().find(|l| l.starts_with("Pss:"))?.split_whitespace().nth(1)?.parse::<f64>().ok()?;
            let name = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default().trim().to_string();
            Some((name, kb / 1024.0))
        })
        .collect();
    (each.iter().map(|(_, mb)| mb).sum(), each)
}

/// What one start measured: settled PSS (MB) with each process's share, the idle cost
/// (wakeups/s, CPU %), and how long the start took to settle (s).
type Measured = (f64, Vec<(String, f64)>, (f64, f64), f64);

/// Starts `cmd`, waits until it has settled — the page's processes exist, the memory sum
/// moved less than 1 MB and the tree used less than 5% of a core, for 3 s in a row (the
/// window drawn, the store opened and the start-up work done) — and returns the settled
/// PSS, then the idle cost from there.
fn settled_pss(mut cmd: Command, what: &str) -> Measured {
    let mut child: Child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    let mut last = (0.0, Vec::new());
    let mut ticks = 0;
    let mut stable = 0;
    let busy = clock_ticks() * 0.05;
    while start.elapsed() < Duration::from_secs(90) {
        std::thread::sleep(Duration::from_secs(1));
        assert!(child.try_wait().unwrap().is_none(), "{what} exited early (is there a display? run under xvfb-run)");
        let pids = tree(child.id());
        let now = pss_of(&pids);
        let (_, t) = activity(&pids);
        if now.1.len() >= 2 && (now.0 - last.0).abs() < 1.0 && ((t.saturating_sub(ticks)) as f64) < busy {
            stable += 1;
            if stable >= 3 {
                break;
            }
        } else {
            stable = 0;
        }
        (last, ticks) = (now, t);
    }
    let settled = start.elapsed().as_secs_f64();
    let idle = idle_cost(child.id());
    let _ = child.kill();
    let _ = child.wait();
    (last.0, last.1, idle, settled)
}

fn burst_size() -> usize {
    std::env::var("GATEHOUSE_BENCH_BURST").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

/// The store's trusted senders and the inbox's public key, to sign a burst with.
struct Senders(Vec<ed25519_dalek::SigningKey>, String);

/// Posts a burst to the app at `port` (its stderr going to `log`) and returns the
/// envelopes accepted per second, how long the burst took, and the redraws counted from
/// the burst's start until the window settled (3 s after it).
fn burst(mut app: Command, port: u16, log: &Path, senders: &Senders) -> (f64, f64, usize) {
    let now = chrono::Utc::now();
    let bodies: Vec<String> = (0..burst_size())
        .map(|i| {
            let mut d = gatehouse_epp::Draft::new(&senders.1, "support", &format!("Burst envelope #{i}: please summarise it."));
            d.ttl = chrono::Duration::days(1);
            d.sign(&senders.0[i % senders.0.len()], now).to_string()
        })
        .collect();
    // The app logs to stdout.
    let out = std::fs::File::create(log).unwrap();
    let mut child = app.stdout(out.try_clone().unwrap()).stderr(out).spawn().unwrap();
    let url = format!("http://127.0.0.1:{port}/epp/v1/submit");
    let t = Instant::now();
    while reqwest::blocking::get(format!("http://127.0.0.1:{port}/health")).is_err() {
        assert!(t.elapsed() < Duration::from_secs(60), "the app's inbox did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The window drawn and settled before the burst.
    std::thread::sleep(Duration::from_secs(8));
    let redraws = || std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| l.contains("\"app_info\"")).count();
    let before = redraws();
    let started = Instant::now();
    let accepted = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for c in 0..16 {
            let (bodies, url, accepted) = (&bodies, &url, &accepted);
            s.spawn(move || {
                let http = reqwest::blocking::Client::new();
                for b in bodies.iter().skip(c).step_by(16) {
                    let r = http.post(url).header("content-type", "application/json").body(b.clone()).send();
                    if r.is_ok_and(|r| r.status().is_success()) {
                        accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let took = started.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(3));
    let n = redraws() - before;
    let _ = child.kill();
    let _ = child.wait();
    (accepted.into_inner() as f64 / took, took, n)
}

fn fill(data: &Path) -> Senders {
    let opened = gatehouse_app::doors::open(data, gatehouse_keys::KeystoreKind::File, true).expect("a data dir");
    let store = opened.store.clone();
    let senders: Vec<_> = (0..10).map(|_| gatehouse_epp::generate_signing_key()).collect();
    for (i, s) in senders.iter().enumerate() {
        store
            .trust_add(&gatehouse_store::TrustEntry {
                door: "epp".into(),
                facts: Default::default(),
                public_key: gatehouse_epp::public_key_hex(s),
                name: format!("Agent {i}"),
                added_at: "2026-11-22T00:00:00Z".into(),
                policy: gatehouse_store::Policy { allowed_scopes: vec!["support".into()], ..Default::default() },
            })
            .unwrap();
    }
    let inbox = std::sync::Arc::new(gatehouse_app::doors::Gate::new(store, &opened.identity.public_key));
    let now = chrono::Utc::now();
    std::thread::scope(|s| {
        for t in 0..32 {
            let (inbox, senders, key) = (inbox.clone(), &senders, &opened.identity.public_key);
            s.spawn(move || {
                for i in (t..envelopes()).step_by(32) {
                    let mut d = gatehouse_epp::Draft::new(key, "support", &format!("Please summarise ticket #{i} and draft a reply to the customer."));
                    d.ttl = chrono::Duration::days(30);
                    inbox.submit(d.sign(&senders[i % 10], now).to_string().as_bytes(), "http", now);
                }
            });
        }
    });
    Senders(senders, opened.identity.public_key.clone())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("desktop_memory: bench");
        return;
    }
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("desktop_memory needs a display: xvfb-run -a -s \"-screen 0 1280x800x24\" dbus-run-session -- cargo bench --bench desktop_memory");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    eprintln!("filling a store with {} envelopes…", envelopes());
    let senders = fill(&data);

    let app = || {
        let mut app = Command::new(env!("CARGO_BIN_EXE_gatehouse-desktop"));
        app.env("GATEHOUSE_DATA_DIR", &data).env("GATEHOUSE_KEYSTORE", "file").env("GATEHOUSE_PORT", "0").env("GATEHOUSE_WATCH_DIR", dir.path().join("drop"));
        app
    };
    // The burst adds envelopes to the store: it comes after the memory figures, which
    // are for the store as filled.
    if std::env::var_os("GATEHOUSE_BENCH_BURST_ONLY").is_none() {
        memory_and_idle(&app);
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut burst_app = app();
    burst_app.env("GATEHOUSE_PORT", port.to_string()).env("RUST_LOG", "info,gatehouse::window=debug");
    let (rate, took, redraws) = burst(burst_app, port, &dir.path().join("burst.log"), &senders);
    println!("burst at the window ({} envelopes, 16 connections):", burst_size());
    println!("  accepted:                         {rate:>7.0} envelopes/s over {took:.2} s");
    println!("  window redraws, burst + 3 s:      {redraws:>7} (at most 4/s while events arrive, then one)");
}

/// Three starts of each window, alternating; the median of each is reported (WebKit's
/// share varies by several MB from one start to the next). Gatehouse turns WebKit's GPU
/// compositing off (it draws with the CPU: see docs/performance.md), so the bare window is
/// measured as Tauri starts it and with compositing off too, to keep both comparisons.
fn memory_and_idle(app: &dyn Fn() -> Command) {
    let bare = || Command::new(env!("CARGO_BIN_EXE_bare-window"));
    let bare_flat = || {
        let mut c = bare();
        c.env("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
        c
    };
    let (mut bares, mut flats, mut fulls) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        bares.push(settled_pss(bare(), "the bare window"));
        flats.push(settled_pss(bare_flat(), "the bare window, compositing off"));
        fulls.push(settled_pss(app(), "Gatehouse"));
    }
    let median_idle = |v: &[Measured]| {
        let mut w: Vec<f64> = v.iter().map(|m| m.2 .0).collect();
        let mut c: Vec<f64> = v.iter().map(|m| m.2 .1).collect();
        w.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        (w[1], c[1])
    };
    let (bare_idle, flat_idle, full_idle) = (median_idle(&bares), median_idle(&flats), median_idle(&fulls));
    let settle = |v: &[Measured]| v.iter().map(|m| format!("{:.0}", m.3)).collect::<Vec<_>>().join(", ");
    let settles = [settle(&bares), settle(&flats), settle(&fulls)];
    let median = |mut v: Vec<Measured>| {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let m = v.swap_remove(1);
        (m.0, m.1)
    };
    let (bare, bare_each) = median(bares);
    let (flat, flat_each) = median(flats);
    let (full, full_each) = median(fulls);
    let show = |each: &[(String, f64)]| each.iter().map(|(n, mb)| format!("{n} {mb:.0}")).collect::<Vec<_>>().join(", ");
    println!("desktop memory (PSS, process and children; median of three starts):");
    println!("  bare Tauri window:                {bare:>7.1} MB ({})", show(&bare_each));
    println!("  bare window, compositing off:     {flat:>7.1} MB ({})", show(&flat_each));
    println!("  Gatehouse, {:>6} envelopes:       {full:>7.1} MB ({})", envelopes(), show(&full_each));
    println!("  over the bare window:             {:>7.1} MB (target: within 40 MB)", full - bare);
    println!("  over the bare window, both flat:  {:>7.1} MB", full - flat);
    println!("idle, nothing arriving, {} s (median of three starts; {} cores):", idle_secs(), std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("  bare Tauri window:                {:>7.1} wakeups/s, {:.2}% CPU", bare_idle.0, bare_idle.1);
    println!("  bare window, compositing off:     {:>7.1} wakeups/s, {:.2}% CPU", flat_idle.0, flat_idle.1);
    println!("  Gatehouse:                        {:>7.1} wakeups/s, {:.2}% CPU", full_idle.0, full_idle.1);
    println!("settled after (s; each start): bare {}; compositing off {}; Gatehouse {}", settles[0], settles[1], settles[2]);
}
