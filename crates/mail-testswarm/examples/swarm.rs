//! Runs two test swarms on loopback for trying Gatehouse's MAIL viewer by hand:
//! `cargo run -p gatehouse-mail-testswarm --example swarm [PORT]` serves swarm-a on PORT
//! (default 8000) with swarm-b behind it for interswarm hops. Tokens: user-token,
//! admin-token, agent-token.

use gatehouse_mail_testswarm::{run, Config, Remote, Swarm};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(8000);
    let b = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let b_url = format!("http://{}", b.local_addr()?);
    tokio::spawn(run(b, Swarm::new(Config::new("swarm-b")), std::future::pending()));
    let mut cfg = Config::new("swarm-a");
    cfg.step = std::time::Duration::from_millis(400);
    cfg.remote = Some(Remote { swarm: "swarm-b".into(), base_url: b_url, agent_token: "agent-token".into() });
    let a = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("MAIL test swarm-a on http://{} (tokens: user-token, admin-token, agent-token)", a.local_addr()?);
    run(a, Swarm::new(cfg), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
