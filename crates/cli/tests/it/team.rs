//! A team's gate, as operators run it: `gatehouse serve --database postgres://…` on
//! several nodes (processes with data dirs of their own holding the team's key file),
//! one real PostgreSQL. Any node takes any request and answers as one laptop would; a
//! node killed with -9 loses nothing it acknowledged; PostgreSQL stopped under load
//! turns answers into 503 with Retry-After, and the nodes recover by themselves.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use crate::common::free_port;
use gatehouse_pg_testserver::Postgres;

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

/// The team: the first node's data dir made the identity; the others got its key file,
/// as the operator's guide says.
pub(crate) struct Team {
    url: String,
    dirs: Vec<tempfile::TempDir>,
    pub(crate) public_key: String,
}

impl Team {
    pub(crate) fn new(url: String, nodes: usize) -> Team {
        let dirs: Vec<_> = (0..nodes).map(|_| tempfile::tempdir().unwrap()).collect();
        let public_key = gh(dirs[0].path(), &url, &["init"]).lines().last().unwrap().trim().to_string();
        for d in &dirs[1..] {
            for f in ["identity.json", "identity.key"] {
                std::fs::copy(dirs[0].path().join(f), d.path().join(f)).unwrap();
            }
        }
        Team { url, dirs, public_key }
    }

    fn dir(&self, node: usize) -> &Path {
        self.dirs[node].path()
    }

    /// A command run by node `node`'s CLI (on the team's database).
    pub(crate) fn gh(&self, node: usize, args: &[&str]) -> String {
        gh(self.dir(node), &self.url, args)
    }

    /// Node `node`'s CLI, to be run and its failure read.
    pub(crate) fn command(&self, node: usize) -> Command {
        command(self.dir(node), &self.url)
    }

    fn serve(&self, node: usize) -> Node {
        Node::start(self.dir(node), &self.url)
    }

    /// Node `node` serving with these options too (`--public-name NAME`).
    pub(crate) fn serve_with(&self, node: usize, options: &[&str]) -> Node {
        Node::start_with(self.dir(node), &self.url, options)
    }
}

fn command(dir: &Path, url: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir").arg(dir).args(["--keystore", "file", "--database", url]).env_remove("GATEHOUSE_KEYSTORE").env_remove("GATEHOUSE_DATABASE");
    cmd
}

fn gh(dir: &Path, url: &str, args: &[&str]) -> String {
    let out = command(dir, url).args(args).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "gatehouse {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `gatehouse serve` of one node; killed when dropped.
pub(crate) struct Node {
    child: Child,
    pub(crate) base: String,
}

impl Node {
    fn start(dir: &Path, url: &str) -> Node {
        Node::start_with(dir, url, &[])
    }

    fn start_with(dir: &Path, url: &str, options: &[&str]) -> Node {
        let port = free_port();
        let child = command(dir, url)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(options)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let t = Instant::now();
        while reqwest::blocking::get(format!("{base}/health")).is_err() {
            assert!(t.elapsed() < Duration::from_secs(20), "node did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Node { child, base }
    }

    fn submit(&self) -> String {
        format!("{}/epp/v1/submit", self.base)
    }

    fn kill_9(&mut self) {
        Command::new("kill").args(["-9", &self.child.id().to_string()]).status().unwrap();
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn signed(inbox: &str, sender: &ed25519_dalek::SigningKey, scope: &str, prompt: &str) -> String {
    gatehouse_epp::Draft::new(inbox, scope, prompt).sign(sender, chrono::Utc::now()).to_string()
}

fn post(client: &reqwest::blocking::Client, url: &str, body: &str) -> (u16, Option<String>, serde_json::Value) {
    let r = client.post(url).body(body.to_string()).send().unwrap();
    let status = r.status().as_u16();
    let retry = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    (status, retry, r.json().unwrap_or(serde_json::Value::Null))
}

#[test]
fn three_nodes_answer_as_one_gate() {
    let Some(pg) = Postgres::shared() else { return };
    let team = Team::new(pg.fresh_database(), 3);
    let bob = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&bob), "--name", "Bob", "--scopes", "*"]);
    let nodes: Vec<Node> = (0..3).map(|i| team.serve(i)).collect();
    let urls: Vec<String> = nodes.iter().map(Node::submit).collect();

    // The same envelope at every node at once, a hundred times: one acceptance each time.
    for round in 0..100 {
        let body = Arc::new(signed(&team.public_key, &bob, "support", &format!("round {round}")));
        let barrier = Arc::new(Barrier::new(3));
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let handles: Vec<_> = urls
                .iter()
                .map(|u| {
                    let (body, barrier) = (body.clone(), barrier.clone());
                    s.spawn(move || {
                        let client = reqwest::blocking::Client::new();
                        barrier.wait();
                        post(&client, u, &body).0
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = statuses.clone();
        sorted.sort();
        assert_eq!(sorted, [200, 409, 409], "round {round}: {statuses:?}");
    }

    // A stranger knocks at node 1; node 3's operator sees the knock and lets it in; the
    // stranger's next envelope, at node 2, is accepted.
    let eve = gatehouse_epp::generate_signing_key();
    let client = reqwest::blocking::Client::new();
    let (status, _, receipt) = post(&client, &urls[0], &signed(&team.public_key, &eve, "billing", "hello"));
    assert_eq!((status, receipt["error"]["code"].as_str()), (401, Some("UNTRUSTED_SENDER")), "{receipt}");
    let pending: serde_json::Value = serde_json::from_str(&team.gh(2, &["pending", "--json"])).unwrap();
    let eve_key = gatehouse_epp::public_key_hex(&eve);
    assert!(pending.as_array().unwrap().iter().any(|p| p["public_key"] == eve_key.as_str()), "{pending}");
    team.gh(2, &["trust", "approve", &eve_key, "--name", "Eve", "--scopes", "billing"]);
    let (status, _, receipt) = post(&client, &urls[1], &signed(&team.public_key, &eve, "billing", "again"));
    assert_eq!(status, 200, "{receipt}");

    let stored: serde_json::Value = serde_json::from_str(&team.gh(1, &["envelopes", "--json", "--limit", "1000"])).unwrap();
    assert_eq!(stored.as_array().unwrap().len(), 101, "one row per acceptance");
    for n in &nodes {
        let ready: serde_json::Value = reqwest::blocking::get(format!("{}/ready", n.base)).unwrap().json().unwrap();
        assert_eq!(ready["status"], "ready");
    }
}

/// A node with a key other than the team's would answer as someone else: it does not start.
#[test]
fn a_node_with_another_identity_is_refused_by_the_teams_database() {
    let Some(pg) = Postgres::shared() else { return };
    let team = Team::new(pg.fresh_database(), 1);
    let stranger = tempfile::tempdir().unwrap();
    let out = command(stranger.path(), &team.url).args(["serve", "--listen", "127.0.0.1:0"]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains(&format!("belongs to the identity {}", team.public_key)) && said.contains("[OPEN]"), "{said}");
    assert!(!said.contains("password"), "{said}");
}

/// Posts envelope indexes `todo` to the nodes in turn over 6 connections; each answer is
/// recorded with its node. A connection refused (the node was killed) moves on to the
/// next node, as a load balancer does.
fn post_all(urls: &Mutex<Vec<String>>, envelopes: &[String], todo: &[usize], answers: &Mutex<Vec<(usize, u16)>>) {
    std::thread::scope(|s| {
        for t in 0..6 {
            s.spawn(move || {
                let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
                for (k, &i) in todo.iter().skip(t).step_by(6).enumerate() {
                    for attempt in 0..6 {
                        let url = {
                            let u = urls.lock().unwrap();
                            u[(k + t + attempt) % u.len()].clone()
                        };
                        if let Ok(r) = client.post(&url).body(envelopes[i].clone()).send() {
                            answers.lock().unwrap().push((i, r.status().as_u16()));
                            break;
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn twenty_thousand_envelopes_over_three_nodes_one_killed_midway_every_200_has_its_row_once() {
    const N: usize = 20_000;
    let Some(pg) = Postgres::shared() else { return };
    let team = Team::new(pg.fresh_database(), 3);
    let sender = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&sender), "--name", "Load", "--scopes", "*"]);
    let now = chrono::Utc::now();
    let envelopes: Vec<String> =
        (0..N).map(|i| gatehouse_epp::Draft::new(&team.public_key, "load", &format!("envelope {i}")).sign(&sender, now).to_string()).collect();
    let mut nodes: Vec<Node> = (0..3).map(|i| team.serve(i)).collect();
    let urls = Mutex::new(nodes.iter().map(Node::submit).collect::<Vec<_>>());
    let answers = Mutex::new(Vec::new());
    let all: Vec<usize> = (0..N).collect();
    std::thread::scope(|s| {
        s.spawn(|| post_all(&urls, &envelopes, &all, &answers));
        let t = Instant::now();
        while answers.lock().unwrap().len() < N / 3 && t.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Node 2 dies mid-load without a word; the operator's supervisor restarts it.
        nodes[1].kill_9();
        std::thread::sleep(Duration::from_millis(300));
        let restarted = team.serve(1);
        urls.lock().unwrap()[1] = restarted.submit();
        nodes[1] = restarted;
    });
    let answers = answers.into_inner().unwrap();
    let mut accepted = std::collections::HashSet::new();
    for &(i, status) in &answers {
        match status {
            200 => assert!(accepted.insert(i), "envelope {i} acknowledged twice"),
            // Stored by the killed node before it could answer, then sent again.
            409 => {}
            other => panic!("envelope {i}: status {other}"),
        }
    }
    assert!(accepted.len() > N / 2, "{} of {N} acknowledged", accepted.len());
    let stored: serde_json::Value = serde_json::from_str(&team.gh(0, &["envelopes", "--json", "--limit", "100000"])).unwrap();
    let ids: Vec<String> = stored.as_array().unwrap().iter().map(|e| e["prompt"].as_str().unwrap().to_string()).collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no envelope is stored twice");
    for i in &accepted {
        assert!(unique.contains(&format!("envelope {i}")), "envelope {i} was acknowledged and is not stored");
    }
}

/// PostgreSQL of its own: this test stops it.
#[test]
fn postgres_stopped_under_load_gets_503_with_retry_after_and_the_nodes_recover() {
    let Some(pg) = Postgres::start() else { return };
    let team = Team::new(pg.fresh_database(), 2);
    let sender = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&sender), "--name", "Load", "--scopes", "*"]);
    let nodes: Vec<Node> = (0..2).map(|i| team.serve(i)).collect();
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut n = 0;
    let mut send = |node: &Node| {
        n += 1;
        let r = post(&client, &node.submit(), &signed(&team.public_key, &sender, "load", &format!("envelope {n}")));
        (n, r)
    };
    let mut accepted = Vec::new();
    for _ in 0..20 {
        let (i, (status, _, _)) = send(&nodes[accepted.len() % 2]);
        assert_eq!(status, 200);
        accepted.push(i);
    }
    pg.stop();
    let down = Instant::now();
    let mut refused = 0;
    while down.elapsed() < Duration::from_secs(10) {
        let (_, (status, retry, receipt)) = send(&nodes[refused % 2]);
        assert_eq!(status, 503, "{receipt}");
        assert_eq!(retry.as_deref(), Some("5"));
        assert_eq!(receipt["status"], "rejected");
        assert_eq!(receipt["error"]["code"], "INTERNAL_ERROR");
        let ready = reqwest::blocking::get(format!("{}/ready", nodes[refused % 2].base)).unwrap();
        assert_eq!(ready.status().as_u16(), 503);
        // A node that cannot reach its database still says it is alive.
        assert_eq!(reqwest::blocking::get(format!("{}/health", nodes[refused % 2].base)).unwrap().status().as_u16(), 200);
        refused += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    pg.resume();
    // No restart: the nodes reconnect on their own.
    let back = Instant::now();
    let mut recovered = [false, false];
    while !(recovered[0] && recovered[1]) {
        assert!(back.elapsed() < Duration::from_secs(30), "the nodes did not recover");
        for (k, node) in nodes.iter().enumerate() {
            let (i, (status, _, _)) = send(node);
            if status == 200 {
                recovered[k] = true;
                accepted.push(i);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let stored: serde_json::Value = serde_json::from_str(&team.gh(0, &["envelopes", "--json", "--limit", "1000"])).unwrap();
    let prompts: std::collections::HashSet<String> = stored.as_array().unwrap().iter().map(|e| e["prompt"].as_str().unwrap().to_string()).collect();
    assert_eq!(prompts.len(), accepted.len(), "only what was acknowledged is stored: nothing accepted without a commit");
    for i in accepted {
        assert!(prompts.contains(&format!("envelope {i}")));
    }
}

/// A database that takes connections and answers nothing (a hung or very slow one)
/// holds up the envelopes that need it, never the node: `/health` answers, and so does
/// `/ready`, saying it is not ready.
#[test]
fn a_hung_database_does_not_starve_health() {
    let Some(pg) = Postgres::start() else { return };
    let team = Team::new(pg.fresh_database(), 1);
    let node = team.serve(0);
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    // Strangers: each refusal reads the registry again, fresh, from the database.
    let bodies: Vec<String> = (0..16).map(|i| signed(&team.public_key, &gatehouse_epp::generate_signing_key(), "support", &format!("knock {i}"))).collect();
    pg.freeze();
    std::thread::scope(|s| {
        for b in &bodies {
            let (client, url) = (client.clone(), node.submit());
            s.spawn(move || {
                let _ = client.post(url).body(b.clone()).send();
            });
        }
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        let health = client.get(format!("{}/health", node.base)).timeout(Duration::from_secs(5)).send();
        let answered = health.as_ref().map(|r| r.status().as_u16()).ok();
        let ready = client.get(format!("{}/ready", node.base)).timeout(Duration::from_secs(5)).send().map(|r| r.status().as_u16()).ok();
        pg.thaw();
        assert_eq!(answered, Some(200), "/health did not answer within 5 s while the database hung ({:?})", t.elapsed());
        assert_eq!(ready, Some(503), "/ready says the database does not answer");
    });
}

/// A sender's rate limit is the gate's: 10 an hour across three nodes, posted to all at
/// once, lets 10 in; the rest are 429 with Retry-After.
#[test]
fn a_rate_limit_of_ten_an_hour_holds_at_ten_across_three_nodes() {
    let Some(pg) = Postgres::shared() else { return };
    let team = Team::new(pg.fresh_database(), 3);
    let bob = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&bob), "--name", "Bob", "--scopes", "*", "--max-per-hour", "10"]);
    let nodes: Vec<Node> = (0..3).map(|i| team.serve(i)).collect();
    let bodies: Vec<String> = (0..30).map(|i| signed(&team.public_key, &bob, "support", &format!("prompt {i}"))).collect();
    let barrier = Barrier::new(3);
    let answers: Vec<(u16, Option<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = nodes
            .iter()
            .enumerate()
            .map(|(k, node)| {
                let (barrier, bodies, url) = (&barrier, &bodies, node.submit());
                s.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    barrier.wait();
                    bodies.iter().skip(k).step_by(3).map(|b| post(&client, &url, b)).map(|(status, retry, _)| (status, retry)).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(answers.iter().filter(|(s, _)| *s == 200).count(), 10, "{answers:?}");
    assert!(answers.iter().filter(|(s, _)| *s != 200).all(|(s, retry)| *s == 429 && retry.is_some()), "{answers:?}");
}

/// A team's mail account is read by one node at a time (a lease in the database). When
/// that node is killed with -9, another node takes the account over once the lease runs
/// out, and every mail is accepted once and filed.
#[test]
fn a_mail_account_is_read_by_one_node_and_taken_over_when_that_node_dies() {
    use gatehouse_email_testservers::{Dovecot, PASSWORD, USER};
    let Some(pg) = Postgres::shared() else { return };
    let Some(dv) = Dovecot::start() else { return };
    let team = Team::new(pg.fresh_database(), 2);
    let sender = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&sender), "--name", "Clinic", "--scopes", "support"]);
    let mut add = command(team.dir(0), &team.url)
        .args(["email", "add", "home", "--host", "127.0.0.1", "--port", &dv.port.to_string(), "--plain", "--user", USER, "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut add.stdin.take().unwrap(), PASSWORD.as_bytes()).unwrap();
    let out = add.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The account's password is a node's secret, like the team's key: the operator gives
    // every node the same (docs/team-gate.md).
    let (from, to) = (team.dir(0).join("secrets"), team.dir(1).join("secrets"));
    std::fs::DirBuilder::new().mode(0o700).create(&to).unwrap();
    for f in std::fs::read_dir(&from).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
    }

    let deliver = |n: usize| {
        let env = gatehouse_epp::Draft::new(&team.public_key, "support", &format!("result {n}")).sign(&sender, chrono::Utc::now());
        let mail = format!(
            "From: agent@clinic.example\r\nMessage-ID: <m{n}@clinic.example>\r\nSubject: result {n}\r\nContent-Type: application/epp+json\r\n\r\n{}\r\n",
            serde_json::to_string(&env).unwrap()
        );
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut s = gatehouse_email::imap::connect(&crate::email::account(&dv), PASSWORD).await.unwrap();
            s.append("INBOX", None, None, mail.as_bytes()).await.unwrap();
            s.logout().await.unwrap();
        });
        env["envelope_id"].as_str().unwrap().to_string()
    };
    let accepted = || -> Vec<String> {
        let receipts: serde_json::Value = serde_json::from_str(&team.gh(0, &["receipts", "--json", "--limit", "100"])).unwrap();
        receipts.as_array().unwrap().iter().filter(|r| r["status"] == "accepted").map(|r| r["envelope_id"].as_str().unwrap().to_string()).collect()
    };
    let wait_for = |n: usize, within: Duration| {
        let t = Instant::now();
        while accepted().len() < n {
            assert!(t.elapsed() < within, "{} of {n} mails accepted after {within:?}", accepted().len());
            std::thread::sleep(Duration::from_millis(200));
        }
        t.elapsed()
    };
    let database = team.url.rsplit('/').next().unwrap().to_string();
    let holder = || pg.psql_in(&database, "SELECT holder FROM leases WHERE name = 'email:home'").unwrap();
    let node_of = |name: &str| (0..2).find(|i| std::fs::read_to_string(team.dir(*i).join("node-id")).unwrap().trim() == name);

    let mut nodes = [team.serve(0), team.serve(1)];
    let first = deliver(0);
    wait_for(1, Duration::from_secs(60));
    let reader = node_of(&holder()).expect("one node holds the account's lease");
    nodes[reader].kill_9();

    let second = deliver(1);
    // The lease runs out 30 s after its last renewal; the other node asks every 10 s.
    let took = wait_for(2, Duration::from_secs(75));
    assert_eq!(node_of(&holder()), Some(1 - reader), "the other node holds the lease now (took {took:?})");
    let mut ids = accepted();
    ids.sort();
    let mut want = vec![first, second];
    want.sort();
    assert_eq!(ids, want, "each mail accepted once");
    assert_eq!(crate::email::count(&dv, "INBOX"), 0, "both mails filed");
    assert_eq!(crate::email::count(&dv, "Gatehouse.Accepted"), 2);
}
