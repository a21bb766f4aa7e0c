//! `gatehouse audit …`: the audit log checked (the live log, or an export) against the
//! gate's key, and a checkpoint signed on demand, through the same application layer as
//! the window.

use crate::terminal::{note, say};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::audit::{self, AuditVerdict};
use gatehouse_app::{CommandError, Context};

#[derive(Subcommand)]
pub enum AuditCmd {
    /// Check that no entry of the audit log was changed, deleted or reordered: this gate's
    /// log, or an export (FILE). Names the first entry that does not fit; exits 1 then
    Verify {
        /// An audit export (`gatehouse export audit FILE`)
        file: Option<PathBuf>,
        /// The gate's public key (hex) to check its signatures against (default: this
        /// gate's own key)
        #[arg(long)]
        key: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Sign the log as it is now (the gate also does every ten minutes and on export)
    Checkpoint,
    /// Take the gate's deciding state (trust, blocks, revocations, settings, approvers,
    /// quorum rules) as the database holds it now, rows changed outside Gatehouse
    /// included, and seal it with the gate's key. Read `gatehouse audit verify` first:
    /// what it lists becomes the gate's own
    AcceptState {
        /// Do not ask (the changes are still listed)
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(cmd: AuditCmd, open: impl Fn() -> Result<Context, CommandError>) -> Result<ExitCode, CommandError> {
    match cmd {
        AuditCmd::Verify { file, key, json } => {
            let verdict = match (file, key) {
                // Someone else's export, checked against the key they were given: no gate needed.
                (Some(file), Some(key)) => audit::verify_export(&read(&file)?, &key)?,
                (Some(file), None) => audit::verify_export(&read(&file)?, &open()?.public_key)?,
                (None, key) => audit::verify_here(&open()?, key.as_deref())?,
            };
            if json {
                crate::print_json(&verdict);
            } else {
                say(&verdict);
            }
            Ok(if verdict.intact { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        AuditCmd::Checkpoint => {
            let ctx = open()?;
            match audit::checkpoint_here(&ctx)? {
                Some(c) => note!("signed the audit log up to entry #{} ({})", c.through_id, c.at),
                None => note!("the last checkpoint already covers the whole log"),
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCmd::AcceptState { yes } => {
            let ctx = open()?;
            let report = audit::state_check(&ctx)?;
            if report.intact() {
                note!("the gate's state is as it sealed it: nothing to accept");
                return Ok(ExitCode::SUCCESS);
            }
            say_state(&report);
            if !yes && crate::terminal::answer("make these rows the gate's own and seal them? type yes: ") != "yes" {
                note!("nothing accepted");
                return Ok(ExitCode::from(1));
            }
            let after = audit::accept_state(&ctx)?;
            note!("sealed: {} row(s), version {}", after.sealed, after.version);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The deciding state's report, a line per row not as sealed.
fn say_state(r: &audit::StateReport) {
    if r.intact() {
        say!("the gate's state: intact ({} sealed row(s), version {})", r.sealed, r.version);
        return;
    }
    say!("the gate's state: NOT AS SEALED");
    if let Some(b) = &r.broken {
        say!("  {b}: no trust entry, approver or setting is acted on until an operator accepts the state (gatehouse audit accept-state)");
    }
    for c in &r.changes {
        let what = match c.what {
            audit::ChangeKind::Added => "added outside Gatehouse (not acted on)",
            audit::ChangeKind::Changed => "changed outside Gatehouse (not acted on)",
            audit::ChangeKind::Removed => "taken out outside Gatehouse (a block or revocation still holds)",
        };
        say!("  {} {}: {what}", c.table, c.id);
    }
}

fn read(file: &std::path::Path) -> Result<String, CommandError> {
    std::fs::read_to_string(file).map_err(|e| CommandError::new(gatehouse_app::Code::Io, format!("{}: {e}", file.display())))
}

fn say(v: &AuditVerdict) {
    let range = match (v.first_id, v.last_id) {
        (Some(a), Some(b)) => format!("entries #{a}–#{b}"),
        _ => "no entries".into(),
    };
    match &v.problem {
        None => say!("intact: {} {range}; {} checkpoint(s) of key {} checked", v.entries, v.checkpoints_checked, v.key),
        Some(p) => say!("NOT INTACT: {}", p.reason),
    }
    match (v.signed_through, v.last_id) {
        (Some(s), Some(last)) if s < last => say!("entries after #{s} are chained but not yet signed"),
        (None, Some(_)) => say!("no checkpoint covers these entries yet"),
        _ => {}
    }
    if let Some(state) = &v.state {
        say_state(state);
    }
}
