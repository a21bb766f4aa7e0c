//! `gatehouse`: the headless face of Gatehouse. Same crates, same store as the app.

mod a2a;
mod approvers;
mod audit;
mod bench;
mod contacts;
mod email;
mod guardian;
mod mail;
mod mcp;
mod sites;
mod terminal;
mod trust;
mod uamp;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gatehouse_app::context::KeystoreKind;
use gatehouse_app::executors::ExecutorSpec;
use gatehouse_app::Context;
use terminal::{note, say};

#[derive(Parser)]
#[command(name = "gatehouse", version, about = "Your own gate for messages from AI agents (EPP v1 inbox)")]
struct Cli {
    /// Where the store and identity metadata live [default: the platform data dir]
    #[arg(long, global = true, env = "GATEHOUSE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Where the identity's secret key is kept: the OS keychain, or (explicit opt-in for
    /// headless hosts) a 0600 file in the data dir
    #[arg(long, global = true, env = "GATEHOUSE_KEYSTORE", default_value = "os")]
    keystore: KeystoreKind,
    /// A team's gate: keep the gate's tables in this PostgreSQL database
    /// (postgres://user:password@host/db) instead of the data dir; every node of the
    /// team names the same one and holds the same identity key (docs/team-gate.md). Its
    /// value holds a password: `--help` never shows it
    #[arg(long, global = true, env = "GATEHOUSE_DATABASE", value_name = "URL", hide_env_values = true)]
    database: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create this inbox's identity if missing; prints the public key (last line)
    Init,
    /// Print this inbox's public key
    Identity,
    /// Create your signing key for sending if missing (the same identity as the inbox); prints the public key
    Keygen,
    /// Manage the trust registry
    #[command(subcommand)]
    Trust(trust::TrustCmd),
    /// Contacts: the people behind trusted keys; safety codes; verifying a key
    #[command(subcommand)]
    Contacts(contacts::ContactsCmd),
    /// Unknown senders that knocked with a valid signature
    Pending {
        #[arg(long)]
        json: bool,
    },
    /// Run the inbox headless
    Serve {
        /// Address to listen on (loopback by default; anything else is your decision)
        #[arg(long, default_value = "127.0.0.1:8765")]
        listen: String,
        /// Also process *.json envelopes dropped into this folder
        #[arg(long)]
        watch: Option<PathBuf>,
        /// Also serve UAMP 1.0 over TLS 1.3 on this address (e.g. 127.0.0.1:8766)
        #[arg(long)]
        uamp_listen: Option<String>,
        /// A host name other machines use to reach this inbox (repeatable). Requests
        /// naming any host other than this machine's address or these are refused, so a
        /// web page cannot rebind its own name to the inbox
        #[arg(long = "public-name", value_name = "HOST")]
        public_names: Vec<String>,
    },
    /// UAMP: identity and certificate, tokens for senders, peers to send to
    #[command(subcommand)]
    Uamp(uamp::UampCmd),
    /// A2A: agents let in with a token you give them
    #[command(subcommand)]
    A2a(a2a::A2aCmd),
    /// MAIL: swarms, tasks followed live, task logs imported
    #[command(subcommand)]
    Mail(mail::MailCmd),
    /// Mail accounts followed for envelopes (EPP by email)
    #[command(subcommand)]
    Email(email::EmailCmd),
    /// The ASOP guardian: your agents, its rules, sessions and their decisions
    #[command(subcommand)]
    Guardian(guardian::GuardianCmd),
    /// MCP servers your AI app reaches through Gatehouse
    #[command(subcommand)]
    Mcp(mcp::McpCmd),
    /// IntentWeb: companies' sites, conversations with them, their keys
    #[command(subcommand)]
    Sites(sites::SitesCmd),
    /// The audit log: check it (or an export of it) against the gate's key; sign it now
    #[command(subcommand)]
    Audit(audit::AuditCmd),
    /// Devices that may decide what waits (a phone, a team member's desktop): invite, list,
    /// rename, remove
    #[command(subcommand)]
    Approvers(approvers::ApproversCmd),
    /// Write receipts, the audit log, IntentWeb conversations or the guardian's decisions
    /// to a JSON file
    Export {
        #[arg(value_enum)]
        kind: ExportArg,
        file: PathBuf,
    },
    /// Quiet hours, when the window collects requests into one digest instead of a
    /// notification each (shows them; --from and --to set them, --off turns them off)
    QuietHours {
        #[arg(long, value_name = "HH:MM", requires = "to")]
        from: Option<String>,
        #[arg(long, value_name = "HH:MM", requires = "from")]
        to: Option<String>,
        #[arg(long, conflicts_with_all = ["from", "to"])]
        off: bool,
    },
    /// Whether someone you trust, writing about a scope you have not allowed them, waits for
    /// you (on) or is only refused (off); without an argument, shows it
    AskNewScopes {
        #[arg(value_parser = ["on", "off"])]
        set: Option<String>,
    },
    /// How long refused submissions' bodies and receipts, audit entries and agents' steps
    /// are kept
    /// (shows it; the flags change it; 0 keeps forever)
    Retention {
        #[arg(long)]
        rejected_body_days: Option<u32>,
        #[arg(long)]
        rejected_receipt_days: Option<u32>,
        #[arg(long)]
        audit_days: Option<u32>,
        /// Days your agents' and MCP servers' decided steps are kept
        #[arg(long)]
        steps_days: Option<u32>,
    },
    /// Receipts of every submission, newest first
    Receipts {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Accepted envelopes, newest first
    Envelopes {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Choose what runs for accepted prompts
    #[command(subcommand)]
    Executor(ExecutorCmd),
    /// Measure: sign N envelopes from M senders, post them over loopback with C
    /// connections (or drop them in a watched folder) to a throwaway inbox
    Bench {
        #[arg(long, default_value_t = 10_000)]
        envelopes: usize,
        #[arg(long, default_value_t = 10)]
        senders: usize,
        #[arg(long, default_value_t = 32)]
        concurrency: usize,
        /// Drop files into a watched folder instead of posting
        #[arg(long)]
        folder: bool,
        /// Keep the throwaway inbox's data in this (new) directory, to inspect its store
        #[arg(long)]
        keep: Option<std::path::PathBuf>,
        /// Measure the EPP reference inbox beside this one, same client, same run: a
        /// checkout of github.com/elliptic1/external-prompt-protocol
        #[arg(long, value_name = "DIR", conflicts_with = "folder")]
        reference: Option<std::path::PathBuf>,
        /// The Python that runs the reference (with its dependencies installed)
        #[arg(long, value_name = "PYTHON", default_value = "python3", requires = "reference")]
        reference_python: std::path::PathBuf,
        /// How many `gatehouse serve` nodes share the load (with --database: a team's
        /// gate; connections go to the nodes in turn)
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
        nodes: u16,
        /// Post this many envelopes first, not measured (their figures are shown apart),
        /// so that the figures are of a server that has started, not of its start
        #[arg(long, default_value_t = 0, conflicts_with = "folder")]
        warm_up: usize,
    },
    /// Sign a prompt with your key and send it to an inbox (prints the receipt), or by mail
    Send {
        /// The inbox's submit URL, e.g. http://127.0.0.1:8765/epp/v1/submit, or
        /// mailto:someone@example.com (sent through a mail account's outgoing server)
        #[arg(long)]
        to: String,
        /// The mail account to send through (with --to mailto:), when several can
        #[arg(long)]
        account: Option<String>,
        /// The inbox's public key (64 hex)
        #[arg(long)]
        recipient: String,
        #[arg(long)]
        scope: String,
        #[arg(long)]
        prompt: String,
        #[arg(long)]
        payload_type: Option<String>,
        #[arg(long)]
        conversation_id: Option<String>,
        #[arg(long)]
        in_reply_to: Option<String>,
        /// Send on behalf of this principal's public key
        #[arg(long)]
        on_behalf_of: Option<String>,
        #[arg(long)]
        authorization: Option<String>,
        /// Context object as JSON
        #[arg(long)]
        context: Option<String>,
        /// Lifetime in seconds
        #[arg(long, default_value_t = 3600)]
        ttl: i64,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ExportArg {
    Receipts,
    Audit,
    Conversations,
    Guardian,
}

#[derive(Subcommand)]
enum ExecutorCmd {
    /// Show the executor per scope
    List,
    /// Allow on this machine every program and folder the executor setting names (a
    /// node of a team's gate runs only what its own operator allowed; `set` on this
    /// machine allows what it sets). Check `executor list` first
    Allow,
    /// Set the executor for a scope (or `default`)
    Set {
        scope: String,
        #[command(subcommand)]
        spec: SpecCmd,
    },
}

#[derive(Subcommand)]
enum SpecCmd {
    Noop,
    FileQueue {
        dir: PathBuf,
    },
    /// Program and arguments, run without a shell; the prompt arrives on stdin
    Command {
        #[arg(long, default_value_t = 60)]
        timeout_secs: u64,
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        argv: Vec<String>,
    },
    /// Ask your own model (OpenAI-compatible chat completions; Ollama here by default)
    Model {
        /// The model's name at the server (e.g. llama3.2)
        model: String,
        #[arg(long, default_value = gatehouse_app::executors::DEFAULT_MODEL_ENDPOINT)]
        endpoint: String,
        /// Said to the model before the sender's text
        #[arg(long)]
        system_prompt: Option<String>,
        #[arg(long, default_value_t = 300)]
        timeout_secs: u64,
        /// Read an API key for a cloud endpoint from stdin (kept in the OS keychain)
        #[arg(long)]
        api_key_stdin: bool,
    },
    /// Hand prompts to a connected MAIL swarm (see `gatehouse mail add`)
    Swarm {
        swarm: String,
        #[arg(long)]
        entrypoint: Option<String>,
    },
    /// Ask a UAMP peer you added (see `gatehouse uamp peer add`), by DID or name
    Peer {
        peer: String,
        #[arg(long, default_value_t = 300)]
        timeout_secs: u64,
    },
    /// Send to an A2A agent you added (see `gatehouse a2a agent add`), by name
    A2a {
        agent: String,
        #[arg(long, default_value_t = 300)]
        timeout_secs: u64,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A script asked for JSON gets the error as JSON too, its code a field.
            if std::env::args().any(|a| a == "--json") {
                terminal::note_verbatim(&serde_json::json!({"error": e}).to_string());
            } else {
                note!("error: {}", e.coded_message());
            }
            ExitCode::from(1)
        }
    }
}

pub(crate) use gatehouse_app::error::{Code, CommandError};

/// A command given something it cannot use: said with the code `INVALID`.
pub(crate) fn invalid(message: impl Into<String>) -> CommandError {
    CommandError::new(Code::Invalid, message)
}

/// A file, the terminal or the disk failed.
pub(crate) fn io_error(message: impl Into<String>) -> CommandError {
    CommandError::new(Code::Io, message)
}

/// Another machine (or a port) could not be reached.
pub(crate) fn unreachable(message: impl Into<String>) -> CommandError {
    CommandError::new(Code::Unreachable, message)
}

fn default_data_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("gatehouse")
}

fn check_key(key: &str) -> Result<String, CommandError> {
    if key.starts_with("did:key:") || key.starts_with("did:web:") || key.starts_with("asop:") || key.starts_with("a2a:") {
        // A UAMP sender, an agent of yours, an A2A agent: checked where it is added.
        return Ok(key.to_string());
    }
    gatehouse_epp::parse_public_key(key).map_err(|e| invalid(format!("{key:?} is not a usable public key: {e}")))?;
    Ok(key.to_ascii_lowercase())
}

/// Writes an export to the file the user named and says how many records it holds.
fn export(ctx: &Context, kind: gatehouse_app::export::ExportKind, file: &std::path::Path) -> Result<(), CommandError> {
    let n = gatehouse_app::export::write(ctx, kind, file)?;
    note!("wrote {n} record(s) to {}", file.display());
    Ok(())
}

fn print_json<T: serde::Serialize>(v: &T) {
    terminal::say_verbatim(&serde_json::to_string_pretty(v).expect("serialises"));
}

fn run(cli: Cli) -> Result<ExitCode, CommandError> {
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    let ks = cli.keystore;
    let database = cli.database.clone();
    let open = |create: bool| Context::open_at(data_dir.clone(), ks, create, database.as_deref());
    match cli.command {
        Command::Init | Command::Keygen => {
            let o = open(true)?;
            if o.created {
                note!("created a new identity in the {} keystore; data dir {}", o.keystore, data_dir.display());
            }
            say!("{}", o.public_key);
        }
        Command::Identity => say!("{}", open(false)?.public_key),
        Command::Trust(cmd) => trust::run(cmd, &open(false)?)?,
        Command::Contacts(cmd) => contacts::run(cmd, &open(false)?)?,
        Command::QuietHours { from, to, off } => {
            let store = open(false)?;
            let hours = match (from, to) {
                (Some(from), Some(to)) => Some(gatehouse_app::quiet::QuietHours { from, to }),
                _ => None,
            };
            if off || hours.is_some() {
                gatehouse_app::quiet::set(&store, hours)?;
            }
            print_json(&gatehouse_app::quiet::state(&store, gatehouse_app::clock::now())?);
        }
        Command::AskNewScopes { set } => trust::ask_new_scopes(&open(false)?, set.as_deref())?,
        Command::Retention { rejected_body_days, rejected_receipt_days, audit_days, steps_days } => {
            let store = open(false)?;
            let mut r = gatehouse_app::settings::retention(&store);
            if rejected_body_days.is_some() || rejected_receipt_days.is_some() || audit_days.is_some() || steps_days.is_some() {
                r.rejected_body_days = rejected_body_days.unwrap_or(r.rejected_body_days);
                r.rejected_receipt_days = rejected_receipt_days.unwrap_or(r.rejected_receipt_days);
                r.audit_days = audit_days.unwrap_or(r.audit_days);
                r.steps_days = steps_days.unwrap_or(r.steps_days);
                r = gatehouse_app::settings::set_retention(&store, &r)?;
            }
            print_json(&r);
        }
        Command::Pending { json } => {
            let list = gatehouse_app::history::pending_senders(&open(false)?)?;
            if json {
                print_json(&list);
            } else if list.is_empty() {
                note!("no pending sender requests");
            } else {
                for p in list {
                    say!(
                        "{}  {}  seen {}x  first {}  last {}  scopes {}",
                        gatehouse_app::names::shown(None, &p.public_key),
                        p.public_key,
                        p.count,
                        p.first_seen,
                        p.last_seen,
                        p.scopes_tried.join(",")
                    );
                }
            }
        }
        Command::Receipts { json, limit } => {
            let store = open(false)?;
            if json {
                // The wire receipt, with how it arrived beside it (Gatehouse's x- fields).
                print_json(&gatehouse_app::history::receipts(&store, limit)?);
            } else {
                for r in gatehouse_app::history::receipt_rows(&store, limit)? {
                    say!(
                        "{}  {:8}  {:18}  {}  {}  {}",
                        r.received_at,
                        r.status,
                        r.code.as_deref().unwrap_or("-"),
                        r.envelope_id.as_deref().unwrap_or("-"),
                        r.transport,
                        r.message.as_deref().unwrap_or(""),
                    );
                }
            }
        }
        Command::Envelopes { json, limit } => {
            let list = gatehouse_app::history::envelopes(&open(false)?, limit)?;
            if json {
                print_json(&list);
            } else {
                for e in list {
                    let prompt: String = e.prompt.chars().take(60).map(|c| if c.is_control() { ' ' } else { c }).collect();
                    say!(
                        "{}  {}  {}…  {}  {:9}  {}",
                        e.received_at,
                        e.envelope_id,
                        e.sender.get(..12).unwrap_or(&e.sender),
                        e.scope,
                        e.exec_status.as_str(),
                        prompt
                    );
                }
            }
        }
        Command::Executor(cmd) => {
            let store = open(false)?;
            match cmd {
                ExecutorCmd::List => print_json(&gatehouse_app::executors::get(&store)?),
                ExecutorCmd::Set { scope, spec } => {
                    let spec = match spec {
                        SpecCmd::Noop => ExecutorSpec::Noop,
                        SpecCmd::FileQueue { dir } => ExecutorSpec::FileQueue { dir: std::path::absolute(&dir).unwrap_or(dir) },
                        SpecCmd::Model { model, endpoint, system_prompt, timeout_secs, api_key_stdin } => {
                            let api_key_secret =
                                if api_key_stdin { Some(gatehouse_app::executors::keep_model_api_key(&data_dir, &scope, &uamp::read_token()?)?) } else { None };
                            ExecutorSpec::Model { endpoint, model, system_prompt, timeout_secs, api_key_secret }
                        }
                        SpecCmd::Peer { peer, timeout_secs } => gatehouse_app::executors::peer(&peer, timeout_secs),
                        SpecCmd::A2a { agent, timeout_secs } => gatehouse_app::executors::a2a_agent(&agent, timeout_secs),
                        SpecCmd::Swarm { swarm, entrypoint } => gatehouse_app::executors::swarm(&swarm, entrypoint.as_deref()),
                        SpecCmd::Command { timeout_secs, argv } => ExecutorSpec::Command { program: argv[0].clone(), args: argv[1..].to_vec(), timeout_secs },
                    };
                    // The user typed the program or folder here: that is the confirmation.
                    let cfg = uamp::runtime()?.block_on(gatehouse_app::executors::set_scope(&store, &scope, spec))?;
                    print_json(&cfg);
                }
                ExecutorCmd::Allow => {
                    // The operator of this machine typed it, having been shown the setting.
                    let added = gatehouse_app::executors::allow_here(&data_dir, &gatehouse_app::executors::get(&store)?)?;
                    if added.is_empty() {
                        note!("everything the executor setting names was already allowed on this machine");
                    }
                    for a in added {
                        note!("allowed on this machine: {a}");
                    }
                }
            }
        }
        Command::Uamp(cmd) => return uamp::run(cmd, &data_dir, open(true)?),
        Command::A2a(cmd) => return a2a::run(cmd, open(false)?),
        Command::Mail(cmd) => return mail::run(cmd, open(true)?),
        Command::Email(cmd) => return email::run(cmd, open(true)?),
        Command::Guardian(cmd) => return guardian::run(cmd, &open(false)?),
        Command::Mcp(cmd) => return mcp::run(cmd, &data_dir, || open(false)),
        Command::Sites(cmd) => return sites::run(cmd, open(false)?),
        Command::Audit(cmd) => return audit::run(cmd, || open(false)),
        Command::Approvers(cmd) => return approvers::run(cmd, &open(false)?),
        Command::Export { kind, file } => {
            use gatehouse_app::export::ExportKind;
            let kind = match kind {
                ExportArg::Receipts => ExportKind::Receipts,
                ExportArg::Audit => ExportKind::Audit,
                ExportArg::Conversations => ExportKind::Conversations,
                ExportArg::Guardian => ExportKind::Guardian,
            };
            export(&open(false)?, kind, &file)?;
        }
        Command::Serve { listen, watch, uamp_listen, public_names } => {
            let o = open(true)?;
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(async move {
                let doors = gatehouse_app::serve::Doors { epp: listen, uamp: uamp_listen, watch, public_names };
                let bound = gatehouse_app::serve::bind(&o, doors).await?;
                if !bound.epp.ip().is_loopback() {
                    note!("warning: listening on {}, which is reachable from other machines", bound.epp);
                }
                note!("Gatehouse inbox {} listening on http://{}/epp/v1/submit", o.public_key, bound.epp);
                if let Some(db) = o.team_database() {
                    note!("a node of a team's gate: its tables are in the {db}");
                }
                if let Some(w) = &bound.options.watch {
                    note!("watching {}", w.display());
                }
                // Asked for on the command line: UAMP that cannot listen stops the command.
                if let Some(u) = bound.uamp? {
                    if !u.at.ip().is_loopback() {
                        note!("warning: UAMP listening on {}, which is reachable from other machines", u.at);
                    }
                    note!("UAMP {} on https://{}/v1/messages (certificate SHA-256 {})", u.did, u.at, u.certificate);
                }
                for account in bound.email? {
                    note!("following mail account {account}");
                }
                let shutdown = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                #[cfg(unix)]
                let shutdown = async move {
                    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
                    tokio::select! { _ = shutdown => {}, _ = term.recv() => {} }
                };
                gatehouse_app::serve::open(&o, bound.options, &gatehouse_app::serve::Events::default()).run(shutdown).await
            })?;
        }
        Command::Bench { envelopes, senders, concurrency, folder, keep, reference, reference_python, nodes, warm_up } => {
            let reference = reference.map(|source| bench::reference::Reference { source, python: reference_python });
            // A wrong directory is said before anything is measured.
            if let Some(r) = &reference {
                r.check().map_err(|e| CommandError::new(Code::Invalid, e))?;
            }
            if nodes > 1 && database.is_none() {
                return Err(CommandError::new(Code::Invalid, "several nodes share one gate only on a database: add --database postgres://…".to_string()));
            }
            let args = bench::BenchArgs { envelopes, warm_up, senders, concurrency, folder, keep, reference, database: database.clone(), nodes: nodes.into() };
            bench::run(args).map_err(|e| CommandError::new(Code::Internal, e))?;
        }
        Command::Send { to, account, recipient, scope, prompt, payload_type, conversation_id, in_reply_to, on_behalf_of, authorization, context, ttl } => {
            let o = open(false)?;
            let mut d = gatehouse_epp::Draft::new(&check_key(&recipient)?, &scope, &prompt);
            d.payload_type = payload_type;
            d.conversation_id = conversation_id;
            d.in_reply_to = in_reply_to;
            d.on_behalf_of = on_behalf_of.map(|k| check_key(&k)).transpose()?;
            d.authorization = authorization;
            d.context =
                context.map(|c| serde_json::from_str::<serde_json::Value>(&c).map_err(|e| invalid(format!("--context is not JSON: {e}")))).transpose()?;
            d.ttl = chrono::Duration::seconds(ttl);
            let envelope = d.sign(&o.key, chrono::Utc::now());
            if to.starts_with("mailto:") {
                let value = serde_json::to_value(&envelope)?;
                let subject = format!("EPP envelope ({scope})");
                let said = uamp::runtime()?.block_on(gatehouse_app::email::send_envelope(&o, account.as_deref(), &to, &subject, &value))?;
                say!("{}", envelope["envelope_id"].as_str().unwrap_or_default());
                note!("{said}; its receipt comes back by mail");
                return Ok(ExitCode::SUCCESS);
            }
            let rt = tokio::runtime::Runtime::new()?;
            let (status, body) = rt.block_on(async {
                let resp = reqwest::Client::new().post(&to).json(&envelope).send().await.map_err(|e| unreachable(format!("could not reach {to}: {e}")))?;
                let status = resp.status();
                let body = resp.text().await.map_err(|e| unreachable(format!("{to} stopped answering: {e}")))?;
                Ok::<_, CommandError>((status, body))
            })?;
            match serde_json::from_str::<serde_json::Value>(&body) {
                Ok(v) => print_json(&v),
                Err(_) => terminal::say_lines(&body, ""),
            }
            if !status.is_success() {
                note!("inbox answered HTTP {status}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
