//! `gatehouse uamp …`: this inbox's UAMP identity and certificate, tokens for senders,
//! and the peers it sends to.

use crate::terminal::{note, say};
use crate::{invalid, io_error, CommandError};
use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::peers::{Ask, DEFAULT_WINDOW};
use gatehouse_app::Context;

#[derive(Subcommand)]
pub enum UampCmd {
    /// This inbox's DID and the TLS certificate fingerprint peers pin (made if missing)
    Info {
        #[arg(long)]
        json: bool,
    },
    /// Issue a bearer token for a trusted UAMP sender (shown once; only its hash is kept)
    Token { sender: String },
    /// Revoke every bearer token of a sender
    Revoke { sender: String },
    /// Peers this inbox sends to
    #[command(subcommand)]
    Peer(PeerCmd),
    /// Ask a peer: sends an `ask`, shows the stream's progress, saves the answer
    Send {
        /// The peer's name or DID
        peer: String,
        /// What to ask (or --body-file)
        text: Option<String>,
        /// Read the body from this file instead
        #[arg(long, conflicts_with = "text")]
        body_file: Option<PathBuf>,
        /// The body's media type
        #[arg(long, default_value = "text/plain")]
        body_type: String,
        /// Frames the peer may send before this side acknowledges
        #[arg(long, default_value_t = DEFAULT_WINDOW)]
        window: u32,
        /// Also copy the answer here (`-` writes it to stdout)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the final state as JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum PeerCmd {
    /// Add a peer by its address: its signed manifest is fetched and verified, and its
    /// certificate fingerprint shown; you confirm it (or give --pin) before it is kept
    Add {
        /// https://host:port (or host:port)
        url: String,
        #[arg(long)]
        name: String,
        /// The SHA-256 certificate fingerprint the peer's owner gave you
        #[arg(long)]
        pin: Option<String>,
        /// Read a bearer token the peer issued to you from stdin (kept in the keychain); not
        /// needed when the peer trusts your DID, since Gatehouse presents its certificate
        #[arg(long)]
        token_stdin: bool,
    },
    /// Set (or replace) the bearer token a peer issued to you, read from stdin
    Token {
        peer: String,
    },
    /// Peers, with their addresses and pinned fingerprints
    List {
        #[arg(long)]
        json: bool,
    },
    Remove {
        peer: String,
    },
}

pub(crate) fn read_token() -> Result<String, CommandError> {
    if std::io::stdin().is_terminal() {
        crate::terminal::ask("paste the token and press Enter: ");
    }
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).map_err(|e| io_error(format!("reading the token: {e}")))?;
    let t = s.lines().next().unwrap_or("").trim().to_string();
    if t.is_empty() {
        return Err(invalid("no token on stdin"));
    }
    Ok(t)
}

fn confirm(question: &str) -> bool {
    matches!(crate::terminal::answer(&format!("{question} [y/N] ")).as_str(), "y" | "Y" | "yes")
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CommandError> {
    Ok(tokio::runtime::Runtime::new()?)
}

pub fn run(cmd: UampCmd, data_dir: &Path, o: Context) -> Result<ExitCode, CommandError> {
    let key = &o.key;
    match cmd {
        UampCmd::Info { json } => {
            let id = gatehouse_app::streams::identity(data_dir, key)?;
            if json {
                crate::print_json(&serde_json::json!({"did": id.did, "certificate_sha256": id.certificate.fingerprint, "certificate_pem": id.certificate.pem}));
            } else {
                say!("DID:                  {}", id.did);
                say!("certificate SHA-256:  {}", id.certificate.fingerprint);
            }
        }
        UampCmd::Token { sender } => {
            let token = gatehouse_app::trust::token_issue(&o, &sender, chrono::Utc::now())?;
            note!("give this token to {sender}; it is not shown again:");
            say!("{token}");
        }
        UampCmd::Revoke { sender } => {
            let n = gatehouse_app::trust::token_revoke(&o, &sender, chrono::Utc::now())?;
            note!("revoked {n} token(s) of {sender}");
        }
        UampCmd::Peer(PeerCmd::Add { url, name, pin, token_stdin }) => {
            let found = runtime()?.block_on(gatehouse_app::peers::discover(&url, pin.as_deref()))?;
            note!("peer:                 {}", found.did);
            note!("address:              {}", found.url);
            note!("certificate SHA-256:  {}", found.cert_sha256);
            note!("manifest:             {} — {}", found.manifest.agent, found.manifest.description);
            note!("                      intents {}; auth {}", found.manifest.intents.join(", "), found.manifest.auth.join(", "));
            if pin.is_none() {
                // Nothing is kept until the user has compared the fingerprint.
                if !std::io::stdin().is_terminal() || token_stdin {
                    return Err(invalid(format!(
                        "compare the fingerprint above with the one the peer's owner sees (`gatehouse uamp info` there), then run again with --pin {}",
                        found.cert_sha256
                    )));
                }
                if !confirm("Does this fingerprint match the one the peer's owner sees?") {
                    return Err(invalid("not added"));
                }
            }
            let token = if token_stdin { Some(read_token()?) } else { None };
            let pin = found.cert_sha256.clone();
            let row = runtime()?.block_on(gatehouse_app::peers::add(&o, &url, &name, &pin, token))?;
            note!("added {} ({}); this inbox is {} to it", row.name, row.did, gatehouse_uamp::sign::did_of(key));
        }
        UampCmd::Peer(PeerCmd::Token { peer }) => {
            let t = read_token()?;
            let row = gatehouse_app::peers::set_token(&o, &peer, &t)?;
            note!("kept the token for {} in the keychain", row.name);
        }
        UampCmd::Peer(PeerCmd::List { json }) => {
            let peers = gatehouse_app::peers::list(&o)?;
            if json {
                crate::print_json(&peers);
            } else {
                for p in peers.into_iter().map(|p| p.peer) {
                    say!("{}\t{}\t{}\t{}", p.name, p.did, p.url, p.cert_sha256);
                }
            }
        }
        UampCmd::Peer(PeerCmd::Remove { peer }) => {
            let row = gatehouse_app::peers::remove(&o, &peer)?;
            note!("removed {}", row.name);
        }
        UampCmd::Send { peer, text, body_file, body_type, window, out, json } => {
            let content = match (text, body_file) {
                (Some(t), _) => t,
                (None, Some(f)) => std::fs::read_to_string(&f).map_err(|e| io_error(format!("{}: {e}", f.display())))?,
                (None, None) => return Err(invalid("say what to ask: `gatehouse uamp send PEER \"…\"` or --body-file FILE")),
            };
            let ask = Ask { body_type, content, delta_window: window };
            let bar = progress_bar();
            let row = gatehouse_app::peers::find(&o, &peer)?;
            let result = runtime()?.block_on(gatehouse_app::peers::ask(&o, &row, &ask, |p| {
                match p.pct {
                    Some(pct) => bar.set_position(pct.round() as u64),
                    None => bar.tick(),
                }
                bar.set_message(crate::terminal::inert(&format!("{} · {} frames · {}", p.state, p.frames, human_bytes(p.bytes))).into_owned());
            }));
            bar.finish_and_clear();
            let end = result?;
            if let (Some(dest), Some(file)) = (&out, &end.file) {
                if dest.as_os_str() == "-" {
                    let bytes = std::fs::read(file).map_err(|e| io_error(format!("{}: {e}", file.display())))?;
                    std::io::stdout().write_all(&bytes)?;
                } else {
                    std::fs::copy(file, dest).map_err(|e| io_error(format!("copying to {}: {e}", dest.display())))?;
                }
            }
            if json {
                crate::print_json(&end);
            } else {
                note!(
                    "{} · {} frames · {}{}",
                    end.state,
                    end.frames,
                    human_bytes(end.bytes),
                    end.mime.as_deref().map(|m| format!(" · {m}")).unwrap_or_default()
                );
                if let Some(f) = &end.file {
                    if out.is_none() {
                        say!("{}", f.display());
                    }
                }
            }
            if end.state != "COMPLETED" {
                let why = end.detail.as_ref().and_then(|d| d.get("message")).and_then(|m| m.as_str()).unwrap_or("");
                note!("the peer did not complete the ask: {why}");
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A bar on a terminal; nothing (the final line only) when stderr is a pipe or a log.
fn progress_bar() -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(100);
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} [{bar:30}] {pos:>3}% {msg}").expect("valid template").progress_chars("=> "));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
