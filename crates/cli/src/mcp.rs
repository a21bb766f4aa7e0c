//! `gatehouse mcp …`: MCP servers your AI app reaches through Gatehouse: running one behind
//! the gate (`wrap`), and the servers, their rules and their calls, through the same
//! application layer as the window.

use crate::terminal::{note, say};
use crate::CommandError;
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::Context;

#[derive(Subcommand)]
pub enum McpCmd {
    /// Run an MCP server behind Gatehouse: put this in your AI app's MCP configuration in
    /// place of the server's command (`gatehouse mcp wrap --name files -- npx server …`).
    /// Every tool call is judged by your running Gatehouse: the server asks to be let in
    /// once, then your rules decide each call, or you are asked.
    Wrap {
        /// What you call this server (letters, digits, - and _)
        #[arg(long)]
        name: String,
        /// Where your Gatehouse listens, when not at the inbox's default address
        /// (http://127.0.0.1:8765, or $GATEHOUSE_PORT)
        #[arg(long, value_name = "URL")]
        gate: Option<String>,
        /// A server reached by address (Streamable HTTP: https, or http on this computer)
        /// instead of a command
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The server's command and its arguments, after --
        #[arg(last = true, required_unless_present = "url", value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Add a server by address that your Gatehouse serves to your AI app (it connects to
    /// the server; your app connects to it): prints what to put in your app's MCP
    /// configuration. A credential the server needs is read from stdin and kept in your
    /// keychain, never in a file
    Add {
        /// What you call this server (letters, digits, - and _)
        name: String,
        /// The server's address (https, or http on this computer)
        #[arg(long)]
        url: String,
        /// Read the value of the Authorization header the server wants from stdin
        /// (`Bearer …`)
        #[arg(long)]
        credential_stdin: bool,
        /// Where your Gatehouse listens, when not at the inbox's default address
        #[arg(long, value_name = "URL")]
        gate: Option<String>,
    },
    /// Remove a server you added by address, and its credential
    Remove { name: String },
    /// The MCP servers Gatehouse knows: let in, waiting to be let in, or blocked
    List {
        #[arg(long)]
        json: bool,
    },
    /// Let in a server that asked (by its name, or its key when two share a name)
    Allow {
        server: String,
        /// What to call it
        #[arg(long)]
        name: Option<String>,
    },
    /// A server's tools: as you let them in, and those that differ now (held from your AI)
    Tools {
        server: String,
        #[arg(long)]
        json: bool,
    },
    /// Accept a server's held tools as they are now (look at them with `tools` first)
    Accept { server: String },
    /// How long a call no rule decides waits for you before it is refused (1 to 900 s;
    /// 120 s unless set)
    Timeout { server: String, seconds: u64 },
    /// The rules that decide a server's calls
    #[command(subcommand)]
    Rules(RulesCmd),
    /// A server's calls, newest first, with what became of each
    Log {
        server: String,
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

#[derive(Subcommand)]
pub enum RulesCmd {
    /// The rules for a server's calls (and those for every agent)
    List {
        server: String,
        #[arg(long)]
        json: bool,
    },
    /// Add a rule for one of a server's tools; the most specific rule decides
    Add {
        server: String,
        /// The tool, or * (every tool)
        #[arg(long, default_value = "*")]
        tool: String,
        #[command(flatten)]
        then: crate::guardian::RuleArgs,
    },
}

/// `wrap` runs on the process's own stdin and stdout, which are the app's MCP channel:
/// nothing else is printed there, and it opens only the server's key in the data dir (an
/// app starts its servers with little of the user's environment: no keychain). The rest
/// open the data dir as every command does.
pub fn run(cmd: McpCmd, data_dir: &std::path::Path, open: impl FnOnce() -> Result<Context, CommandError>) -> Result<ExitCode, CommandError> {
    match cmd {
        McpCmd::Wrap { name, gate, url, command } => {
            let server = match (&url, command.split_first()) {
                (Some(url), _) => gatehouse_app::mcp::Server::Address(url),
                (None, Some((program, args))) => gatehouse_app::mcp::Server::Command { program, args },
                (None, None) => return Err(crate::invalid("name the server's command after --, or its address with --url")),
            };
            // One thread: a message passes from one side to the other without waking another
            // thread for it (a long answer is read off it, on the blocking pool).
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let ended = rt.block_on(async {
                let (stdin, stdout) = crate::terminal::protocol_channel();
                gatehouse_app::mcp::wrap(data_dir, &name, server, gate.as_deref(), tokio::io::BufReader::new(stdin), stdout).await
            });
            // A read of the app's stdin may still be waiting in a thread of the runtime (a
            // terminal's or a file's, read as tokio reads them: `protocol_channel`; the
            // server went first, and the app still holds its side open): the wrap ends now
            // all the same, so the app sees its server gone instead of waiting for it.
            rt.shutdown_timeout(std::time::Duration::from_millis(200));
            ended?;
        }
        McpCmd::Add { name, url, credential_stdin, gate } => {
            let credential = if credential_stdin { Some(crate::uamp::read_token()?) } else { None };
            let added = gatehouse_app::mcp::remote::add(&open()?, &name, &url, credential.as_deref(), &gatehouse_app::mcp::gate_url(gate.as_deref()))?;
            note!("added {} ({url}); put this in your AI app's MCP configuration (the token is shown this once):", added.name);
            let config = serde_json::json!({"mcpServers": {added.name.clone(): {"type": "http", "url": added.url, "headers": {"Authorization": format!("Bearer {}", added.token)}}}});
            crate::print_json(&config);
        }
        McpCmd::Remove { name } => {
            gatehouse_app::mcp::remote::remove(&open()?, &name)?;
            note!("removed {name}: your app can no longer reach it through Gatehouse");
        }
        McpCmd::List { json } => {
            let list = gatehouse_app::mcp::servers(&open()?)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no MCP server has come to Gatehouse yet (run one with `gatehouse mcp wrap`)");
            }
            for s in list.iter().filter(|_| !json) {
                say!("{:<8}  {:<16}  {}  since {}  {}", s.state, s.name, s.shown_as.as_deref().unwrap_or(""), s.since, s.key);
            }
        }
        McpCmd::Allow { server, name } => {
            let (e, tools) = gatehouse_app::mcp::allow(&open()?, &server, name)?;
            note!("let in {} ({}): its calls are now decided by your rules, or asked about", e.name, e.public_key);
            match tools.is_empty() {
                true => note!("it had listed no tools: each it lists will wait for you (`gatehouse mcp tools {server}`)"),
                false => note!("its tools as you let them in: {}", tools.join(", ")),
            }
        }
        McpCmd::Tools { server, json } => {
            let t = gatehouse_app::mcp::tools(&open()?, &server)?;
            if json {
                crate::print_json(&t);
                return Ok(ExitCode::SUCCESS);
            }
            let said = |p: &serde_json::Value| p["description"].as_str().unwrap_or("").to_string();
            for p in &t.pinned {
                say!("let in   {:<24}  {}", p.tool, said(&p.pin));
            }
            for h in &t.held {
                let what = if h.pinned.is_some() { "changed" } else { "new" };
                say!("held     {:<24}  ({what}) {}", h.tool, said(&h.now));
                if let Some(was) = &h.pinned {
                    say!("           was: {}", said(was));
                }
                for f in &h.risk {
                    say!("           ⚠ {}", f.why);
                }
            }
            if t.pinned.is_empty() && t.held.is_empty() {
                note!("{server} has listed no tools yet");
            }
        }
        McpCmd::Timeout { server, seconds } => {
            let wait = gatehouse_app::mcp::set_timeout(&open()?, &server, seconds)?;
            note!("a call of {server} that asks you waits {} s, then is refused", wait.as_secs());
        }
        McpCmd::Accept { server } => {
            let names = gatehouse_app::mcp::accept(&open()?, &server)?;
            note!("accepted for {server}: {} (your AI sees them from its next list)", names.join(", "));
        }
        McpCmd::Rules(RulesCmd::List { server, json }) => {
            let rules = gatehouse_app::mcp::rules(&open()?, &server)?;
            if json {
                crate::print_json(&rules);
            } else if rules.is_empty() {
                note!("no rules for {server}: every call is asked about");
            }
            for r in rules.iter().filter(|_| !json) {
                say!("{}", crate::guardian::rule_line(r));
            }
        }
        McpCmd::Rules(RulesCmd::Add { server, tool, then }) => {
            // The server's agent and method are the server's own (`mcp::rule_add` sets them).
            let row = gatehouse_app::mcp::rule_add(&open()?, &server, then.input(String::new(), String::new(), tool))?;
            say!("{}", row.id);
            note!("added rule {} for {server}", row.id);
        }
        McpCmd::Log { server, json, limit } => {
            let steps = gatehouse_app::mcp::log(&open()?, &server, limit)?;
            if json {
                crate::print_json(&steps);
            } else if steps.is_empty() {
                note!("no calls from {server} yet");
            }
            for s in steps.iter().filter(|_| !json) {
                say!("{}", crate::guardian::step_line(s));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
