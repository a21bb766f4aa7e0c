//! `gatehouse mail …`: MAIL swarms the user connects to, tasks sent and followed live,
//! task logs imported, and the task history.

use crate::terminal::{note, say};
use crate::CommandError;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::swarms::{self, InterswarmInput, SendInput, SwarmInput};
use gatehouse_app::swarms::{LiveEvent, MailMessageRow};
use gatehouse_app::Context;
use serde_json::{json, Value};

#[derive(Subcommand)]
pub enum MailCmd {
    /// Connect to a MAIL server (1.3 or 2.0) by its base URL; shows what it says about itself
    Add {
        url: String,
        #[arg(long)]
        name: String,
        /// Read the bearer token from stdin (kept in the OS keychain, never in the database)
        #[arg(long)]
        token_stdin: bool,
        /// MAIL 2.0: the address you log in with (user:alice@example.com)
        #[arg(long, requires = "password_stdin")]
        address: Option<String>,
        /// MAIL 2.0: read the password from stdin (kept in the OS keychain with the address)
        #[arg(long, conflicts_with = "token_stdin")]
        password_stdin: bool,
    },
    /// Pick up what arrived on a MAIL 2.0 server since the last look, and print it
    Sync {
        name: String,
        /// Print each new message as a JSON line
        #[arg(long)]
        json: bool,
    },
    /// Swarm connections
    List {
        #[arg(long)]
        json: bool,
    },
    /// A connection's metadata, health, identity and role, status and known swarms, asked now
    Info {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Forget a connection and its token (its tasks stay)
    Remove { name: String },
    /// Send a message to a swarm's entrypoint and follow the task live (on a MAIL 2.0
    /// server: to the agent --entrypoint names, and wait for its answers)
    Send {
        swarm: String,
        body: String,
        #[arg(long)]
        subject: Option<String>,
        /// Continue this task (multi-turn)
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        entrypoint: Option<String>,
        /// Give up after this many seconds in all, however lively the swarm (default 30 minutes)
        #[arg(long, value_name = "SECS")]
        deadline: Option<u32>,
        /// Print each event as a JSON line
        #[arg(long)]
        json: bool,
    },
    /// Send to agents of another swarm through this one (POST /interswarm/message)
    Interswarm {
        swarm: String,
        body: String,
        /// agent@swarm (repeat for a broadcast)
        #[arg(long = "to", required = true)]
        to: Vec<String>,
        #[arg(long)]
        subject: Option<String>,
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Tasks, newest first
    Tasks {
        /// Only tasks whose subject, messages or agents contain this text
        #[arg(long)]
        search: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// A task's timeline
    Show {
        task_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Import task logs (JSON, JSON array or JSONL of MAILMessages or interswarm wrappers)
    Import {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

fn print_survey(name: &str, url: &str, v: &Value) {
    let show = |v: &Value| match v.get("error") {
        Some(e) => format!("error: {}", e["message"].as_str().unwrap_or_default()),
        None => v.to_string(),
    };
    say!("{name}  {url}");
    say!("  server:  {}", gatehouse_mail::client::ServerInfo::read(&v["root"]).summary());
    // A 2.0 server has no status document; its swarms come as `{swarms: [...]}`.
    if !v["health"].is_null() {
        say!("  health:  {}", show(&v["health"]));
    }
    match v["whoami"].get("error") {
        Some(_) => say!("  you:     {}", show(&v["whoami"])),
        None => say!("  you:     {} (role {})", v["whoami"]["id"].as_str().unwrap_or("?"), v["whoami"]["role"].as_str().unwrap_or("?")),
    }
    if !v["status"].is_null() {
        say!("  status:  {}", show(&v["status"]));
    }
    if let Some(list) = v["swarms"]["swarms"].as_array() {
        for s in list {
            say!("  swarm:   {} ({} agent(s)) {}", s["name"].as_str().unwrap_or("?"), s["num_agents"], s["description"].as_str().unwrap_or(""));
        }
        return;
    }
    match v["swarms"].as_array() {
        Some(list) if list.is_empty() => say!("  swarms:  none registered"),
        Some(list) => {
            for s in list {
                let latency = s["latency"].as_f64().map(|l| format!(", {:.0} ms", l * 1000.0)).unwrap_or_default();
                say!("  swarm:   {} {}{latency}", s["swarm_name"].as_str().unwrap_or("?"), s["base_url"].as_str().unwrap_or(""));
            }
        }
        None => say!("  swarms:  {}", show(&v["swarms"])),
    }
}

/// One timeline line: time, tier, type, sender → recipients, subject and body.
fn line(m: &MailMessageRow) -> String {
    let time = m.ts.get(11..19).unwrap_or(&m.ts);
    let flag = if m.system_error { " ⚠" } else { "" };
    let body: String = m.body.chars().take(100).collect::<String>().replace('\n', " ");
    let odd = m.odd.as_ref().map(|o| format!("  (kept as sent, off MAIL's schema: {o})")).unwrap_or_default();
    format!("{time}  T{}  {:<18} {} → {}{flag}  {:?}: {body}{odd}", m.tier, m.msg_type, m.sender, m.recipients.join(", "), m.subject)
}

pub fn run(cmd: MailCmd, o: Context) -> Result<ExitCode, CommandError> {
    match cmd {
        MailCmd::Add { url, name, token_stdin, address, password_stdin } => {
            let token = if token_stdin || password_stdin { Some(crate::uamp::read_token()?) } else { None };
            let input = SwarmInput { url, name, token, address };
            let added = crate::uamp::runtime()?.block_on(swarms::add(&o, input))?;
            let info = added.info;
            print_survey(&added.view.swarm.name, &added.view.swarm.base_url, &info);
            if info["whoami"].get("error").is_some() {
                note!("note: without a token the swarm accepts no messages; add one with `--token-stdin`");
            }
        }
        MailCmd::List { json } => {
            let list = swarms::list(&o)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no swarms; add one with `gatehouse mail add https://host --name NAME --token-stdin`");
            }
            for s in list.iter().filter(|_| !json) {
                let token = if s.has_token { "token kept" } else { "no token" };
                say!("{}  {}  added {}  {token}", s.swarm.name, s.swarm.base_url, s.swarm.added_at);
            }
        }
        MailCmd::Info { name, json } => {
            let s = swarms::find(&o, &name)?;
            let info = crate::uamp::runtime()?.block_on(swarms::refresh(&o, &name))?;
            if json {
                crate::print_json(&info);
            } else {
                print_survey(&name, &s.base_url, &info);
            }
        }
        MailCmd::Remove { name } => {
            swarms::remove(&o, &name)?;
            note!("removed {name}; its tasks are kept");
        }
        MailCmd::Sync { name, json } => {
            let n = crate::uamp::runtime()?.block_on(swarms::sync(&o, &name, |e| match e {
                LiveEvent::Message { message, .. } if !json => say!("{}", line(message)),
                e if json => crate::terminal::say_verbatim(&serde_json::to_string(e).unwrap_or_default()),
                _ => {}
            }))?;
            if !json {
                note!("{n} new message(s)");
            }
        }
        MailCmd::Send { swarm, body, subject, task, entrypoint, deadline, json } => {
            let input = SendInput { swarm, body, subject, task_id: task, entrypoint, deadline_secs: deadline };
            let out = crate::uamp::runtime()?.block_on(swarms::send(&o, input, |e| {
                if json {
                    crate::terminal::say_verbatim(&serde_json::to_string(e).unwrap_or_default());
                    return;
                }
                match e {
                    LiveEvent::Message { message, .. } => say!("{}", line(message)),
                    LiveEvent::Step { event, description, .. } => say!("          ·   {event}: {}", description.lines().next().unwrap_or("")),
                    LiveEvent::Unreadable { event, field, message } => note!("          !   unreadable {event} event: {field}: {message}"),
                    LiveEvent::Ping { .. } | LiveEvent::Finished { .. } => {}
                }
            }))?;
            if !json {
                say!("task {} {}: {}", out.task_id, if out.completed { "completed" } else { "FAILED" }, out.response);
            }
            if !out.completed {
                return Ok(ExitCode::from(3));
            }
        }
        MailCmd::Interswarm { swarm, body, to, subject, task, json } => {
            let input = InterswarmInput { swarm, body, targets: to, subject, task_id: task };
            let row = crate::uamp::runtime()?.block_on(swarms::interswarm(&o, input))?;
            if json {
                crate::print_json(&row);
            } else {
                say!("{}", line(&row));
            }
        }
        MailCmd::Tasks { search, limit, json } => {
            let tasks = swarms::tasks(&o, search.as_deref(), limit)?;
            if json {
                crate::print_json(&tasks);
            } else {
                for t in &tasks {
                    say!("{}  {:<11} {:>3} msgs  {}  [{}]", t.task_id, t.state, t.messages, t.subject, t.swarm.as_deref().unwrap_or(&t.source));
                }
                if tasks.is_empty() {
                    note!("no tasks{}", search.map(|s| format!(" matching {s:?}")).unwrap_or_default());
                }
            }
        }
        MailCmd::Show { task_id, json } => {
            let t = swarms::task(&o, &task_id)?;
            if json {
                crate::print_json(&t);
            } else {
                say!("task {}  {}  {:?}  [{}]", t.task.task_id, t.task.state, t.task.subject, t.task.swarm.as_deref().unwrap_or(&t.task.source));
                if let Some(owner) = &t.task.task_owner {
                    say!("owner {owner}; contributors {}", t.task.contributors.join(", "));
                }
                for m in &t.messages {
                    say!("{}", line(m));
                }
                if let Some(r) = &t.task.response {
                    say!("→ {r}");
                }
            }
        }
        MailCmd::Import { files, json } => {
            let mut failed = false;
            let mut reports = Vec::new();
            for f in &files {
                match swarms::import(&o, f) {
                    Ok(r) => {
                        failed |= !r.errors.is_empty();
                        if !json {
                            say!("{}: {} message(s) imported, {} already known, {} task(s)", f.display(), r.imported, r.duplicates, r.tasks.len());
                            for e in &r.errors {
                                note!("{}:{}: {}: {}", f.display(), e.line, e.field, e.message);
                            }
                        }
                        reports.push(json!(r));
                    }
                    Err(e) => {
                        failed = true;
                        note!("{}", e.coded_message());
                        reports.push(json!({"source": f.display().to_string(), "error": e}));
                    }
                }
            }
            if json {
                crate::print_json(&reports);
            }
            if failed {
                return Ok(ExitCode::from(2));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
