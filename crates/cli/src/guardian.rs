//! `gatehouse guardian …`: the ASOP guardian from the command line, through the same
//! application layer as the window: your agents (registered, waiting, blocked), letting one
//! in or blocking it, the rules, sessions and their steps, and an export of every decision.

use crate::terminal::{note, say};
use crate::{invalid, CommandError};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::guardian::{self, AsopStepRow, RuleInput};
use gatehouse_app::Context;
use gatehouse_asop::rules::{Action, Condition, Op};

#[derive(Subcommand)]
pub enum GuardianCmd {
    /// Your agents: registered, waiting to be let in, or blocked
    Agents {
        #[arg(long)]
        json: bool,
    },
    /// Let an agent that asked in: its steps are then decided by your rules, or asked about
    Approve {
        agent: String,
        #[arg(long)]
        name: Option<String>,
    },
    /// Block an agent: its steps are refused and it never asks again
    Block { agent: String },
    /// The rules that decide your agents' steps
    #[command(subcommand)]
    Rules(RulesCmd),
    /// Sessions, newest first
    Sessions {
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 200)]
        limit: usize,
    },
    /// Every step of a session with what was decided and by whom
    Session {
        session_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Write every session's decided steps to a JSON file
    Export { file: PathBuf },
}

#[derive(Subcommand)]
pub enum RulesCmd {
    /// List the rules
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a rule; the most specific rule decides
    Add {
        /// An agent id, provider:NAME, or * (any)
        #[arg(long, default_value = "*")]
        agent: String,
        /// A step method (steps/toolCallRequest, …) or *
        #[arg(long, default_value = "*")]
        method: String,
        /// A tool name or *
        #[arg(long, default_value = "*")]
        tool: String,
        #[command(flatten)]
        then: RuleArgs,
    },
    /// Remove a rule by its id
    Remove { id: i64 },
}

/// What a rule does and when: the same for an agent's steps and an MCP server's calls.
#[derive(clap::Args)]
pub struct RuleArgs {
    /// allow, deny, ask, or modify (allow with --redact's pattern redacted)
    #[arg(long, value_parser = named::<Action>)]
    action: Action,
    /// Only when this argument of the tool call… (with --op and --value)
    #[arg(long, requires_all = ["op", "value"])]
    argument: Option<String>,
    /// equals, not-equals, contains, not-contains, ends-with, not-ends-with, matches
    #[arg(long, value_parser = named::<Op>)]
    op: Option<Op>,
    #[arg(long)]
    value: Option<String>,
    /// For modify: the pattern to redact before it goes on
    #[arg(long)]
    redact: Option<String>,
    #[arg(long)]
    note: Option<String>,
}

impl RuleArgs {
    /// The rule for `agent`'s `method` and `tool`.
    pub(crate) fn input(self, agent: String, method: String, tool: String) -> RuleInput {
        let condition = match (self.argument, self.op, self.value) {
            (Some(argument), Some(op), Some(value)) => Some(Condition { argument, op, value }),
            _ => None,
        };
        RuleInput { agent, method, tool, condition, action: self.action, redact: self.redact, note: self.note }
    }
}

/// A value of the guardian's own vocabulary by its name (`ends-with` or `ends_with`), so
/// the CLI accepts exactly what a rule can say.
fn named<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, CommandError> {
    serde_json::from_value(serde_json::Value::String(s.trim().replace('-', "_")))
        .map_err(|_| invalid(format!("{s:?} is not one of the names listed in --help")))
}

pub(crate) fn step_line(s: &AsopStepRow) -> String {
    let by = s.decided_by.as_deref().unwrap_or("-");
    let line = format!("{}  {:<8} by {by:<6} {}  {}  {}", s.created_at, s.decision, s.method, s.summary, s.message.as_deref().unwrap_or(""));
    match &s.answer {
        Some(a) => format!("{}\n{}", line.trim_end(), answer_line(a)),
        None => line,
    }
}

/// What answered a step, under it: its size, whether it failed, its flags, its first words.
fn answer_line(a: &serde_json::Value) -> String {
    let failed = if a["failed"].as_bool() == Some(true) { ", the tool failed" } else { "" };
    let kinds: Vec<&str> = a["flags"].as_array().into_iter().flatten().filter_map(|f| f["kind"].as_str()).collect();
    let flags = match kinds.len() {
        0 => String::new(),
        n => format!(", WARNING {n} flag(s): {}", kinds.join(" ")),
    };
    let words: String = a["excerpt"].as_str().unwrap_or_default().chars().take(120).map(|c| if c.is_control() { ' ' } else { c }).collect();
    format!("    answered {} bytes{failed}{flags}: {words}", a["bytes"].as_u64().unwrap_or(0))
}

pub(crate) fn rule_line(r: &gatehouse_app::guardian::AsopRuleRow) -> String {
    let cond = r
        .condition
        .as_ref()
        .map(|c| format!(" when {} {} {:?}", c["argument"].as_str().unwrap_or("?"), c["op"].as_str().unwrap_or("?"), c["value"].as_str().unwrap_or("")))
        .unwrap_or_default();
    let redact = r.redact.as_deref().map(|p| format!(" (redact {p:?})")).unwrap_or_default();
    format!("{:>4}  agent {}  {}  tool {}{cond}: {}{redact}  [{}]", r.id, r.agent, r.method, r.tool, r.action, r.source)
}

pub fn run(cmd: GuardianCmd, ctx: &Context) -> Result<ExitCode, CommandError> {
    let store = ctx;
    match cmd {
        GuardianCmd::Agents { json } => {
            let list = guardian::agents(store)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no agent has come to the guardian yet");
            }
            for a in list.iter().filter(|_| !json) {
                say!("{:<10}  {}  {}  since {}", a.state, a.agent, a.name.as_deref().unwrap_or(""), a.since);
            }
        }
        GuardianCmd::Approve { agent, name } => {
            let e = guardian::approve(store, &agent, name)?;
            note!("registered {} ({}): its steps are now decided by your rules, or asked about", e.name, e.public_key);
        }
        GuardianCmd::Block { agent } => {
            guardian::block(store, &agent)?;
            note!("blocked {agent}: its steps are refused");
        }
        GuardianCmd::Rules(RulesCmd::List { json }) => {
            let rules = guardian::rules(store)?;
            if json {
                crate::print_json(&rules);
            } else if rules.is_empty() {
                note!("no rules: every step is asked about");
            }
            for r in rules.iter().filter(|_| !json) {
                say!("{}", rule_line(r));
            }
        }
        GuardianCmd::Rules(RulesCmd::Add { agent, method, tool, then }) => {
            let row = guardian::rule_add(store, then.input(agent, method, tool))?;
            say!("{}", row.id);
            note!("added rule {}", row.id);
        }
        GuardianCmd::Rules(RulesCmd::Remove { id }) => {
            guardian::rule_remove(store, id)?;
            note!("removed rule {id}");
        }
        GuardianCmd::Sessions { json, limit } => {
            let list = guardian::sessions(store, limit)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no sessions: no agent has asked yet");
            }
            for s in list.iter().filter(|_| !json) {
                say!("{}  {}  {:>4} steps  {}", s.last, s.session_id, s.steps, s.agent.as_deref().unwrap_or("agent"));
            }
        }
        GuardianCmd::Session { session_id, json } => {
            let steps = guardian::session(store, &session_id)?;
            if steps.is_empty() {
                return Err(CommandError::new(crate::Code::NotFound, format!("no session {session_id}")));
            }
            if json {
                crate::print_json(&steps);
            }
            for s in steps.iter().filter(|_| !json) {
                say!("{}", step_line(s));
            }
        }
        GuardianCmd::Export { file } => crate::export(ctx, gatehouse_app::export::ExportKind::Guardian, &file)?,
    }
    Ok(ExitCode::SUCCESS)
}
