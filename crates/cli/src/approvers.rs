//! `gatehouse approvers …`: the devices that may decide what waits (a team member's
//! phone or desktop), invited, listed, renamed and removed through the same application
//! layer as the window.

use crate::terminal::{note, say};
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::approvers;
use gatehouse_app::{CommandError, Context};

#[derive(Subcommand)]
pub enum ApproversCmd {
    /// Invite a device: prints the approval page's address with a one-time code (valid 15
    /// minutes) and the same as a QR code to scan with the phone
    Invite {
        /// What to call the device (its user may rename it when joining)
        name: String,
        /// The gate's address as the device reaches it (https:// for a phone, which keeps
        /// its key only on a secure page)
        #[arg(long)]
        url: String,
        #[arg(long)]
        json: bool,
    },
    /// The devices that may decide
    List {
        #[arg(long)]
        json: bool,
    },
    Rename {
        id: String,
        name: String,
    },
    /// Remove a device: its next request, at any node, is refused
    Remove {
        id: String,
    },
    /// Tell the device's person by mail when something new waits (a link to the page,
    /// never the message), through the gate's mail account
    Mail {
        id: String,
        #[arg(long, required_unless_present = "off")]
        email: Option<String>,
        /// At most this many an hour (default 4)
        #[arg(long)]
        per_hour: Option<u32>,
        /// No notices between these times, gate's local time: HH:MM-HH:MM
        #[arg(long)]
        quiet: Option<String>,
        /// Stop the notices
        #[arg(long, conflicts_with_all = ["email", "per_hour", "quiet"])]
        off: bool,
    },
    /// Quorum rules: what several devices must decide together
    #[command(subcommand)]
    Quorum(QuorumCmd),
}

#[derive(Subcommand)]
pub enum QuorumCmd {
    /// Require NEED of the named devices to agree (0: all of them), for a scope, a sender,
    /// or everything; the most specific rule applies
    Add {
        #[arg(long)]
        need: u32,
        /// A device whose vote counts (repeat for each)
        #[arg(long = "approver", required = true)]
        approvers: Vec<String>,
        #[arg(long)]
        scope: Option<String>,
        #[arg(long)]
        sender: Option<String>,
        /// A deny by one of them does not end it (by default it does)
        #[arg(long)]
        deny_does_not_end: bool,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Remove {
        id: i64,
    },
}

pub fn run(cmd: ApproversCmd, ctx: &Context) -> Result<ExitCode, CommandError> {
    let store = ctx;
    match cmd {
        ApproversCmd::Invite { name, url, json } => {
            let inv = approvers::invite(store, &name, &url, gatehouse_app::clock::now())?;
            if json {
                crate::print_json(&inv);
            } else {
                if let Ok(qr) = qrcode::QrCode::new(inv.url.as_bytes()) {
                    crate::terminal::say_verbatim(&qr.render::<qrcode::render::unicode::Dense1x2>().quiet_zone(true).build());
                }
                say!("{}", inv.url);
                say!("code {} for {:?}, valid until {}", inv.code, inv.name, inv.expires_at);
            }
        }
        ApproversCmd::List { json } => {
            let list = approvers::list(store)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no approver devices; invite one with `gatehouse approvers invite NAME --url URL`");
            }
            for a in list.iter().filter(|_| !json) {
                say!("{}  {}  added {}  last seen {}", a.id, a.name, a.added_at, a.last_seen.as_deref().unwrap_or("never"));
            }
        }
        ApproversCmd::Rename { id, name } => approvers::rename(store, &id, &name)?,
        ApproversCmd::Remove { id } => {
            approvers::remove(store, &id)?;
            note!("removed {id}: its requests are refused from now on");
        }
        ApproversCmd::Mail { id, email, per_hour, quiet, off: _ } => {
            let input = email.map(|email| gatehouse_app::notify::MailInput { email, per_hour, quiet });
            gatehouse_app::notify::set_mail(store, &id, input)?;
        }
        ApproversCmd::Quorum(cmd) => quorum(cmd, ctx)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn quorum(cmd: QuorumCmd, ctx: &Context) -> Result<(), CommandError> {
    use gatehouse_app::quorum::{self, RuleInput};
    let store = ctx;
    match cmd {
        QuorumCmd::Add { need, approvers, scope, sender, deny_does_not_end } => {
            let rule = quorum::rule_add(store, RuleInput { scope, sender, need, approvers, deny_ends: Some(!deny_does_not_end) })?;
            crate::print_json(&rule);
        }
        QuorumCmd::List { json } => {
            let rules = quorum::rules(store)?;
            if json {
                crate::print_json(&rules);
            } else if rules.is_empty() {
                note!("no quorum rules: any one approver decides");
            }
            for r in rules.iter().filter(|_| !json) {
                let need = if r.need == 0 { "all".to_string() } else { r.need.to_string() };
                let on = match (&r.scope, &r.sender) {
                    (Some(s), Some(k)) => format!("scope {s} from {} ({k})", gatehouse_app::names::of(store, k)?),
                    (Some(s), None) => format!("scope {s}"),
                    (None, Some(k)) => format!("{} ({k})", gatehouse_app::names::of(store, k)?),
                    (None, None) => "everything".into(),
                };
                say!("{}  {need} of {}  on {on}{}", r.id, r.approvers.join(","), if r.deny_ends { "" } else { "  (a deny does not end it)" });
            }
        }
        QuorumCmd::Remove { id } => quorum::rule_remove(store, id)?,
    }
    Ok(())
}
