//! `gatehouse sites …`: IntentWeb from the command line, through the same application
//! layer as the window: sites added by origin, conversations started and answered (the
//! site's checklist answered with `--need NAME=VALUE`), a site's key pinned, exports.

use crate::{invalid, CommandError};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::sites::{self, ReplyInput, StartInput};
use gatehouse_app::sites::{IwMessageRow, Turn};
use gatehouse_app::Context;
use gatehouse_intentweb::FlowType;

#[derive(Subcommand)]
pub enum SitesCmd {
    /// Add (or refresh) a site by its origin; its manifest is fetched and checked first
    Add { origin: String },
    /// Sites you added
    List {
        #[arg(long)]
        json: bool,
    },
    /// Forget a site (its conversations are kept)
    Remove { origin: String },
    /// Start a conversation: say what you would like to do
    Talk {
        origin: String,
        intent: String,
        /// One of the capabilities its manifest lists
        #[arg(long)]
        capability: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Answer the site in a conversation: what it needs (`--need NAME=VALUE`, repeatable)
    /// and/or a free answer
    Answer {
        interaction_id: String,
        message: Option<String>,
        #[arg(long = "need", value_name = "NAME=VALUE")]
        needs: Vec<String>,
        /// Ask the site a question back instead of answering
        #[arg(long)]
        ask: bool,
        #[arg(long)]
        json: bool,
    },
    /// Pin the key a site signed its first answer with (shown by `talk`)
    Pin { origin: String, kid: String },
    /// Your conversations, newest first
    Conversations {
        #[arg(long)]
        json: bool,
    },
    /// One conversation with every message
    Show {
        interaction_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Write every conversation with all its messages to a JSON file
    Export { file: PathBuf },
}

fn required(m: &IwMessageRow) -> Vec<String> {
    m.envelope["required_information"].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

fn print_message(m: &IwMessageRow) {
    let who = if m.direction == "out" { "you" } else { "site" };
    let refused = if m.accepted { "" } else { "  [REFUSED]" };
    println!("{}  {who:<4} {}{refused}", m.at, m.flow_type);
    for line in m.message.lines() {
        println!("    {line}");
    }
    if let Some(w) = &m.warning {
        println!("    ! {w}");
    }
}

/// The key a site signed its first answer with, while it is not pinned.
fn new_key(m: &IwMessageRow) -> Option<&str> {
    m.verdict.as_ref().filter(|v| v["kind"] == "new_key").and_then(|v| v["kid"].as_str())
}

fn print_turn(t: &Turn) {
    println!("conversation {}  with {}  [{}]", t.conversation.interaction_id, t.conversation.origin, t.conversation.state);
    print_message(&t.sent);
    print_message(&t.received);
    if let Some(kid) = new_key(&t.received) {
        println!("first contact: the site signed with {kid}; if that is its key, pin it:");
        println!("  gatehouse sites pin {} {kid}", t.conversation.origin);
    }
    let needs = required(&t.received);
    if t.received.accepted && !needs.is_empty() {
        println!("the site needs:");
        for n in &needs {
            println!("  - {n}");
        }
        println!("answer with: gatehouse sites answer {} --need \"{}=…\"", t.conversation.interaction_id, needs[0]);
    }
}

/// `NAME=VALUE` pairs as the lines the site reads (the window's checklist writes the same).
fn needs_text(needs: &[String]) -> Result<String, CommandError> {
    let mut lines = Vec::new();
    for n in needs {
        let (name, value) = n.split_once('=').ok_or_else(|| invalid(format!("--need {n:?}: write it as NAME=VALUE")))?;
        lines.push(format!("{}: {}", name.trim(), value.trim()));
    }
    Ok(lines.join("\n"))
}

pub fn run(cmd: SitesCmd, o: Context) -> Result<ExitCode, CommandError> {
    let store = o.store.clone();
    let key = &o.key.clone();
    let rt = crate::uamp::runtime;
    match cmd {
        SitesCmd::Add { origin } => {
            let s = rt()?.block_on(sites::add(store, &origin))?;
            println!("{}  {}", s.origin, s.company);
            for c in s.manifest["capabilities"].as_array().into_iter().flatten() {
                println!("  can: {}  {}", c["intent"].as_str().unwrap_or("?"), c["description"].as_str().unwrap_or(""));
            }
        }
        SitesCmd::List { json } => {
            let list = sites::list(&store)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                eprintln!("no sites; add one with `gatehouse sites add https://shop.example`");
            }
            for s in list.iter().filter(|_| !json) {
                let pinned = s.site_key.as_deref().map(|k| format!("  pinned {k}")).unwrap_or_default();
                println!("{}  {}  fetched {}{pinned}", s.origin, s.company, s.fetched_at);
            }
        }
        SitesCmd::Remove { origin } => {
            sites::remove(&store, &origin)?;
            eprintln!("removed {origin}; its conversations are kept");
        }
        SitesCmd::Talk { origin, intent, capability, json } => {
            let t = rt()?.block_on(sites::start(store, key, StartInput { origin, capability, message: intent }))?;
            if json {
                crate::print_json(&t);
            } else {
                print_turn(&t);
            }
        }
        SitesCmd::Answer { interaction_id, message, needs, ask, json } => {
            let text = [needs_text(&needs)?, message.unwrap_or_default()].into_iter().filter(|s| !s.trim().is_empty()).collect::<Vec<_>>().join("\n");
            let flow_type = Some(if ask { FlowType::ClarificationRequest } else { FlowType::InformationResponse });
            let t = rt()?.block_on(sites::reply(store, key, ReplyInput { interaction_id, message: text, flow_type }))?;
            if json {
                crate::print_json(&t);
            } else {
                print_turn(&t);
            }
        }
        SitesCmd::Pin { origin, kid } => {
            sites::pin(&store, &origin, &kid)?;
            eprintln!("pinned {kid} for {origin}: its answers are now checked against this key");
        }
        SitesCmd::Conversations { json } => {
            let list = sites::conversations(&store, 500)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                eprintln!("no conversations; start one with `gatehouse sites talk ORIGIN \"what you want\"`");
            }
            for c in list.iter().filter(|_| !json) {
                let with = c.company.as_deref().unwrap_or(&c.conversation.origin);
                println!("{}  {}  {:<8} {}  {}", c.conversation.updated_at, c.conversation.interaction_id, c.conversation.state, with, c.conversation.initial);
            }
        }
        SitesCmd::Show { interaction_id, json } => {
            let v = sites::conversation(&store, &interaction_id)?;
            if json {
                crate::print_json(&v);
            } else {
                let with = v.company.as_deref().unwrap_or(&v.conversation.origin);
                println!("conversation {}  with {with}  [{}]", v.conversation.interaction_id, v.conversation.state);
                if let Some(k) = &v.pinned_key {
                    println!("site key pinned: {k}");
                }
                v.messages.iter().for_each(print_message);
            }
        }
        SitesCmd::Export { file } => crate::export(&o, gatehouse_app::export::ExportKind::Conversations, &file)?,
    }
    Ok(ExitCode::SUCCESS)
}
