//! The desktop app's memory with a 100,000-envelope store, next to a bare Tauri window
//! measured in the same run: PSS summed over the process and every process it started
//! (WebKit's web and network processes), from /proc/PID/smaps_rollup.
//!
//!   xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo bench --bench desktop_memory
//!
//! (A number, not a test: it goes in the README's table.)

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// 100,000 unless GATEHOUSE_BENCH_ENVELOPES says otherwise (0 shows what the store costs).
fn envelopes() -> usize {
    std::env::var("GATEHOUSE_BENCH_ENVELOPES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

/// PSS (MB) of `pid` and all its descendants, and each process's name and share.
fn pss_tree(pid: u32) -> (f64, Vec<(String, f64)>) {
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
    let each: Vec<(String, f64)> = tree
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

/// Starts `cmd`, waits until its memory has settled (the window drawn, the page
/// loaded), and returns the settled PSS and process count.
fn settled_pss(mut cmd: Command, what: &str) -> (f64, Vec<(String, f64)>) {
    let mut child: Child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    let mut last = (0.0, Vec::new());
    let mut stable = 0;
    while start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_secs(1));
        assert!(child.try_wait().unwrap().is_none(), "{what} exited early (is there a display? run under xvfb-run)");
        let now = pss_tree(child.id());
        // Settled: the page's processes exist and the sum moved less than 1 MB in 3 s.
        if now.1.len() >= 2 && (now.0 - last.0).abs() < 1.0 {
            stable += 1;
            if stable >= 3 {
                break;
            }
        } else {
            stable = 0;
        }
        last = now;
    }
    let _ = child.kill();
    let _ = child.wait();
    last
}

fn fill(data: &Path) {
    let opened = gatehouse_inbox::open(data, gatehouse_keys::KeystoreKind::File, true).expect("a data dir");
    let store = opened.store.clone();
    let senders: Vec<_> = (0..10).map(|_| gatehouse_epp::generate_signing_key()).collect();
    for (i, s) in senders.iter().enumerate() {
        store
            .trust_add(&gatehouse_store::TrustEntry {
                public_key: gatehouse_epp::public_key_hex(s),
                name: format!("Agent {i}"),
                added_at: "2026-11-22T00:00:00Z".into(),
                policy: gatehouse_store::Policy { allowed_scopes: vec!["support".into()], ..Default::default() },
            })
            .unwrap();
    }
    let inbox = std::sync::Arc::new(gatehouse_inbox::Inbox::new(store, &opened.identity.public_key));
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
    fill(&data);

    let app = || {
        let mut app = Command::new(env!("CARGO_BIN_EXE_gatehouse-desktop"));
        app.env("GATEHOUSE_DATA_DIR", &data).env("GATEHOUSE_KEYSTORE", "file").env("GATEHOUSE_PORT", "0").env("GATEHOUSE_WATCH_DIR", dir.path().join("drop"));
        app
    };
    // Three of each, alternating; the median of each is reported (WebKit's share
    // varies by several MB from one start to the next).
    let mut bares = Vec::new();
    let mut fulls = Vec::new();
    for _ in 0..3 {
        bares.push(settled_pss(Command::new(env!("CARGO_BIN_EXE_bare-window")), "the bare window"));
        fulls.push(settled_pss(app(), "Gatehouse"));
    }
    let median = |mut v: Vec<(f64, Vec<(String, f64)>)>| {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v.swap_remove(1)
    };
    let (bare, bare_each) = median(bares);
    let (full, full_each) = median(fulls);
    let show = |each: &[(String, f64)]| each.iter().map(|(n, mb)| format!("{n} {mb:.0}")).collect::<Vec<_>>().join(", ");
    println!("desktop memory (PSS, process and children; median of three starts):");
    println!("  bare Tauri window:                {bare:>7.1} MB ({})", show(&bare_each));
    println!("  Gatehouse, {:>6} envelopes:       {full:>7.1} MB ({})", envelopes(), show(&full_each));
    println!("  difference:                       {:>7.1} MB (target: within 60 MB)", full - bare);
}
