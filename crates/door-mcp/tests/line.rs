//! A wrap's kept line to the gate, on the inbox's real listener: signed into once by
//! answering a fresh challenge with the server's key, then calls of that server only,
//! answered as they are decided; a hello made for another challenge, a call of another
//! server, a request naming another host and calls past the bound are refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ed25519_dalek::SigningKey;
use futures_util::future::BoxFuture;
use gatehouse_door_mcp::at_gate::{Admission, AskedOfUser, ByRule, Judge, Judged, McpDoor, SCOPE};
use gatehouse_door_mcp::line::{Hello, Said, CHALLENGE_HEADER, LINE_PATH, MAX_IN_FLIGHT, MAX_LINES, UPGRADE};
use gatehouse_door_mcp::line_client::{Asking, LineClient};
use gatehouse_door_mcp::signed::{self, Answer, Answers, Asked, Decided};
use gatehouse_gate::Gate;
use gatehouse_mcp::tools::Pin;
use gatehouse_store::{Durable, Policy, Store, TrustEntry};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

/// Allows `fast` by rule; asks the user of `slow`, who answers once told to.
#[derive(Default)]
struct Judging {
    senders: Mutex<Vec<String>>,
    asked: Arc<AtomicUsize>,
    answer_slow: Arc<Notify>,
}

impl Judge for Judging {
    fn judge(&self, call: Judged) -> BoxFuture<'static, Decided> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = self.answer_slow.clone();
        Box::pin(async move {
            if let Admission::Refused { message, .. } | Admission::Knocked { message } = call.admission {
                return Decided::unkept(Answer::Deny { message });
            }
            answer.notified().await;
            Decided { answer: Answer::Deny { message: "you denied this call".into() }, step: Some("slow".into()) }
        })
    }
    fn by_rule(&self, call: &Judged) -> ByRule {
        self.senders.lock().unwrap().push(call.sender.clone());
        match call.asked.tool == "fast" {
            true => ByRule::Decided(Decided { answer: Answer::Allow, step: Some(format!("step-{}", call.asked.arguments["n"])) }, Durable::now()),
            false => ByRule::Undecided,
        }
    }
    fn server_asks(&self, _request: AskedOfUser) -> BoxFuture<'static, Answer> {
        Box::pin(std::future::ready(Answer::Deny { message: "no".into() }))
    }
    fn answered(&self, _sender: String, _told: Answers) -> BoxFuture<'static, usize> {
        Box::pin(std::future::ready(0))
    }
}

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

struct Running {
    gate: String,
    addr: std::net::SocketAddr,
    judge: Arc<Judging>,
    _gate: Arc<Gate>,
}

/// The inbox's listener on a free port, serving the door to the server "files" (key 1) the
/// user let in with its tools `fast` and `slow`.
async fn running() -> Running {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let gate = Arc::new(Gate::new(store.clone(), &"ab".repeat(32)));
    let sender = signed::sender("files", &hex::encode(key(1).verifying_key().as_bytes()));
    let at = gatehouse_gate::clock::utc_string(chrono::Utc::now());
    let policy = Policy { allowed_scopes: vec![SCOPE.into()], ..Policy::default() };
    let entry = TrustEntry { door: "mcp".into(), facts: Default::default(), public_key: sender.clone(), name: "Files".into(), added_at: at.clone(), policy };
    store.trust_add(&entry).unwrap();
    for tool in ["fast", "slow"] {
        let pin = Pin { name: tool.into(), title: None, description: format!("The {tool} tool"), input_schema: "{}".into(), digest: String::new() }.checked();
        store.mcp_offer(&sender, &[(pin.name.clone(), serde_json::to_string(&pin).unwrap(), pin.digest.clone())], &at).unwrap();
        store.mcp_accept(&sender, &[(pin.name.clone(), pin.digest.clone())], &at).unwrap();
    }
    let judge = Arc::new(Judging::default());
    let door = McpDoor::new(&gate, judge.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = gatehouse_door_mcp::http::router(door);
    tokio::spawn(gatehouse_net::plain::serve(listener, app, &[], &[], Default::default(), std::future::pending()));
    Running { gate: format!("http://{addr}"), addr, judge, _gate: gate }
}

fn call(tool: &str, n: u64) -> Asked {
    Asked { server: "files".into(), session: "s".into(), tool: tool.into(), arguments: serde_json::json!({"n": n}), description: None }
}

#[tokio::test]
async fn calls_on_a_line_are_judged_as_its_servers_and_answered_as_they_are_decided() {
    let r = running().await;
    let line = Arc::new(LineClient::new(&r.gate, "files", key(1), Duration::from_secs(30)).unwrap());
    let (decided, on_disk) = line.call(&call("fast", 1)).await.expect("decided on the line");
    assert_eq!(decided, Decided { answer: Answer::Allow, step: Some("step-1".into()) });
    assert!(on_disk.is_none(), "its record was on disk when it was decided");
    assert_eq!(r.judge.senders.lock().unwrap().clone(), [signed::sender("files", &hex::encode(key(1).verifying_key().as_bytes()))]);

    // A call waiting for the user holds no other: the next is answered meanwhile.
    let waiting = tokio::spawn({
        let line = line.clone();
        async move { line.call(&call("slow", 2)).await }
    });
    while r.judge.asked.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (decided, _) = line.call(&call("fast", 3)).await.expect("decided while another waits");
    assert_eq!(decided.answer, Answer::Allow);
    r.judge.answer_slow.notify_one();
    let (decided, _) = waiting.await.unwrap().expect("decided once the user answered");
    assert_eq!(decided.answer, Answer::Deny { message: "you denied this call".into() });

    // A call of another server on this line is refused, and the line goes on.
    let other = Asked { server: "mail".into(), ..call("fast", 4) };
    match line.call(&other).await {
        Err(Asking::Failed(why)) => assert!(why.contains("this line is the server “files”'s"), "{why}"),
        other => panic!("{:?}", other.map(|(d, _)| d)),
    }
    assert!(line.call(&call("fast", 5)).await.is_ok(), "the line is still open");
    assert_eq!(r.judge.senders.lock().unwrap().len(), 4, "the other server's call was never judged");
}

#[tokio::test]
async fn calls_past_the_bound_are_refused_each_in_its_own_answer() {
    let r = running().await;
    let line = Arc::new(LineClient::new(&r.gate, "files", key(1), Duration::from_secs(30)).unwrap());
    let mut all = Vec::new();
    for n in 0..MAX_IN_FLIGHT as u64 + 3 {
        let line = line.clone();
        all.push(tokio::spawn(async move { line.call(&call("slow", n)).await }));
    }
    // Those the gate holds wait for the user; the rest are refused at once.
    for _ in 0..1000 {
        if r.judge.asked.load(Ordering::SeqCst) >= MAX_IN_FLIGHT && all.iter().filter(|t| t.is_finished()).count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut refused = 0;
    for t in all.into_iter().filter(|t| t.is_finished()) {
        match t.await.unwrap() {
            Err(Asking::Failed(why)) if why.contains("wait for Gatehouse already") => refused += 1,
            other => panic!("{:?}", other.map(|(d, _)| d)),
        }
    }
    assert_eq!(refused, 3);
    assert_eq!(r.judge.asked.load(Ordering::SeqCst), MAX_IN_FLIGHT, "the gate held no more than its bound");
}

/// Asks for a line by hand with `host`: the status line and headers, and the stream.
async fn upgrade(addr: std::net::SocketAddr, host: &str) -> (String, tokio::io::BufReader<tokio::net::TcpStream>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {LINE_PATH} HTTP/1.1\r\nHost: {host}\r\nConnection: upgrade\r\nUpgrade: {UPGRADE}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut s = tokio::io::BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut l = String::new();
        if s.read_line(&mut l).await.unwrap() == 0 || l == "\r\n" {
            break;
        }
        head.push_str(&l);
    }
    (head, s)
}

fn challenge_of(head: &str) -> String {
    head.lines().find_map(|l| l.strip_prefix(&format!("{CHALLENGE_HEADER}: "))).expect("a challenge").trim().to_string()
}

#[tokio::test]
async fn a_hello_made_for_another_challenge_opens_nothing() {
    let r = running().await;
    let (head, mut first) = upgrade(r.addr, &r.addr.to_string()).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let seen = challenge_of(&head);

    // A hello copied from another line (made for its challenge) is refused.
    let (head, mut s) = upgrade(r.addr, &r.addr.to_string()).await;
    assert_ne!(challenge_of(&head), seen, "each line is given its own challenge");
    let copied = serde_json::to_string(&Hello::new(&key(1), &seen, "files")).unwrap();
    s.write_all(format!("{copied}\n").as_bytes()).await.unwrap();
    let mut said = String::new();
    s.read_line(&mut said).await.unwrap();
    match serde_json::from_str::<Said>(&said).unwrap() {
        Said::Refused { id: None, error } => assert!(error.contains("does not verify"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.read(&mut [0u8; 16]).await.unwrap(), 0, "and the line is closed");

    // The hello made for its own challenge opens the line.
    let hello = serde_json::to_string(&Hello::new(&key(1), &seen, "files")).unwrap();
    first.write_all(format!("{hello}\n").as_bytes()).await.unwrap();
    let mut said = String::new();
    first.read_line(&mut said).await.unwrap();
    assert_eq!(serde_json::from_str::<Said>(&said).unwrap(), Said::Ready);

    // Another server's key signing in as "files" is a line of that key, whose calls are
    // judged as another server's (one the user never let in).
    let (head, mut s) = upgrade(r.addr, &r.addr.to_string()).await;
    let hello = serde_json::to_string(&Hello::new(&key(2), &challenge_of(&head), "files")).unwrap();
    s.write_all(format!("{hello}\n").as_bytes()).await.unwrap();
    let mut said = String::new();
    s.read_line(&mut said).await.unwrap();
    assert_eq!(serde_json::from_str::<Said>(&said).unwrap(), Said::Ready);
    let sent = serde_json::json!({"id": 7, "call": call("fast", 7)});
    s.write_all(format!("{sent}\n").as_bytes()).await.unwrap();
    let mut said = String::new();
    s.read_line(&mut said).await.unwrap();
    match serde_json::from_str::<Said>(&said).unwrap() {
        Said::Decided { id: 7, decided, .. } => {
            assert!(matches!(&decided.answer, Answer::Deny { message } if message.contains("asked you to let")), "{decided:?}")
        }
        other => panic!("{other:?}"),
    }
    assert!(r.judge.senders.lock().unwrap().is_empty(), "nothing was judged by the rules of the server let in");
}

#[tokio::test]
async fn a_line_under_another_host_or_past_the_bound_is_refused_and_a_gate_without_lines_is_asked_another_way() {
    let r = running().await;
    let (head, _) = upgrade(r.addr, "gatehouse.example").await;
    assert!(!head.starts_with("HTTP/1.1 101"), "{head}");

    // Lines open at once are bounded; one closed makes room.
    let mut open = Vec::new();
    for _ in 0..MAX_LINES {
        let (head, s) = upgrade(r.addr, &r.addr.to_string()).await;
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        open.push(s);
    }
    let (head, _) = upgrade(r.addr, &r.addr.to_string()).await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    drop(open.pop());
    let mut made_room = false;
    for _ in 0..100 {
        if upgrade(r.addr, &r.addr.to_string()).await.0.starts_with("HTTP/1.1 101") {
            made_room = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(made_room, "a closed line gave its place back");

    // A gate that offers no line: the wrap is told to ask by requests, once and for good.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let app = axum::Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        async { axum::http::StatusCode::NOT_FOUND }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let line = LineClient::new(&format!("http://{addr}"), "files", key(1), Duration::from_secs(30)).unwrap();
    for _ in 0..3 {
        assert!(matches!(line.call(&call("fast", 1)).await, Err(Asking::Unavailable(_))));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "asked for a line once");
}

#[tokio::test]
async fn a_wrap_that_never_reads_loses_its_line_and_holds_no_other() {
    let r = running().await;
    let (head, s) = upgrade(r.addr, &r.addr.to_string()).await;
    let mut s = s.into_inner();
    let hello = serde_json::to_string(&Hello::new(&key(1), &challenge_of(&head), "files")).unwrap();
    s.write_all(format!("{hello}\n").as_bytes()).await.unwrap();
    // Calls the gate answers at once (each of another server: refused, the line going on),
    // sent without ever reading an answer.
    let (_, mut send) = s.into_split();
    let sent = Arc::new(AtomicUsize::new(0));
    let writing = tokio::spawn({
        let sent = sent.clone();
        async move {
            let mut n = 0u64;
            loop {
                let line = format!("{}\n", serde_json::json!({"id": n, "call": Asked { server: "mail".into(), ..call("fast", n) }}));
                match tokio::time::timeout(Duration::from_secs(30), send.write_all(line.as_bytes())).await {
                    Ok(Ok(())) => {
                        sent.fetch_add(line.len(), Ordering::SeqCst);
                        n += 1;
                    }
                    Ok(Err(_)) => return std::time::Instant::now(),
                    Err(_) => panic!("the gate neither read nor closed the line in 30 s"),
                }
            }
        }
    });
    // The gate stops taking calls it cannot answer: what it was sent stays bounded.
    let mut last = 0;
    let stalled = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = sent.load(Ordering::SeqCst);
        if now == last && now > 0 {
            break std::time::Instant::now();
        }
        assert!(!writing.is_finished(), "the line closed before the gate's answers went unread");
        last = now;
    };
    assert!(last < 64 << 20, "{last} bytes of calls taken while none of their answers was read");
    // Meanwhile another line is answered at once.
    let other = LineClient::new(&r.gate, "files", key(1), Duration::from_secs(5)).unwrap();
    let t = std::time::Instant::now();
    let (decided, _) = other.call(&call("fast", 1)).await.expect("decided on another line");
    assert_eq!(decided.answer, Answer::Allow);
    assert!(t.elapsed() < Duration::from_secs(2), "another line waited {:?}", t.elapsed());
    // And the line that is not read is closed once its answer has waited its time.
    let closed = writing.await.unwrap();
    let after = closed.duration_since(stalled);
    assert!(after <= gatehouse_door_mcp::line::WRITE_WITHIN + Duration::from_secs(5), "closed {after:?} after the wrap stopped reading");
}
