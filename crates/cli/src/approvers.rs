//! `gatehouse approvers …`: the devices that may decide what waits (a team member's
//! phone or desktop), invited, listed, renamed and removed through the same application
//! layer as the window.

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
}

pub fn run(cmd: ApproversCmd, ctx: &Context) -> Result<ExitCode, CommandError> {
    let store = &ctx.store;
    match cmd {
        ApproversCmd::Invite { name, url, json } => {
            let inv = approvers::invite(store, &ctx.public_key, &name, &url, gatehouse_app::clock::now())?;
            if json {
                crate::print_json(&inv);
            } else {
                if let Ok(qr) = qrcode::QrCode::new(inv.url.as_bytes()) {
                    println!("{}", qr.render::<qrcode::render::unicode::Dense1x2>().quiet_zone(true).build());
                }
                println!("{}", inv.url);
                println!("code {} for {:?}, valid until {}", inv.code, inv.name, inv.expires_at);
            }
        }
        ApproversCmd::List { json } => {
            let list = approvers::list(store)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                eprintln!("no approver devices; invite one with `gatehouse approvers invite NAME --url URL`");
            }
            for a in list.iter().filter(|_| !json) {
                println!("{}  {}  added {}  last seen {}", a.id, a.name, a.added_at, a.last_seen.as_deref().unwrap_or("never"));
            }
        }
        ApproversCmd::Rename { id, name } => approvers::rename(store, &id, &name)?,
        ApproversCmd::Remove { id } => {
            approvers::remove(store, &id)?;
            eprintln!("removed {id}: its requests are refused from now on");
        }
    }
    Ok(ExitCode::SUCCESS)
}
