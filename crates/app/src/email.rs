//! Mail accounts followed for envelopes (EPP by email): added only after the server
//! accepts the login and the folder exists (a refused password is not kept), the password
//! kept in the keychain for that server and user only, removed with it, every change
//! audited; what a running inbox follows.

use crate::Context;
use std::path::Path;

use crate::doors::email::Follow;
use gatehouse_email::{Account, EmailError};
use gatehouse_keys::Secrets;
pub use gatehouse_store::email::EmailAccountRow;
use gatehouse_store::Store;

use crate::{blocking, now, Code, CommandError, Result};

impl From<EmailError> for CommandError {
    fn from(e: EmailError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

/// A mail account as the window's form gives it (the CLI builds an [`Account`] from its
/// flags): where mail is read, where it goes out, whose receipts are mailed back.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AccountInput {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// "tls" (from the first byte), "starttls" or "plain" (only to a server on this machine).
    pub security: String,
    pub user: String,
    pub folder: String,
    pub password: String,
    /// The outgoing server; empty: nothing is mailed back.
    pub smtp_host: Option<String>,
    pub smtp_port: Option<u16>,
    /// "tls", "starttls" or "plain".
    pub smtp_security: Option<String>,
    pub smtp_user: Option<String>,
    pub from: Option<String>,
    /// "known", "everyone" or "off".
    pub receipts: Option<String>,
    /// A certificate (PEM) to trust for this account's servers besides the public
    /// authorities: a self-hosted server's own.
    pub certificate: Option<String>,
}

impl AccountInput {
    pub fn account(&self) -> Result<Account> {
        use gatehouse_email::smtp::{MailReceipts, SmtpSecurity, Submission};
        let word = |v: &Option<String>, default: &str| v.as_deref().map(str::trim).filter(|s| !s.is_empty()).unwrap_or(default).to_string();
        let smtp = match self.smtp_host.as_deref().map(str::trim).filter(|h| !h.is_empty()) {
            None => None,
            Some(host) => {
                let security = match word(&self.smtp_security, "tls").as_str() {
                    "tls" => SmtpSecurity::Tls,
                    "starttls" => SmtpSecurity::StartTls,
                    "plain" => SmtpSecurity::Plain,
                    other => return Err(CommandError::new(Code::Invalid, format!("unknown outgoing security {other:?} (tls, starttls or plain)"))),
                };
                let port = self.smtp_port.unwrap_or(if security == SmtpSecurity::StartTls { 587 } else { 465 });
                Some(Submission { host: host.to_string(), port, security, user: word(&self.smtp_user, &self.user), from: word(&self.from, &self.user) })
            }
        };
        let receipts = match word(&self.receipts, "known").as_str() {
            "known" => MailReceipts::Known,
            "everyone" => MailReceipts::Everyone,
            "off" => MailReceipts::Off,
            other => return Err(CommandError::new(Code::Invalid, format!("unknown receipts setting {other:?} (known, everyone or off)"))),
        };
        let security = match self.security.trim() {
            "tls" | "" => gatehouse_email::Security::Tls,
            "starttls" => gatehouse_email::Security::StartTls,
            "plain" => gatehouse_email::Security::Plain,
            other => return Err(CommandError::new(Code::Invalid, format!("unknown security {other:?} (tls, starttls or plain)"))),
        };
        let account = Account {
            host: self.host.trim().to_string(),
            port: self.port,
            security,
            user: self.user.trim().to_string(),
            folder: word(&Some(self.folder.clone()), "INBOX"),
            smtp,
            receipts,
            receipt_rate: Default::default(),
            certificate: self.certificate.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(str::to_string),
        };
        account.check()?;
        Ok(account)
    }
}

/// The keychain name of an account's password: it names the server and user it was given
/// for, so an account moved elsewhere never sends the old password there.
pub fn password_name(name: &str, a: &Account) -> String {
    format!("email-password:{name}:{}@{}:{}", a.user, a.host, a.port)
}

/// The outgoing server's password, kept for that server and user only.
pub fn smtp_password_name(name: &str, s: &gatehouse_email::smtp::Submission) -> String {
    format!("email-smtp-password:{name}:{}@{}:{}", s.user, s.host, s.port)
}

/// The outgoing server's kept password, when the account has an outgoing server.
fn smtp_password(secrets: &Secrets, name: &str, a: &Account) -> Result<Option<String>> {
    Ok(match &a.smtp {
        Some(s) => secrets.get(&smtp_password_name(name, s))?,
        None => None,
    })
}

/// Forgets every password kept for an account (its IMAP and its SMTP server's).
fn forget(secrets: &Secrets, name: &str, a: &Account) -> Result<()> {
    secrets.delete(&password_name(name, a))?;
    if let Some(s) = &a.smtp {
        secrets.delete(&smtp_password_name(name, s))?;
    }
    Ok(())
}

fn account_of(row: &EmailAccountRow) -> Result<Account> {
    serde_json::from_value(row.account.clone()).map_err(|e| CommandError::new(Code::Store, format!("account {}: {e}", row.name)))
}

/// What the server said when asked: the folder's size and whether it can MOVE.
pub async fn probe(account: &Account, password: &str, smtp_password: Option<&str>) -> Result<String> {
    let mut s = gatehouse_email::imap::connect(account, password).await?;
    let (accepted, _, can_move) = gatehouse_email::imap::prepare(&mut s).await?;
    let m = s.examine(&account.folder).await.map_err(|e| CommandError::new(Code::NotFound, format!("the folder {:?}: {e}", account.folder)))?;
    let _ = s.logout().await;
    let filing = if can_move { format!("moved to {accepted} and its sibling") } else { "copied and flagged (the server cannot MOVE)".into() };
    let out = match &account.smtp {
        Some(smtp) => {
            let p = smtp_password.ok_or_else(|| CommandError::new(Code::NoToken, "no password is kept for the outgoing server: add the account again"))?;
            gatehouse_email::smtp::probe(smtp, account.certificate.as_deref(), p).await?;
            format!("; mail goes out through {}:{} as {}", smtp.host, smtp.port, smtp.from)
        }
        None => "; no outgoing server, so no receipt is mailed back".into(),
    };
    Ok(format!("logged in as {}; {} holds {} mail(s); handled mail is {filing}{out}", account.user, account.folder, m.exists))
}

/// Adds (or moves) an account once the server accepts the login. Audited.
pub async fn add(ctx: &Context, name: &str, account: Account, password: String) -> Result<(EmailAccountRow, String)> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let name = name.trim().to_string();
    if name.is_empty() || password.is_empty() {
        return Err(CommandError::new(Code::Invalid, "give the account a name and its password"));
    }
    let said = probe(&account, &password, Some(&password)).await?;
    let dir = data_dir.to_path_buf();
    let row = blocking(move || {
        let secrets = Secrets::open(&dir)?;
        if let Some(old) = store.email_account(&name)? {
            forget(&secrets, &name, &account_of(&old)?)?;
        }
        // The same password is kept once per server it was given for, so an outgoing
        // server moved elsewhere later never receives it without the user typing it again.
        secrets.put(&password_name(&name, &account), &password)?;
        if let Some(smtp) = &account.smtp {
            secrets.put(&smtp_password_name(&name, smtp), &password)?;
        }
        let value = serde_json::to_value(&account).map_err(|e| CommandError::new(Code::Internal, e.to_string()))?;
        store.email_account_put(&name, &value, &now())?;
        store.audit("email.account_add", None, &serde_json::json!({"name": name, "account": value}), &now())?;
        store.email_account(&name)?.ok_or_else(|| CommandError::new(Code::NotFound, name.clone()))
    })
    .await?;
    Ok((row, said))
}

pub fn list(ctx: &Context) -> Result<Vec<EmailAccountRow>> {
    let store: &Store = &ctx.store;
    Ok(store.email_accounts()?)
}

/// Forgets an account and its password (its receipts stay; its mail stays where it was filed).
pub fn remove(ctx: &Context, name: &str) -> Result<()> {
    let data_dir: &Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let row = store.email_account(name)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no mail account {name:?}")))?;
    let account = account_of(&row)?;
    forget(&Secrets::open(data_dir)?, name, &account)?;
    store.email_account_remove(name)?;
    store.audit("email.account_remove", None, &serde_json::json!({"name": name}), &now())?;
    Ok(())
}

/// Asks the server again with the kept password.
pub async fn test(ctx: &Context, name: &str) -> Result<String> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let (n, dir) = (name.to_string(), data_dir.to_path_buf());
    let (account, password, smtp) = blocking(move || {
        let row = store.email_account(&n)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no mail account {n:?}")))?;
        let account = account_of(&row)?;
        let secrets = Secrets::open(&dir)?;
        let password =
            secrets.get(&password_name(&n, &account))?.ok_or_else(|| CommandError::new(Code::NoToken, format!("no password is kept for {n}: add it again")))?;
        let smtp = smtp_password(&secrets, &n, &account)?;
        Ok((account, password, smtp))
    })
    .await?;
    probe(&account, &password, smtp.as_deref()).await
}

/// Sends a signed envelope by mail through an account's outgoing server (the named one,
/// or the only one that has an outgoing server). Audited. Returns what was done, in words.
pub async fn send_envelope(ctx: &Context, account: Option<&str>, to: &str, subject: &str, envelope: &serde_json::Value) -> Result<String> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let (wanted, dir, st) = (account.map(str::to_string), data_dir.to_path_buf(), store.clone());
    let (name, smtp, certificate, password) = blocking(move || {
        let rows = st.email_accounts()?;
        let mut with_smtp = Vec::new();
        for r in &rows {
            let a = account_of(r)?;
            if let Some(s) = a.smtp {
                with_smtp.push((r.name.clone(), (s, a.certificate)));
            }
        }
        let (name, (smtp, certificate)) = match &wanted {
            Some(w) => with_smtp
                .into_iter()
                .find(|(n, _)| n == w)
                .ok_or_else(|| CommandError::new(Code::NotFound, format!("no mail account {w:?} with an outgoing server")))?,
            None if with_smtp.len() == 1 => with_smtp.remove(0),
            None if with_smtp.is_empty() => {
                return Err(CommandError::new(Code::NotFound, "no mail account has an outgoing server: `gatehouse email add … --smtp-host …` first"))
            }
            None => return Err(CommandError::new(Code::Invalid, "several accounts can send: say which with --account")),
        };
        let password = Secrets::open(&dir)?
            .get(&smtp_password_name(&name, &smtp))?
            .ok_or_else(|| CommandError::new(Code::NoToken, format!("no password is kept for {name}'s outgoing server: add the account again")))?;
        Ok((name, smtp, certificate, password))
    })
    .await?;
    let to = to.strip_prefix("mailto:").unwrap_or(to).trim().to_string();
    let json = serde_json::to_string_pretty(envelope).map_err(|e| CommandError::new(Code::Internal, e.to_string()))?;
    let message = gatehouse_email::smtp::envelope_mail(&smtp.from, &to, subject, &json)?;
    gatehouse_email::smtp::send(&smtp, certificate.as_deref(), &password, &to, &message).await?;
    let detail = serde_json::json!({"account": name, "to": to, "envelope_id": envelope["envelope_id"]});
    blocking(move || Ok(store.audit("email.envelope_sent", None, &detail, &now())?)).await?;
    Ok(format!("mailed to {to} through {}:{} as {}", smtp.host, smtp.port, smtp.from))
}

/// The accounts a starting inbox follows, with their passwords. Blocking (the keychain).
/// An account whose password is missing is shown as such and not followed.
pub fn follows(store: &Store, data_dir: &Path) -> Result<Vec<Follow>> {
    let secrets = Secrets::open(data_dir)?;
    let mut out = Vec::new();
    for row in store.email_accounts()? {
        let account = account_of(&row)?;
        match secrets.get(&password_name(&row.name, &account))? {
            Some(password) => {
                let smtp = smtp_password(&secrets, &row.name, &account)?;
                out.push(Follow::new(row.name, account, password, smtp))
            }
            None => store.email_state(&row.name, "error", Some("no password is kept for this account: add it again"), &now())?,
        }
    }
    Ok(out)
}
