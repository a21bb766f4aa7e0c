//! `gatehouse sites …`: IntentWeb from the command line, through the same application
//! layer as the window: sites added by origin, conversations started and answered (the
//! site's checklist answered with `--need NAME=VALUE`), a site's key pinned, exports.

use crate::terminal::{note, say};
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
    say!("{}  {who:<4} {}{refused}", m.at, m.flow_type);
    crate::terminal::say_lines(&m.message, "    ");
    if let Some(w) = &m.warning {
        say!("    ! {w}");
    }
    // What the site said of the outcome, when its signature does not cover it: a claim.
    let signed = m.verdict.as_ref().is_some_and(|v| v["kind"] == "verified" || v["kind"] == "new_key");
    if m.direction == "in" && m.accepted && !signed {
        for field in ["status", "external_id"] {
            if let Some(v) = m.envelope[field].as_str() {
                say!("    (the site claims, unsigned) {field}: {v}");
            }
        }
    }
}

/// The exit status of a turn: 2 when the site's answer was refused (it is kept and shown,
/// and changed nothing), so a script can tell it from an answer taken.
fn turn_status(t: &Turn) -> ExitCode {
    if t.received.accepted {
        ExitCode::SUCCESS
    } else {
        note!("the site's answer was refused: {}", t.received.warning.as_deref().unwrap_or("it did not check out"));
        ExitCode::from(2)
    }
}

/// The key a site signed its first answer with, while it is not pinned.
fn new_key(m: &IwMessageRow) -> Option<&str> {
    m.verdict.as_ref().filter(|v| v["kind"] == "new_key").and_then(|v| v["kid"].as_str())
}

fn print_turn(t: &Turn) {
    say!("conversation {}  with {}  [{}]", t.conversation.interaction_id, t.conversation.origin, t.conversation.state);
    print_message(&t.sent);
    print_message(&t.received);
    if let Some(kid) = new_key(&t.received) {
        say!("first contact: the site signed with {kid}; if that is its key, pin it:");
        say!("  gatehouse sites pin {} {kid}", t.conversation.origin);
    }
    let needs = required(&t.received);
    if t.received.accepted && !needs.is_empty() {
        say!("the site needs:");
        for n in &needs {
            say!("  - {n}");
        }
        say!("answer with: gatehouse sites answer {} --need \"{}=…\"", t.conversation.interaction_id, needs[0]);
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
    let store = &o;
    let rt = crate::uamp::runtime;
    match cmd {
        SitesCmd::Add { origin } => {
            let s = rt()?.block_on(sites::add(store, &origin))?;
            say!("{}  {}", s.origin, s.company);
            for c in s.manifest["capabilities"].as_array().into_iter().flatten() {
                say!("  can: {}  {}", c["intent"].as_str().unwrap_or("?"), c["description"].as_str().unwrap_or(""));
            }
        }
        SitesCmd::List { json } => {
            let list = sites::list(store)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no sites; add one with `gatehouse sites add https://shop.example`");
            }
            for s in list.iter().filter(|_| !json) {
                let pinned = s.site_key.as_deref().map(|k| format!("  pinned {k}")).unwrap_or_default();
                say!("{}  {}  fetched {}{pinned}", s.origin, s.company, s.fetched_at);
            }
        }
        SitesCmd::Remove { origin } => {
            sites::remove(store, &origin)?;
            note!("removed {origin}; its conversations are kept");
        }
        SitesCmd::Talk { origin, intent, capability, json } => {
            let t = rt()?.block_on(sites::start(store, StartInput { origin, capability, message: intent }))?;
            if json {
                crate::print_json(&t);
            } else {
                print_turn(&t);
            }
            return Ok(turn_status(&t));
        }
        SitesCmd::Answer { interaction_id, message, needs, ask, json } => {
            let text = [needs_text(&needs)?, message.unwrap_or_default()].into_iter().filter(|s| !s.trim().is_empty()).collect::<Vec<_>>().join("\n");
            let flow_type = Some(if ask { FlowType::ClarificationRequest } else { FlowType::InformationResponse });
            let t = rt()?.block_on(sites::reply(store, ReplyInput { interaction_id, message: text, flow_type }))?;
            if json {
                crate::print_json(&t);
            } else {
                print_turn(&t);
            }
            return Ok(turn_status(&t));
        }
        SitesCmd::Pin { origin, kid } => {
            sites::pin(store, &origin, &kid)?;
            note!("pinned {kid} for {origin}: its answers are now checked against this key");
        }
        SitesCmd::Conversations { json } => {
            let list = sites::conversations(store, 500)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no conversations; start one with `gatehouse sites talk ORIGIN \"what you want\"`");
            }
            for c in list.iter().filter(|_| !json) {
                let with = c.company.as_deref().unwrap_or(&c.conversation.origin);
                say!("{}  {}  {:<8} {}  {}", c.conversation.updated_at, c.conversation.interaction_id, c.conversation.state, with, c.conversation.initial);
            }
        }
        SitesCmd::Show { interaction_id, json } => {
            let v = sites::conversation(store, &interaction_id)?;
            if json {
                crate::print_json(&v);
            } else {
                let with = v.company.as_deref().unwrap_or(&v.conversation.origin);
                say!("conversation {}  with {with}  [{}]", v.conversation.interaction_id, v.conversation.state);
                if let Some(k) = &v.pinned_key {
                    say!("site key pinned: {k}");
                }
                v.messages.iter().for_each(print_message);
            }
        }
        SitesCmd::Export { file } => crate::export(&o, gatehouse_app::export::ExportKind::Conversations, &file)?,
    }
    Ok(ExitCode::SUCCESS)
}
