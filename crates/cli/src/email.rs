//! `gatehouse email …`: mail accounts followed for envelopes (EPP by email) while
//! `gatehouse serve` runs.

use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::email;
use gatehouse_email::{Account, Security};
use gatehouse_inbox::service::Opened;

#[derive(Subcommand)]
pub enum EmailCmd {
    /// Follow a mail account over IMAP (the login is tried first; the password goes to the keychain)
    Add {
        name: String,
        /// The IMAP server
        #[arg(long)]
        host: String,
        #[arg(long, default_value_t = 993)]
        port: u16,
        /// No TLS (only for a server on this machine)
        #[arg(long)]
        plain: bool,
        #[arg(long)]
        user: String,
        /// The folder envelope mail arrives in
        #[arg(long, default_value = "INBOX")]
        folder: String,
        /// Read the password (or app password) from stdin
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// The accounts and their state (connected, idle, last sync, last error)
    List {
        #[arg(long)]
        json: bool,
    },
    /// Log in again and say what the server holds
    Test { name: String },
    /// Stop following an account and forget its password (its mail stays where it is)
    Remove { name: String },
}

pub fn run(cmd: EmailCmd, data_dir: &Path, o: Opened) -> Result<ExitCode, String> {
    match cmd {
        EmailCmd::Add { name, host, port, plain, user, folder, password_stdin: _ } => {
            let password = crate::uamp::read_token()?;
            let account = Account { host, port, security: if plain { Security::Plain } else { Security::Tls }, user, folder };
            let (row, said) =
                crate::uamp::runtime()?.block_on(email::add(o.store.clone(), data_dir, &name, account, password)).map_err(|e| e.coded_message())?;
            println!("{}: {said}", row.name);
            eprintln!("added; `gatehouse serve` (or the app) follows it from its next start");
        }
        EmailCmd::List { json } => {
            let list = email::list(&o.store).map_err(|e| e.to_string())?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                eprintln!("no mail accounts; add one with `gatehouse email add NAME --host imap.example.com --user me --password-stdin`");
            }
            for a in list.iter().filter(|_| !json) {
                let err = a.last_error.as_ref().map(|e| format!("  ({e})")).unwrap_or_default();
                println!(
                    "{}  {}@{}  {}  last uid {}  last sync {}{err}",
                    a.name,
                    a.account["user"].as_str().unwrap_or("?"),
                    a.account["host"].as_str().unwrap_or("?"),
                    a.state,
                    a.last_uid,
                    a.last_sync.as_deref().unwrap_or("never")
                );
            }
        }
        EmailCmd::Test { name } => {
            let said = crate::uamp::runtime()?.block_on(email::test(o.store.clone(), data_dir, &name)).map_err(|e| e.coded_message())?;
            println!("{name}: {said}");
        }
        EmailCmd::Remove { name } => {
            email::remove(&o.store, data_dir, &name).map_err(|e| e.coded_message())?;
            eprintln!("removed {name}; its receipts are kept");
        }
    }
    Ok(ExitCode::SUCCESS)
}
