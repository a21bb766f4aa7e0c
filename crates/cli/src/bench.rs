//! `gatehouse bench`: a load generator over loopback, with the machine's physical limits
//! measured in the same run so every figure has something to be read against.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ed25519_dalek::{Signer, SigningKey};
use gatehouse_store::{Policy, Store, TrustEntry};

pub struct BenchArgs {
    pub envelopes: usize,
    pub senders: usize,
    pub concurrency: usize,
    pub folder: bool,
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Single-core Ed25519 verifications per second on this machine.
fn ed25519_verify_rate() -> f64 {
    let key = SigningKey::from_bytes(&[7; 32]);
    let msg = vec![b'x'; 400];
    let sig = key.sign(&msg);
    let vk = key.verifying_key();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_millis(700) {
        for _ in 0..100 {
            vk.verify_strict(&msg, &sig).expect("valid");
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    println!("measuring this machine's limits…");
    let verify_rate = ed25519_verify_rate();
    let insert_rate = sqlite_durable_insert_rate(dir.path());
    println!("  Ed25519 verify, one core:        {verify_rate:>10.0} /s");
    println!("  SQLite durable insert (FULL):    {insert_rate:>10.0} /s");

    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).map_err(|e| e.to_string())?);
    let inbox_key = gatehouse_epp::generate_signing_key();
    let inbox_pub = gatehouse_epp::public_key_hex(&inbox_key);
    let senders: Vec<SigningKey> = (0..args.senders.max(1)).map(|_| gatehouse_epp::generate_signing_key()).collect();
    for (i, s) in senders.iter().enumerate() {
        let entry = TrustEntry {
            public_key: gatehouse_epp::public_key_hex(s),
            name: format!("bench sender {i}"),
            added_at: gatehouse_epp::utc_string(chrono::Utc::now()),
            policy: Policy { allowed_scopes: vec!["*".into()], ..Policy::default() },
        };
        store.trust_add(&entry).map_err(|e| e.to_string())?;
    }
    println!("signing {} envelopes from {} senders…", args.envelopes, senders.len());
    let now = chrono::Utc::now();
    let bodies: Vec<String> = (0..args.envelopes)
        .map(|i| {
            let mut d = gatehouse_epp::Draft::new(&inbox_pub, "bench", &format!("benchmark prompt number {i}: please summarise the attached ticket"));
            d.context = Some(serde_json::json!({"ticket": i, "priority": "normal"}));
            d.sign(&senders[i % senders.len()], now).to_string()
        })
        .collect();

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let watch = dir.path().join("drop");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let opts = gatehouse_inbox::ServeOptions { listener: Some(listener), watch: args.folder.then(|| watch.clone()) };
        let server = tokio::spawn(gatehouse_inbox::run(store.clone(), inbox_pub.clone(), opts, async {
            let _ = stop_rx.await;
        }, |_| {}));

        if args.folder {
            while !watch.join("rejected").exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            println!("dropping {} files into the watched folder…", bodies.len());
            let start = Instant::now();
            for (i, b) in bodies.iter().enumerate() {
                // Written elsewhere and renamed in: each file appears complete.
                let tmp = dir.path().join(format!("tmp-{i}.json"));
                std::fs::write(&tmp, b).map_err(|e| e.to_string())?;
                std::fs::rename(&tmp, watch.join(format!("env-{i:06}.json"))).map_err(|e| e.to_string())?;
            }
            let total = bodies.len();
            loop {
                let done = std::fs::read_dir(watch.join("accepted")).map(|d| d.count()).unwrap_or(0) / 2
                    + std::fs::read_dir(watch.join("rejected")).map(|d| d.count()).unwrap_or(0) / 2;
                if done >= total {
                    break;
                }
                if start.elapsed() > Duration::from_secs(600) {
                    return Err(format!("only {done} of {total} files receipted after 10 minutes"));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let secs = start.elapsed().as_secs_f64();
            println!("folder: {total} files receipted in {secs:.2} s = {:.0} files/s; peak RSS {:.0} MB", total as f64 / secs, peak_rss_mb());
        } else {
            println!("posting over loopback with {} connections…", args.concurrency);
            let url = format!("http://{addr}/epp/v1/submit");
            let bodies = Arc::new(bodies);
            let next = Arc::new(AtomicUsize::new(0));
            let start = Instant::now();
            let mut workers = Vec::new();
            for _ in 0..args.concurrency.max(1) {
                let (bodies, next, url) = (bodies.clone(), next.clone(), url.clone());
                workers.push(tokio::spawn(async move {
                    let client = reqwest::Client::new();
                    let mut lat = Vec::new();
                    let mut accepted = 0usize;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= bodies.len() {
                            break;
                        }
                        let t = Instant::now();
                        let r = client.post(&url).header("content-type", "application/json").body(bodies[i].clone()).send().await;
                        if let Ok(r) = r {
                            accepted += (r.status() == 200) as usize;
                            let _ = r.bytes().await;
                        }
                        lat.push(t.elapsed());
                    }
                    (lat, accepted)
                }));
            }
            let mut lat = Vec::new();
            let mut accepted = 0;
            for w in workers {
                let (l, a) = w.await.map_err(|e| e.to_string())?;
                lat.extend(l);
                accepted += a;
            }
            let secs = start.elapsed().as_secs_f64();
            lat.sort();
            println!(
                "http: {accepted} of {} accepted in {secs:.2} s = {:.0} accepted/s; p50 {:.2} ms, p99 {:.2} ms; peak RSS {:.0} MB (server and client in one process)",
                bodies.len(),
                accepted as f64 / secs,
                percentile(&lat, 0.50).as_secs_f64() * 1000.0,
                percentile(&lat, 0.99).as_secs_f64() * 1000.0,
                peak_rss_mb(),
            );
        }
        let _ = stop_tx.send(());
        server.await.map_err(|e| e.to_string())??;
        Ok::<(), String>(())
    })
}
