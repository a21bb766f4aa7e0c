//! `gatehouse a2a …`: A2A agents let in with a token you give them, and the agents you
//! send to.

use crate::terminal::{note, say};
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::Context;

use crate::CommandError;

#[derive(Subcommand)]
pub enum A2aCmd {
    /// Let a new A2A agent in with a bearer token (shown once; only its hash is kept).
    /// An agent with a client certificate needs none: it knocks, and you are asked
    Token {
        /// What you call this agent
        #[arg(long)]
        name: String,
        /// A scope it may ask for (repeatable; default: ask)
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Print the token and the contact as JSON
        #[arg(long)]
        json: bool,
    },
    /// What the agent at an address says of itself (its card), without adding it
    Card { url: String },
    /// Tasks A2A agents sent here, newest first
    Tasks {
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// Agents you send to
    #[command(subcommand)]
    Agent(AgentCmd),
    /// Let A2A agents on this computer call over plain HTTP on the inbox's loopback
    /// address (they still need a token), or stop it; without on/off, say which it is
    Plain {
        #[arg(value_parser = ["on", "off"])]
        state: Option<String>,
    },
    /// Send a message to an agent you added and print its answer
    Send {
        agent: String,
        text: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Add an agent by its address (https://…, or http:// on this machine): its card is
    /// read now and its endpoint must be on that address
    Add {
        url: String,
        #[arg(long)]
        name: String,
        /// Read the bearer token the agent gave you from stdin (kept in the keychain)
        #[arg(long)]
        token_stdin: bool,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Remove {
        name: String,
    },
}

pub fn run(cmd: A2aCmd, o: Context) -> Result<ExitCode, CommandError> {
    match cmd {
        A2aCmd::Token { name, scopes, json } => {
            let issued = gatehouse_app::a2a::token_issue(&o, &name, &scopes, chrono::Utc::now())?;
            if json {
                crate::print_json(&issued);
            } else {
                note!("{} may now ask for {}; give it this token, which is not shown again:", issued.entry.name, issued.entry.policy.allowed_scopes.join(", "));
                say!("{}", issued.token);
            }
        }
        A2aCmd::Card { url } => {
            let card = crate::uamp::runtime()?.block_on(gatehouse_app::a2a::card(&url))?;
            crate::print_json(&serde_json::json!({"url": card.url, "endpoint": card.endpoint, "name": card.card_name, "streaming": card.streaming}));
        }
        A2aCmd::Tasks { limit, json } => {
            let tasks = gatehouse_app::a2a::tasks(&o, limit)?;
            if json {
                crate::print_json(&tasks);
            } else if tasks.is_empty() {
                note!("no A2A tasks");
            } else {
                for t in tasks {
                    let state = t.exec_status.map(|s| s.as_str().to_string()).unwrap_or_else(|| t.status.clone());
                    let who = t.sender_name.or(t.sender).unwrap_or_default();
                    say!("{}  {}  {}  {}  {}", t.receipt_id, t.received_at, state, who, t.prompt_preview.unwrap_or_default());
                }
            }
        }
        A2aCmd::Agent(AgentCmd::Add { url, name, token_stdin }) => {
            let token = if token_stdin { Some(crate::uamp::read_token()?) } else { None };
            let row = crate::uamp::runtime()?.block_on(gatehouse_app::a2a::agent_add(&o, &name, &url, token))?;
            note!("added {} at {} (its card calls it {:?}; endpoint {})", row.name, row.url, row.card_name, row.endpoint);
        }
        A2aCmd::Agent(AgentCmd::List { json }) => {
            let list = gatehouse_app::a2a::agent_list(&o)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no A2A agents added");
            } else {
                for a in list {
                    say!("{}  {}  card: {:?}{}", a.name, a.url, a.card_name, if a.has_token { "  (token kept)" } else { "" });
                }
            }
        }
        A2aCmd::Agent(AgentCmd::Remove { name }) => {
            gatehouse_app::a2a::agent_remove(&o, &name)?;
            note!("removed {name}");
        }
        A2aCmd::Plain { state } => {
            let on = match state.as_deref() {
                Some(s) => gatehouse_app::a2a::set_plain_loopback(&o, s == "on")?,
                None => gatehouse_app::a2a::plain_loopback(&o)?,
            };
            say!(
                "{}",
                if on {
                    "A2A agents on this computer may call over plain HTTP (with a token you issued)"
                } else {
                    "A2A is served over TLS only; plain HTTP from this computer is off"
                }
            );
        }
        A2aCmd::Send { agent, text, json } => {
            let answer = crate::uamp::runtime()?.block_on(gatehouse_app::a2a::agent_send(&o, &agent, &text))?;
            if json {
                crate::print_json(&serde_json::json!({"task_id": answer.task_id, "answer": answer.text}));
            } else {
                crate::terminal::say_lines(&answer.text, "");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
