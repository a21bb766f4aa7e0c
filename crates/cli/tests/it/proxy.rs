//! The operator's guide's reverse proxy, run for real: Debian's nginx with the `server`
//! block of docs/team-gate.md (only its certificate, port and upstream filled in) in
//! front of two nodes of a team's gate on PostgreSQL, reached by the public name.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::free_port;
use crate::team::{signed, Team};
use gatehouse_pg_testserver::Postgres;

const NAME: &str = "gate.example.com";

fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        let why = "nginx is not installed (Debian: nginx); run scripts/setup.sh";
        assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// The guide's nginx example, as written.
fn guides_server_block() -> String {
    let guide = include_str!("../../../../docs/team-gate.md");
    let start = guide.find("```nginx\n").expect("docs/team-gate.md has an nginx example") + "```nginx\n".len();
    let len = guide[start..].find("```").unwrap();
    guide[start..start + len].to_string()
}

struct Nginx(Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nginx serving the guide's block on 127.0.0.1:`port` with `upstream`, its files in `dir`.
fn start_nginx(bin: &Path, dir: &Path, port: u16, upstream: &[String]) -> Nginx {
    let cert = rcgen::generate_simple_self_signed(vec![NAME.to_string()]).unwrap();
    std::fs::write(dir.join("gate.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("gate.key"), cert.key_pair.serialize_pem()).unwrap();
    let block = guides_server_block();
    for line in ["listen 443 ssl;", "/etc/ssl/gate.pem", "/etc/ssl/gate.key", "http://127.0.0.1:8765"] {
        assert!(block.contains(line), "the guide's example changed: {line} is not in it");
    }
    let block = block
        .replace("listen 443 ssl;", &format!("listen 127.0.0.1:{port} ssl;"))
        .replace("/etc/ssl/gate.pem", &dir.join("gate.pem").display().to_string())
        .replace("/etc/ssl/gate.key", &dir.join("gate.key").display().to_string())
        .replace("http://127.0.0.1:8765", "http://gate_nodes");
    let servers: String = upstream.iter().map(|u| format!("server {};", u.trim_start_matches("http://"))).collect();
    let d = dir.display();
    let conf = format!(
        "daemon off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
         upstream gate_nodes {{ {servers} }}\n{block}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(bin).arg("-p").arg(dir).arg("-c").arg(dir.join("nginx.conf")).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "nginx did not start: {}", std::fs::read_to_string(dir.join("error.log")).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(50));
    }
    Nginx(child)
}

#[test]
fn the_guides_nginx_example_serves_two_nodes_by_their_public_name() {
    let Some(pg) = Postgres::shared() else { return };
    let Some(bin) = nginx() else { return };
    let team = Team::new(pg.fresh_database(), 2);
    let bob = gatehouse_epp::generate_signing_key();
    team.gh(0, &["trust", "add", &gatehouse_epp::public_key_hex(&bob), "--name", "Bob", "--scopes", "*"]);
    let nodes: Vec<_> = (0..2).map(|i| team.serve_with(i, &["--public-name", NAME])).collect();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _nginx = start_nginx(&bin, dir.path(), port, &nodes.iter().map(|n| n.base.clone()).collect::<Vec<_>>());

    let cert = reqwest::Certificate::from_pem(&std::fs::read(dir.path().join("gate.pem")).unwrap()).unwrap();
    let client = reqwest::blocking::Client::builder().add_root_certificate(cert).resolve(NAME, ([127, 0, 0, 1], port).into()).build().unwrap();
    let base = format!("https://{NAME}:{port}");
    // Round robin: the four envelopes are answered by both nodes, each as the one gate.
    for n in 0..4 {
        let r = client.post(format!("{base}/epp/v1/submit")).body(signed(&team.public_key, &bob, "support", &format!("via the proxy {n}"))).send().unwrap();
        let status = r.status().as_u16();
        assert_eq!(status, 200, "envelope {n}: {}", r.text().unwrap_or_default());
    }
    let page = client.get(format!("{base}/approve")).send().unwrap();
    assert_eq!(page.status(), 200, "the approvers' page through the proxy");
    // A name the operator did not configure is still refused, behind the proxy too.
    let other = client.post(format!("{base}/epp/v1/submit")).header("host", "attacker.example").body("{}").send().unwrap();
    assert_eq!(other.status(), 421);
}
