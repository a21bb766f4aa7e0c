//! Sustained load plus slow-loris clients against a real `gatehouse serve` process: the
//! inbox keeps answering health checks, its memory stays bounded, and the header and
//! body timeouts close connections that trickle or idle.
//!
//! Runs for GATEHOUSE_LOAD_SECS seconds (default 60, the acceptance figure).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gatehouse_app::doors::epp::http::{BODY_TIMEOUT, HEADER_TIMEOUT};

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Opens a connection and trickles `head` one byte per second; see [`trickle_on`].
fn trickle(addr: &str, head: &[u8], stop: &AtomicBool) -> (Duration, String) {
    trickle_on(TcpStream::connect(addr).unwrap(), head, stop)
}

#[test]
fn sixty_seconds_of_load_with_slow_loris_clients() {
    let secs: u64 = std::env::var("GATEHOUSE_LOAD_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let gh = |args: &[&str]| {
        let out = Command::new(BIN).arg("--data-dir").arg(dir.path()).args(args).env("GATEHOUSE_KEYSTORE", "file").output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let inbox_key = gh(&["init"]);
    let senders: Vec<_> = (0..8).map(|_| gatehouse_epp::generate_signing_key()).collect();
    for (i, s) in senders.iter().enumerate() {
        gh(&["trust", "add", &gatehouse_epp::public_key_hex(s), "--name", &format!("load {i}"), "--scopes", "*"]);
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let server = Server(
        Command::new(BIN)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["serve", "--listen", &addr])
            .env("GATEHOUSE_KEYSTORE", "file")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = server.0.id();
    let t = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(t.elapsed() < Duration::from_secs(20), "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }

    let stop = AtomicBool::new(false);
    let accepted = AtomicUsize::new(0);
    let other = Mutex::new(Vec::<String>::new());
    let health = Mutex::new(Vec::<Result<Duration, String>>::new());
    let rss = Mutex::new(Vec::<f64>::new());
    let idle_closed = Mutex::new(Vec::<Duration>::new());
    let header_loris = Mutex::new(Vec::<(Duration, String)>::new());
    let body_loris = Mutex::new(Vec::<(Duration, String)>::new());
    let url = format!("http://{addr}/epp/v1/submit");
    std::thread::scope(|s| {
        // 64 clients posting signed envelopes as fast as they are answered.
        for c in 0..64 {
            let (stop, accepted, other, url, senders, inbox_key) = (&stop, &accepted, &other, &url, &senders, &inbox_key);
            s.spawn(move || {
                let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let body = gatehouse_epp::Draft::new(inbox_key, "load", &format!("client {c} envelope {n}"))
                        .sign(&senders[c % senders.len()], chrono::Utc::now())
                        .to_string();
                    n += 1;
                    match client.post(url).body(body).send() {
                        Ok(r) if r.status() == 200 => {
                            accepted.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(r) => other.lock().unwrap().push(format!("status {}", r.status())),
                        Err(e) => other.lock().unwrap().push(e.to_string()),
                    }
                }
            });
        }
        // Slow loris, headers: a request line trickled a byte a second.
        for _ in 0..16 {
            let (stop, header_loris, addr) = (&stop, &header_loris, &addr);
            s.spawn(move || {
                let head = format!("POST /epp/v1/submit HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n");
                let r = trickle(addr, head.as_bytes(), stop);
                header_loris.lock().unwrap().push(r);
            });
        }
        // Slow loris, body: complete headers, then the body a byte a second.
        for _ in 0..16 {
            let (stop, body_loris, addr) = (&stop, &body_loris, &addr);
            s.spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(
                    format!("POST /epp/v1/submit HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n").as_bytes(),
                )
                .unwrap();
                let body = vec![b' '; 4000];
                let r = trickle_on(s, &body, stop);
                body_loris.lock().unwrap().push(r);
            });
        }
        // Idle connections that never send a byte.
        for _ in 0..16 {
            let (stop, idle_closed, addr) = (&stop, &idle_closed, &addr);
            s.spawn(move || {
                let (took, _) = trickle(addr, b"", stop);
                idle_closed.lock().unwrap().push(took);
            });
        }
        // Health checks and memory, four times a second.
        let (stop_ref, health, rss, addr) = (&stop, &health, &rss, &addr);
        s.spawn(move || {
            let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).pool_max_idle_per_host(0).build().unwrap();
            while !stop_ref.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = match client.get(format!("http://{addr}/health")).send() {
                    Ok(r) if r.status() == 200 => Ok(t.elapsed()),
                    Ok(r) => Err(format!("status {}", r.status())),
                    Err(e) => Err(e.to_string()),
                };
                health.lock().unwrap().push(r);
                rss.lock().unwrap().push(rss_mb(pid));
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
    });

    let accepted = accepted.into_inner();
    let health = health.into_inner().unwrap();
    let rss = rss.into_inner().unwrap();
    let peak = rss.iter().cloned().fold(0.0, f64::max);
    let slowest = health.iter().filter_map(|h| h.as_ref().ok()).max().copied().unwrap_or_default();
    println!(
        "{secs} s: {accepted} accepted ({:.0}/s), {} health checks (slowest {slowest:?}), peak RSS {peak:.0} MB",
        accepted as f64 / secs as f64,
        health.len()
    );
    assert!(accepted > 0);
    assert!(other.into_inner().unwrap().is_empty(), "every loaded request got a 200 receipt");
    let failed: Vec<_> = health.iter().filter_map(|h| h.as_ref().err()).collect();
    assert!(failed.is_empty(), "health checks failed under load: {failed:?}");
    assert!(health.len() as u64 >= secs * 2, "health checks were answered throughout ({} in {secs} s)", health.len());
    assert!(peak < 300.0, "the inbox's memory stays bounded (peak RSS {peak:.0} MB)");

    if secs >= HEADER_TIMEOUT.as_secs() + 5 {
        let limit = HEADER_TIMEOUT + Duration::from_secs(3);
        for (took, _) in header_loris.into_inner().unwrap() {
            assert!(took <= limit, "a trickled header held its connection for {took:?}");
        }
        for took in idle_closed.into_inner().unwrap() {
            assert!(took <= limit, "an idle connection stayed open for {took:?}");
        }
    }
    if secs >= BODY_TIMEOUT.as_secs() + 5 {
        for (took, answer) in body_loris.into_inner().unwrap() {
            assert!(took <= BODY_TIMEOUT + Duration::from_secs(3), "a trickled body held its request for {took:?}");
            assert!(answer.starts_with("HTTP/1.1 400"), "a trickled body gets a receipt: {answer}");
            assert!(answer.contains("did not arrive within"), "{answer}");
        }
    }
}

/// Sends `bytes` one a second on `s` and reads whatever the server answers, until the
/// server closes the connection (or the test ends); returns how long that took and the
/// answer.
fn trickle_on(mut s: TcpStream, body: &[u8], stop: &AtomicBool) -> (Duration, String) {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let mut sent = 0;
    let mut last_send = Instant::now() - Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) {
        if sent < body.len() && last_send.elapsed() >= Duration::from_secs(1) {
            if s.write_all(&body[sent..sent + 1]).is_err() {
                break;
            }
            sent += 1;
            last_send = Instant::now();
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    (start.elapsed(), String::from_utf8_lossy(&answer).into_owned())
}
