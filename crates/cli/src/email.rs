//! `gatehouse email …`: mail accounts followed for envelopes (EPP by email) while
//! `gatehouse serve` runs.

use crate::terminal::{note, say};
use crate::{io_error, CommandError};
use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::email;
use gatehouse_app::Context;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ReceiptsArg {
    Known,
    Everyone,
    Off,
}

#[derive(Subcommand)]
pub enum EmailCmd {
    /// Follow a mail account over IMAP (the login is tried first; the password goes to the keychain)
    Add {
        name: String,
        /// The IMAP server
        #[arg(long)]
        host: String,
        /// Default: 993, or 143 with --starttls
        #[arg(long)]
        port: Option<u16>,
        /// STARTTLS on a plain connection (port 143) instead of TLS from the first byte
        #[arg(long, conflicts_with = "plain")]
        starttls: bool,
        /// No TLS (only for a server on this machine)
        #[arg(long)]
        plain: bool,
        /// A certificate (PEM file) to trust for this account's servers besides the public
        /// authorities: a self-hosted server's own
        #[arg(long)]
        certificate: Option<std::path::PathBuf>,
        #[arg(long)]
        user: String,
        /// The folder envelope mail arrives in
        #[arg(long, default_value = "INBOX")]
        folder: String,
        /// Read the password (or app password) from stdin
        #[arg(long, required = true)]
        password_stdin: bool,
        /// The outgoing (SMTP submission) server: receipts are mailed back through it
        #[arg(long)]
        smtp_host: Option<String>,
        #[arg(long, default_value_t = 465)]
        smtp_port: u16,
        /// STARTTLS on a plain connection (port 587) instead of TLS from the first byte
        #[arg(long, conflicts_with = "smtp_plain")]
        smtp_starttls: bool,
        /// No TLS to the outgoing server (only for a server on this machine)
        #[arg(long)]
        smtp_plain: bool,
        /// The outgoing server's user name (default: the IMAP user)
        #[arg(long)]
        smtp_user: Option<String>,
        /// The address mail is sent from (default: the IMAP user, when it is an address)
        #[arg(long)]
        from: Option<String>,
        /// Whose receipts are mailed back: known (the trust registry), everyone (strangers too), off
        #[arg(long, value_enum, default_value_t = ReceiptsArg::Known)]
        receipts: ReceiptsArg,
        /// At most this many receipt mails an hour from this account (past it receipts are
        /// kept, not mailed)
        #[arg(long, value_name = "N", default_value_t = gatehouse_email::smtp::ReceiptRate::default().per_account_per_hour)]
        receipts_per_hour: u32,
        /// At most this many receipt mails an hour to any one sender
        #[arg(long, value_name = "N", default_value_t = gatehouse_email::smtp::ReceiptRate::default().per_sender_per_hour)]
        receipts_per_sender: u32,
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

pub fn run(cmd: EmailCmd, o: Context) -> Result<ExitCode, CommandError> {
    match cmd {
        EmailCmd::Add {
            name,
            host,
            port,
            starttls,
            plain,
            certificate,
            user,
            folder,
            password_stdin: _,
            smtp_host,
            smtp_port,
            smtp_starttls,
            smtp_plain,
            smtp_user,
            from,
            receipts,
            receipts_per_hour,
            receipts_per_sender,
        } => {
            let password = crate::uamp::read_token()?;
            let certificate = match certificate {
                Some(p) => Some(std::fs::read_to_string(&p).map_err(|e| io_error(format!("{}: {e}", p.display())))?),
                None => None,
            };
            let word = |on: bool, w: &str| on.then(|| w.to_string());
            let input = email::AccountInput {
                name: name.clone(),
                port: port.unwrap_or(if starttls { 143 } else { 993 }),
                security: word(starttls, "starttls").or(word(plain, "plain")).unwrap_or_else(|| "tls".into()),
                host,
                user,
                folder,
                password: String::new(),
                smtp_host,
                smtp_port: Some(smtp_port),
                smtp_security: word(smtp_starttls, "starttls").or(word(smtp_plain, "plain")),
                smtp_user,
                from,
                receipts: Some(
                    match receipts {
                        ReceiptsArg::Known => "known",
                        ReceiptsArg::Everyone => "everyone",
                        ReceiptsArg::Off => "off",
                    }
                    .into(),
                ),
                certificate,
            };
            let mut account = input.account()?;
            account.receipt_rate = gatehouse_email::smtp::ReceiptRate { per_sender_per_hour: receipts_per_sender, per_account_per_hour: receipts_per_hour };
            let (row, said) = crate::uamp::runtime()?.block_on(email::add(&o, &name, account, password))?;
            say!("{}: {said}", row.name);
            note!("added; `gatehouse serve` (or the app) follows it from its next start");
        }
        EmailCmd::List { json } => {
            let list = email::list(&o)?;
            if json {
                crate::print_json(&list);
            } else if list.is_empty() {
                note!("no mail accounts; add one with `gatehouse email add NAME --host imap.example.com --user me --password-stdin`");
            }
            for a in list.iter().filter(|_| !json) {
                let err = a.last_error.as_ref().map(|e| format!("  ({e})")).unwrap_or_default();
                let mut waiting = if a.backlog > 0 { format!("  {} waiting", a.backlog) } else { String::new() };
                if a.left_large > 0 {
                    waiting += &format!("  {} over 4 MiB left unread (they may carry an envelope)", a.left_large);
                }
                say!(
                    "{}  {}@{}  {}  last uid {}{waiting}  last sync {}{err}",
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
            let said = crate::uamp::runtime()?.block_on(email::test(&o, &name))?;
            say!("{name}: {said}");
        }
        EmailCmd::Remove { name } => {
            email::remove(&o, &name)?;
            note!("removed {name}; its receipts are kept");
        }
    }
    Ok(ExitCode::SUCCESS)
}
