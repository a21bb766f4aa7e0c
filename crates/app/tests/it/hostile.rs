//! What a web page, a hostile sender or a local process can do to a real inbox on a real
//! loopback port (issue 20): each test drives one attack from the outside and checks the
//! inbox neither serves it nor keeps anything for it, and still serves its real senders.

use crate::common;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::common::{eventually, key, pubhex, TestInbox};

/// One raw HTTP/1.1 request, exactly as a browser or a script would write it; returns the
/// status code and body.
fn raw(url: &str, request: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn post(url: &str, host: &str, extra: &str, body: &str) -> (u16, String) {
    let req = format!(
        "POST /epp/v1/submit HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    raw(url, &req)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_pages_and_rebound_names_are_refused_before_any_route() {
    let inbox = TestInbox::start(&pubhex(&key(1)), false).await;
    let stranger = key(9);
    let knock = inbox.signed(&stranger, "chat", "let me in").to_string();
    let host = inbox.url.trim_start_matches("http://").to_string();
    let url = inbox.url.clone();
    let (h, k) = (host.clone(), knock.clone());
    let attempts = tokio::task::spawn_blocking(move || {
        vec![
            // A page's no-CORS form POST: the browser adds the page's Origin.
            ("cross-site POST", post(&url, &h, "Origin: https://evil.example\r\n", &k)),
            ("sandboxed frame", post(&url, &h, "Origin: null\r\n", &k)),
            ("no-cors fetch", post(&url, &h, "Sec-Fetch-Site: cross-site\r\n", &k)),
            // After DNS rebinding the page is same-origin, but its own name is the Host.
            ("rebinding", post(&url, &format!("rebind.evil.example:{}", h.rsplit(':').next().unwrap()), "", &k)),
            (
                "rebinding to the guardian",
                raw(&url, "POST /asop/v1 HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"),
            ),
            ("rebinding a read", raw(&url, "GET /epp/v1/inbox HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")),
            ("no Host", raw(&url, "GET /health HTTP/1.0\r\n\r\n")),
        ]
    })
    .await
    .unwrap();
    for (what, (status, body)) in attempts {
        assert_eq!(status, 421, "{what}: {body}");
        assert!(body.contains("FORBIDDEN_HOST"), "{what}: {body}");
        assert!(!body.contains(&inbox.public_key), "{what} must not read the inbox's key: {body}");
    }
    // Nothing was kept: no receipt, no knock waiting for the user.
    assert_eq!(inbox.store.receipts(10, 0).unwrap().len(), 0);
    assert!(inbox.store.pending_list().unwrap().is_empty());
    // A sender (a program: no Origin, the inbox's own address) still gets through.
    let (status, _, receipt) = inbox.post(knock).await;
    assert_eq!((status, receipt["error"]["code"].as_str()), (401, Some("UNTRUSTED_SENDER")), "{receipt}");
    let (status, _) =
        tokio::task::spawn_blocking(move || post(&inbox.url, &format!("localhost:{}", host.rsplit(':').next().unwrap()), "", "{}")).await.unwrap();
    assert_eq!(status, 400, "localhost is this inbox's own name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_of_many_distinct_keys_is_read_in_linear_time_and_health_stays_up() {
    let inbox = TestInbox::start(&pubhex(&key(1)), false).await;
    // ~4 MB of distinct keys: quadratic duplicate checking held a worker for minutes.
    let mut body = String::from("{");
    for i in 0..300_000 {
        body.push_str(&format!("\"k{i}\":0,"));
    }
    body.push_str("\"end\":0}");
    let url = inbox.url.clone();
    let started = Instant::now();
    let big = tokio::spawn({
        let c = reqwest::Client::new();
        let u = inbox.submit_url();
        async move { c.post(u).body(body).send().await.unwrap().json::<serde_json::Value>().await.unwrap() }
    });
    // Meanwhile the inbox answers its health check promptly.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let h = tokio::time::timeout(Duration::from_secs(5), reqwest::get(format!("{url}/health"))).await;
    assert!(h.is_ok_and(|r| r.is_ok()), "health did not answer while the body was read");
    let receipt = big.await.unwrap();
    assert_eq!(receipt["error"]["code"], "INVALID_FORMAT", "{receipt}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_in_the_watched_folder_get_receipts_and_are_moved_aside() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), true).await;
    inbox.trust(&pubhex(&alice), "Alice", common::policy(&["support"]));
    let drop = inbox.watch.clone().unwrap();
    let outside = inbox.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // A valid envelope elsewhere: a link to it must not make it arrive.
    let secret = outside.join("somebody-elses.json");
    std::fs::write(&secret, inbox.signed(&alice, "support", "read through a link").to_string()).unwrap();
    mkfifo(&outside.join("moved.json"));
    std::fs::rename(outside.join("moved.json"), drop.join("moved.json")).unwrap();
    mkfifo(&drop.join("made-here.json"));
    std::os::unix::fs::symlink("/dev/zero", drop.join("zero.json")).unwrap();
    std::os::unix::fs::symlink(&secret, drop.join("link.json")).unwrap();
    std::os::unix::fs::symlink(outside.join("nowhere"), drop.join("dangling.json")).unwrap();
    std::fs::write(drop.join("real.json"), inbox.signed(&alice, "support", "a real drop").to_string()).unwrap();

    let rejected = drop.join("rejected");
    let names = ["moved.json", "made-here.json", "zero.json", "link.json", "dangling.json"];
    eventually("every special file filed with a receipt", || names.iter().all(|n| rejected.join(format!("{n}.receipt.json")).exists())).await;
    eventually("the real drop accepted", || drop.join("accepted/real.json.receipt.json").exists()).await;
    for n in names {
        let receipt: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(rejected.join(format!("{n}.receipt.json"))).unwrap()).unwrap();
        assert_eq!(receipt["error"]["code"], "INVALID_FORMAT", "{n}: {receipt}");
        let why = receipt["error"]["message"].as_str().unwrap();
        assert!(why.contains("not a regular file"), "{n}: {why}");
        // Moved aside as it was (the link itself, not what it points to).
        assert!(std::fs::symlink_metadata(rejected.join(n)).is_ok(), "{n} kept in rejected/");
    }
    assert!(std::fs::read_to_string(&secret).is_ok(), "the linked file is untouched");
    let accepted: Vec<_> = inbox.store.envelopes(10, 0).unwrap().into_iter().map(|e| e.prompt).collect();
    assert_eq!(accepted, vec!["a real drop".to_string()], "nothing arrived through a link");
    assert!(std::fs::read_dir(drop.join(".processing")).unwrap().next().is_none(), "nothing stranded");
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for our purposes: it runs nothing and holds no pipe.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_and_everything_it_started_die_at_its_timeout() {
    use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec};
    use gatehouse_store::ExecStatus;
    let alice = key(1);
    let pids = tempfile::tempdir().unwrap();
    let script = |name: &str, tail: &str| format!("sleep 25 & echo $! > {}/{name}; {tail}", pids.path().display());
    let mut scopes = std::collections::BTreeMap::new();
    // The background sleep holds stdout open; the foreground one outlives the timeout.
    scopes.insert("slow".to_string(), ExecutorSpec::Command { program: "sh".into(), args: vec!["-c".into(), script("slow", "sleep 25")], timeout_secs: 1 });
    // Finishes at once but leaves a child behind holding its output.
    scopes
        .insert("leaves".to_string(), ExecutorSpec::Command { program: "sh".into(), args: vec!["-c".into(), script("leaves", "echo done")], timeout_secs: 30 });
    scopes.insert("quick".to_string(), ExecutorSpec::Command { program: "echo".into(), args: vec!["next".into()], timeout_secs: 5 });
    let inbox = TestInbox::start_with(&pubhex(&key(2)), false, ExecutorConfig { default: ExecutorSpec::Noop, scopes }).await;
    inbox.trust(&pubhex(&alice), "Alice", common::policy(&["*"]));
    let started = Instant::now();
    for scope in ["slow", "leaves", "quick"] {
        assert_eq!(inbox.post_json(&inbox.signed(&alice, scope, "x")).await.0, 200, "{scope}");
    }
    let store = inbox.store.clone();
    common::eventually("all three recorded", || {
        store.envelopes(10, 0).unwrap().iter().all(|e| matches!(e.exec_status, ExecStatus::Succeeded | ExecStatus::Failed))
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(12), "the executors took {:?}: a leftover child held them", started.elapsed());
    let by_scope: std::collections::BTreeMap<String, _> = store.envelopes(10, 0).unwrap().into_iter().map(|e| (e.scope.clone(), e)).collect();
    assert!(by_scope["slow"].exec_result.as_ref().unwrap()["error"].as_str().unwrap().contains("timed out"));
    assert_eq!(by_scope["leaves"].exec_status, ExecStatus::Succeeded);
    assert_eq!(by_scope["leaves"].exec_result.as_ref().unwrap()["stdout"], "done\n");
    assert_eq!(by_scope["quick"].exec_status, ExecStatus::Succeeded);
    for name in ["slow", "leaves"] {
        let pid: i32 = std::fs::read_to_string(pids.path().join(name)).unwrap().trim().parse().unwrap();
        common::eventually("the background child gone", || !alive(pid)).await;
    }
}

#[tokio::test]
async fn envelopes_from_a_clock_far_ahead_or_valid_for_years_are_refused_at_the_expiry_step() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", common::policy(&["support"]));
    let now = chrono::Utc::now();
    let ahead = inbox.draft("support", "from tomorrow").sign(&alice, now + chrono::Duration::days(1));
    let mut d = inbox.draft("support", "forever");
    d.ttl = chrono::Duration::days(365 * 70);
    let forever = d.sign(&alice, now);
    for (env, why) in [(&ahead, "ahead of this inbox's clock"), (&forever, "valid for at most")] {
        let (status, _, r) = inbox.post_json(env).await;
        assert_eq!((status, r["error"]["code"].as_str()), (400, Some("EXPIRED")), "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(why), "{r}");
    }
    // A little skew is normal between machines; a day's validity is ordinary.
    let slightly = inbox.draft("support", "a minute ahead").sign(&alice, now + chrono::Duration::seconds(60));
    assert_eq!(inbox.post_json(&slightly).await.0, 200);
    assert_eq!(inbox.store.count_envelopes().unwrap(), 1);
    assert_eq!(inbox.store.count_nonces().unwrap(), 1, "only the accepted envelope's nonce is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_uploads_of_unknown_length_do_not_make_a_small_submission_wait() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", common::policy(&["support"]));
    let host = inbox.url.trim_start_matches("http://").to_string();
    // 40 chunked uploads that send one 64 KiB chunk and then stall (each could grow to
    // 10 MiB: reserving that up front filled the whole budget after 26 of them).
    let mut slow = Vec::new();
    for _ in 0..40 {
        let mut s = std::net::TcpStream::connect(&host).unwrap();
        let head = format!("POST /epp/v1/submit HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(format!("{:x}\r\n", 64 * 1024).as_bytes()).unwrap();
        s.write_all(&vec![b' '; 64 * 1024]).unwrap();
        s.write_all(b"\r\n").unwrap();
        slow.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let (status, _, r) = inbox.post_json(&inbox.signed(&alice, "support", "small and on time")).await;
    assert_eq!(status, 200, "{r}");
    assert!(started.elapsed() < Duration::from_secs(3), "a small submission waited {:?} behind slow uploads", started.elapsed());
    drop(slow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_garbage_and_fresh_keys_is_answered_but_only_a_bounded_part_is_kept() {
    use gatehouse_app::doors::gate::flood::{KNOCKS_PER_MINUTE, REFUSALS_PER_MINUTE};
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let me = pubhex(&key(2));
    let (inbox, rx) = gatehouse_app::doors::service::build(store.clone(), &me);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let submit = format!("http://{}/epp/v1/submit", listener.local_addr().unwrap());
    let opts = gatehouse_app::doors::ServeOptions { listener: Some(listener), ..Default::default() };
    tokio::spawn(gatehouse_app::doors::service::run_with(inbox.clone(), rx, opts, std::future::pending(), |_| {}));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let http = reqwest::Client::new();
    let (g, k) = (REFUSALS_PER_MINUTE as usize + 80, KNOCKS_PER_MINUTE as usize + 20);
    let garbage = "{".repeat(60 * 1024);
    let mut answered = 0;
    for _ in 0..g {
        let r = http.post(&submit).body(garbage.clone()).send().await.unwrap();
        let (status, body) = (r.status().as_u16(), r.json::<serde_json::Value>().await.unwrap());
        answered += usize::from(status == 400 && body["error"]["code"] == "INVALID_FORMAT");
    }
    for i in 0..k {
        // Every knock from a fresh key, each carrying a large prompt.
        let mut seed = [7u8; 32];
        seed[0] = i as u8;
        let stranger = ed25519_dalek::SigningKey::from_bytes(&seed);
        let env = gatehouse_epp::Draft::new(&me, "support", &"x".repeat(100_000)).sign(&stranger, chrono::Utc::now());
        answered += usize::from(http.post(&submit).json(&env).send().await.unwrap().status() == 401);
    }
    assert_eq!(answered, g + k, "every sender still gets its receipt");
    // The test takes seconds; straddling a minute boundary may use two budgets, never more.
    let kept = store.receipts(10_000, 0).unwrap().len();
    let budget = (REFUSALS_PER_MINUTE + KNOCKS_PER_MINUTE) as usize;
    assert!(kept <= 2 * budget && kept < g + k, "{kept} receipts kept of {}", g + k);
    assert!(store.pending_list().unwrap().len() <= 2 * KNOCKS_PER_MINUTE as usize);
    // The user is told how much was only counted: with what was kept, every request.
    let unkept = inbox.unkept();
    assert_eq!(kept + (unkept.refusals + unkept.knocks) as usize, g + k, "{unkept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_executor_does_not_hold_up_the_envelopes_behind_it() {
    use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec};
    use gatehouse_store::ExecStatus;
    let alice = key(1);
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert("slow".to_string(), ExecutorSpec::Command { program: "sleep".into(), args: vec!["6".into()], timeout_secs: 20 });
    scopes.insert("quick".to_string(), ExecutorSpec::Command { program: "echo".into(), args: vec!["done".into()], timeout_secs: 5 });
    let inbox = TestInbox::start_with(&pubhex(&key(2)), false, ExecutorConfig { default: ExecutorSpec::Noop, scopes }).await;
    inbox.trust(&pubhex(&alice), "Alice", common::policy(&["*"]));
    assert_eq!(inbox.post_json(&inbox.signed(&alice, "slow", "take your time")).await.0, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    assert_eq!(inbox.post_json(&inbox.signed(&alice, "quick", "now please")).await.0, 200);
    assert_eq!(inbox.post_json(&inbox.signed(&alice, "other", "noop")).await.0, 200);
    let store = inbox.store.clone();
    let status = |scope: &str| store.envelopes(10, 0).unwrap().into_iter().find(|e| e.scope == scope).unwrap().exec_status;
    eventually("the quick ones done", || status("quick") == ExecStatus::Succeeded && status("other") == ExecStatus::Succeeded).await;
    assert!(started.elapsed() < Duration::from_secs(4), "they waited {:?} behind the slow one", started.elapsed());
    assert_eq!(status("slow"), ExecStatus::Running, "the slow one is still at work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_hold_every_connection_slot() {
    use gatehouse_net::conn::MAX_PER_CLIENT;
    use std::net::{Ipv4Addr, SocketAddr};
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", common::policy(&["support"]));
    let addr: SocketAddr = inbox.url.trim_start_matches("http://").parse().unwrap();
    // One client opens its share of connections and sends nothing on them.
    let held: Vec<_> = (0..MAX_PER_CLIENT).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Its next connection is closed at once (a held one would wait for its headers 10 s).
    let mut extra = std::net::TcpStream::connect(addr).unwrap();
    extra.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 16];
    let closed = matches!(extra.read(&mut buf), Ok(0) | Err(_)) && started.elapsed() < Duration::from_secs(4);
    assert!(closed, "a connection past the per-client share was kept open for {:?}", started.elapsed());
    // Another address (all of 127/8 is this machine) still submits.
    let other = tokio::net::TcpSocket::new_v4().unwrap();
    other.bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, 2), 0))).unwrap();
    let mut other = other.connect(addr).await.unwrap();
    let body = serde_json::to_string(&inbox.signed(&alice, "support", "from another client")).unwrap();
    let req = format!(
        "POST /epp/v1/submit HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    other.write_all(req.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), other.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Slots come back when the client lets go.
    drop(held);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, r) = inbox.post_json(&inbox.signed(&alice, "support", "after the flood")).await;
    assert_eq!(status, 200, "{r}");
}

/// A TLS connection to the UAMP listener that speaks HTTP/2 and then nothing more.
async fn idle_h2(addr: std::net::SocketAddr, cert: &gatehouse_app::doors::uamp::tls::Certificate) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use tokio::io::AsyncWriteExt;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(cert.der.clone())).unwrap();
    let mut cfg = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg)).connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    // The connection preface and an empty SETTINGS frame: a valid, idle HTTP/2 client.
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    tls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_http2_connections_give_their_slots_back() {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let key = key(3);
    let tls = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tls.local_addr().unwrap();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let limits = gatehouse_net::conn::Limits { max: 4, per_client: 8, idle: Duration::from_secs(1) };
    let uamp =
        gatehouse_app::doors::UampOptions { listener: tls, key: key.clone(), data_dir: dir.path().to_path_buf(), certificate: None, started: Some(started_tx) };
    let opts = gatehouse_app::doors::ServeOptions { uamp: Some(uamp), limits, ..Default::default() };
    tokio::spawn(gatehouse_app::doors::run(store.clone(), pubhex(&key), opts, std::future::pending(), |_| {}));
    let _ = started_rx.await.unwrap();
    // The certificate the listener serves (created at start, read back here).
    let cert = gatehouse_app::doors::uamp::tls::load_or_create(dir.path(), &key).unwrap();
    // Every slot taken by a client that opens HTTP/2 and then sits there.
    let mut idle = Vec::new();
    for _ in 0..limits.max {
        idle.push(idle_h2(addr, &cert).await);
    }
    // Each is closed soon after its idle limit (not only when keep-alive pings go unanswered).
    for mut c in idle {
        let mut sink = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut sink)).await;
        assert!(read.is_ok(), "an idle HTTP/2 connection was still open 5 s after its 1 s idle limit");
        assert!(sink.windows(9).any(|f| f[3] == 0x7 && f[..3] == [0, 0, 8]), "closed with a GOAWAY frame");
    }
    // And a real client is served.
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.pem.as_bytes()).unwrap())
        .tls_built_in_root_certs(false)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let r = client.get(format!("https://{addr}/.well-known/agent-manifest.json")).send().await.unwrap();
    assert_eq!(r.status(), 200);
}
