//! `gatehouse contacts`: the people behind trusted keys, verified with the safety code
//! both sides see or with what the other shared; a knock's key added to a contact only on
//! the user's word. The same calls as the window's (gatehouse_app::contacts).

use crate::terminal::{note, say};
use crate::CommandError;

use clap::Subcommand;
use gatehouse_app::{clock, Context};

use crate::print_json;

#[derive(Subcommand)]
pub enum ContactsCmd {
    /// Every contact with its keys, verified or not, and the safety code of each key
    List {
        #[arg(long)]
        json: bool,
    },
    /// Mark a contact's key verified: with --shared, what they shared (their QR's text)
    /// must name this key; with --codes-match, you compared safety codes and they matched
    Verify {
        key: String,
        #[arg(long, value_name = "TEXT", conflicts_with = "codes_match", required_unless_present = "codes_match")]
        shared: Option<String>,
        #[arg(long)]
        codes_match: bool,
    },
    /// A key that knocked is a new key of this contact (blocked until verified if the
    /// contact was)
    AddKey { contact: i64, key: String },
    /// Fetch a did:web contact's DID document again: the keys it now holds replace those
    /// kept (a verified contact stays blocked until verified again); answers a key change
    CheckKeys { did: String },
    /// What to give others: your key and address, as the text your QR code holds
    Share {
        /// Your inbox's address as others reach it
        #[arg(long, default_value = "http://127.0.0.1:7777/epp/v1/submit")]
        address: String,
    },
}

pub fn run(cmd: ContactsCmd, ctx: &Context) -> Result<(), CommandError> {
    let (own, store) = (&ctx.public_key, ctx);
    match cmd {
        ContactsCmd::List { json } => {
            let list = gatehouse_app::contacts::list(store)?;
            if json {
                print_json(&list);
            } else if list.is_empty() {
                note!("no contacts: each sender you trust becomes one");
            }
            if !json {
                for c in list {
                    let standing = if c.key_changed {
                        "KEY CHANGED: verify before anything gets through"
                    } else if c.verified {
                        "verified"
                    } else {
                        "not verified"
                    };
                    say!("{}  {}  ({standing})", c.id, c.name);
                    for k in c.keys {
                        say!("    {}  safety code {}{}", k.key, k.safety_code, if k.verified_at.is_some() { "  verified" } else { "" });
                    }
                }
            }
        }
        ContactsCmd::Verify { key, shared, codes_match: _ } => {
            let c = gatehouse_app::contacts::verify(store, &key, shared.as_deref(), clock::now())?;
            note!("{}'s key is verified", c.name);
        }
        ContactsCmd::AddKey { contact, key } => {
            // Released envelopes run when the doors next open (`gatehouse serve`).
            let gate = gatehouse_app::serve::detached(ctx, &gatehouse_app::serve::Events::default());
            note!("{}", gatehouse_app::contacts::adopt(&gate, contact, &key, clock::now())?);
        }
        ContactsCmd::CheckKeys { did } => {
            let out = crate::uamp::runtime()?.block_on(gatehouse_app::did_change::check(store, did))?;
            say!("{}", out.message);
        }
        ContactsCmd::Share { address } => say!("{}", gatehouse_app::contacts::share_text(own, &address)),
    }
    Ok(())
}
