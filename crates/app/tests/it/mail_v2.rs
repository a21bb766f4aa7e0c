//! MAIL 2.0 against the real reference (mail-swarms-server 2.0.1 with its daemon and a
//! scripted agent, tests/peers/mail-2.0/server.py): a server is recognised by what it
//! says and connected with an address and password (a refused login is not kept), a
//! message becomes a conversation whose answers join it although the server drops
//! `reply_to`, a later turn stays in it, an agent that never answers ends the send at its
//! deadline with the conversation kept open, and what arrives another way is picked up by
//! a sync, once.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_app::doors::mail::{self, Connection, LiveEvent};
use gatehouse_mail::client::SendMessage;
use gatehouse_mail::v2::{Client, Credentials};
use gatehouse_mail_testswarm::reference;
use gatehouse_store::Store;

struct Setup {
    _dir: tempfile::TempDir,
    dir: std::path::PathBuf,
    store: Arc<Store>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    gatehouse_keys::load_or_create(dir.path(), gatehouse_keys::KeystoreKind::File).unwrap();
    let store = Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    Setup { dir: dir.path().to_path_buf(), _dir: dir, store }
}

fn client(s: &Setup) -> Client {
    match mail::connection(&s.store, &s.dir, "chorus").unwrap() {
        Connection::V2(c) => c,
        Connection::V1(_) => panic!("a 2.0 server was taken for 1.3"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_2_server_is_connected_with_a_login_and_its_conversations_kept() {
    let Some(r) = reference::start_v2() else { return };
    let s = setup();
    let url = r.server.url.clone();

    // Without an address the user is told what this server needs; a wrong password is
    // refused and nothing is kept.
    let e = mail::swarm_add(s.store.clone(), &s.dir, "chorus", &url, Some("x".into()), None).await.unwrap_err();
    assert!(e.to_string().contains("MAIL 2.0") && e.to_string().contains("address"), "{e}");
    let e = mail::swarm_add(s.store.clone(), &s.dir, "chorus", &url, Some("wrong".into()), Some(r.address.clone())).await.unwrap_err();
    assert!(e.to_string().contains("refused the login"), "{e}");
    assert!(s.store.mail_swarm("chorus").unwrap().is_none());

    let added = mail::swarm_add(s.store.clone(), &s.dir, "chorus", &url, Some(r.password.clone()), Some(r.address.clone())).await.unwrap();
    assert!(added.has_token);
    assert_eq!(added.info["server"]["protocol_version"], "2.0");
    assert_eq!(added.info["whoami"]["id"], r.address.as_str());
    assert!(mail::is_v2(added.swarm.info.as_ref()));
    let c = client(&s);

    // A new conversation: the agent's answer (no reply_to on the wire) joins it.
    let mut live = Vec::new();
    let hello = SendMessage { body: "hello there".into(), subject: Some("Greetings".into()), ..Default::default() };
    let out = mail::v2::send(s.store.clone(), &c, "chorus", &hello, Duration::from_secs(60), |e| live.push(e.clone())).await.unwrap();
    assert!(out.completed);
    assert_eq!(out.response, "sage heard: hello there");
    let t = s.store.mail_task(&out.task_id).unwrap().unwrap();
    assert_eq!((t.task.state.as_str(), t.task.subject.as_str(), t.messages.len()), ("completed", "Greetings", 2), "{t:?}");
    assert_eq!(t.messages[0].sender, r.address);
    assert_eq!(t.messages[1].sender, r.agent);
    assert_eq!(t.messages[1].subject, "Re: Greetings");
    assert_eq!(live.iter().filter(|e| matches!(e, LiveEvent::Message { .. })).count(), 2);

    // Two answers to one message: both kept, in order, in the same conversation.
    let steps = SendMessage { body: "two steps, please".into(), subject: Some("Report".into()), entrypoint: Some("sage".into()), ..Default::default() };
    let out2 = mail::v2::send(s.store.clone(), &c, "chorus", &steps, Duration::from_secs(60), |_| {}).await.unwrap();
    let t2 = s.store.mail_task(&out2.task_id).unwrap().unwrap();
    let bodies: Vec<&str> = t2.messages.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["two steps, please", "Working on it.", "Done: two steps, please"]);
    assert_eq!(out2.response, "Done: two steps, please");

    // A later turn of the first conversation stays in it.
    let more = SendMessage { body: "and again".into(), task_id: Some(out.task_id.clone()), ..Default::default() };
    let out3 = mail::v2::send(s.store.clone(), &c, "chorus", &more, Duration::from_secs(60), |_| {}).await.unwrap();
    assert_eq!(out3.task_id, out.task_id);
    let t = s.store.mail_task(&out.task_id).unwrap().unwrap();
    assert_eq!(t.messages.len(), 4, "{:?}", t.messages.iter().map(|m| &m.body).collect::<Vec<_>>());
    assert_eq!(t.messages[2].subject, "Re: Greetings");
    assert_eq!(t.task.response.as_deref(), Some("sage heard: and again"));

    // No answer: the send ends at its deadline with a clear error; the conversation stays.
    let quiet = SendMessage { body: "silence is golden".into(), subject: Some("Shh".into()), ..Default::default() };
    let e = mail::v2::send(s.store.clone(), &c, "chorus", &quiet, Duration::from_secs(3), |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("no answer within 3 s"), "{e}");
    let shh = s.store.mail_tasks(Some("Shh"), 5).unwrap();
    assert_eq!((shh.len(), shh[0].state.as_str(), shh[0].messages), (1, "running", 1));

    // Another user of the server answers it as if it were theirs ("Re: Shh", naming the
    // user's message): a conversation of its own, the user's stays open and unanswered.
    let bob = Client::new(&url, Credentials { address: r.other_address.clone(), password: r.other_password.clone() }).unwrap();
    let shh_id = shh[0].task_id.clone();
    bob.send("Re: Shh", "done, I paid the invoice for you", Some(&shh_id), std::slice::from_ref(&r.address)).await.unwrap();
    let mut kept = 0;
    for _ in 0..40 {
        kept += mail::v2::sync(&s.store, &c, "chorus", &mut |_: &LiveEvent| {}).await.unwrap();
        if kept >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let t = s.store.mail_task(&shh_id).unwrap().unwrap();
    assert_eq!((t.task.state.as_str(), t.messages.len(), t.task.response.as_deref()), ("running", 1, None), "{t:?}");
    let theirs = s.store.mail_tasks(None, 50).unwrap().into_iter().find(|x| x.task_id != shh_id && x.subject == "Shh").expect("kept as its own");
    assert_eq!(theirs.messages, 1);

    // Mail sent another way (here the server's API directly) is picked up by a sync, once.
    let other = Client::new(&url, Credentials { address: r.address.clone(), password: r.password.clone() }).unwrap();
    other.send("Elsewhere", "written elsewhere", None, std::slice::from_ref(&r.agent)).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..40 {
        mail::v2::sync(&s.store, &c, "chorus", &mut |e: &LiveEvent| seen.push(e.clone())).await.unwrap();
        if seen.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let elsewhere = s.store.mail_tasks(Some("Elsewhere"), 5).unwrap();
    assert_eq!((elsewhere.len(), elsewhere[0].messages, elsewhere[0].state.as_str()), (1, 2, "completed"), "{seen:?}");
    assert_eq!(mail::v2::sync(&s.store, &c, "chorus", &mut |_: &LiveEvent| {}).await.unwrap(), 0, "nothing is kept twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recipient_is_an_address_an_agent_name_or_the_only_agent() {
    let Some(r) = reference::start_v2() else { return };
    let c = Client::new(&r.server.url, Credentials { address: r.address.clone(), password: r.password.clone() }).unwrap();
    assert_eq!(mail::v2::recipient(&c, None).await.unwrap(), r.agent);
    assert_eq!(mail::v2::recipient(&c, Some("sage")).await.unwrap(), r.agent);
    assert_eq!(mail::v2::recipient(&c, Some("user:bob@localhost")).await.unwrap(), "user:bob@localhost");
    let e = mail::v2::recipient(&c, Some("oracle")).await.unwrap_err();
    assert!(e.to_string().contains("has no agent \"oracle\"") && e.to_string().contains("sage"), "{e}");
}

/// One HTTP request as a server on loopback received it (head and body), answered with
/// `answer` and the connection closed.
fn serve_once(listener: &std::net::TcpListener, answer: &str) -> String {
    use std::io::{Read, Write};
    let (mut c, _) = listener.accept().unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = c.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()))
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                break;
            }
        }
        if n == 0 {
            break;
        }
    }
    c.write_all(answer.as_bytes()).unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_2_password_goes_to_the_login_and_nowhere_else() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let root = r#"{"protocol_name":"mail","protocol_version":"2.0","uptime":1.0}"#;
    let server = std::thread::spawn(move || {
        let first = serve_once(
            &listener,
            &format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{root}", root.len()),
        );
        let refused = r#"{"detail":"Incorrect username or password"}"#;
        let second = serve_once(
            &listener,
            &format!("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{refused}", refused.len()),
        );
        (first, second)
    });
    let s = setup();
    let e = mail::swarm_add(s.store.clone(), &s.dir, "chorus", &url, Some("hunter2-secret".into()), Some("user:alice@localhost".into())).await.unwrap_err();
    assert!(e.to_string().contains("refused the login"), "{e}");
    let (first, second) = server.join().unwrap();
    assert!(first.starts_with("GET / "), "{first}");
    assert!(!first.to_ascii_lowercase().contains("authorization") && !first.contains("hunter2"), "GET / is public: no credential goes with it: {first}");
    assert!(second.starts_with("POST /auth/token "), "{second}");
    assert!(second.contains("hunter2-secret"), "the password goes to the login: {second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swarm_executor_logs_in_to_a_mail_2_server_and_hands_it_the_prompt() {
    use crate::common::*;
    use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec};
    use gatehouse_store::ExecStatus;
    let Some(r) = reference::start_v2() else { return };
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert("research".to_string(), gatehouse_app::executors::swarm("chorus", Some("sage")));
    let inbox = TestInbox::start_with(&pubhex(&key(2)), false, ExecutorConfig { default: ExecutorSpec::Noop, scopes }).await;
    gatehouse_keys::load_or_create(inbox.dir.path(), gatehouse_keys::KeystoreKind::File).unwrap();
    mail::swarm_add(inbox.store.clone(), inbox.dir.path(), "chorus", &r.server.url, Some(r.password.clone()), Some(r.address.clone())).await.unwrap();
    let lee = key(1);
    inbox.trust(&pubhex(&lee), "Dr. Lee", policy(&["research"]));
    assert_eq!(inbox.post_json(&inbox.signed(&lee, "research", "Weather in Lyon?")).await.0, 200);
    let store = inbox.store.clone();
    eventually("the swarm executor finished", || {
        store.envelopes(5, 0).unwrap().iter().all(|e| matches!(e.exec_status, ExecStatus::Succeeded | ExecStatus::Failed))
    })
    .await;
    let e = store.envelopes(5, 0).unwrap().remove(0);
    assert_eq!(e.exec_status, ExecStatus::Succeeded, "{:?}", e.exec_result);
    assert_eq!(e.exec_result.unwrap()["answer"], "sage heard: Weather in Lyon?");
    inbox.stop().await;
}
