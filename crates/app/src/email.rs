//! Mail accounts followed for envelopes (EPP by email): added only after the server
//! accepts the login and the folder exists (a refused password is not kept), the password
//! kept in the keychain for that server and user only, removed with it, every change
//! audited; what a running inbox follows.

use std::path::Path;

use gatehouse_email::{Account, EmailError};
use gatehouse_inbox::email::Follow;
use gatehouse_keys::Secrets;
use gatehouse_store::email::EmailAccountRow;
use gatehouse_store::Store;

use crate::{blocking, now, Code, CommandError, Result};

impl From<EmailError> for CommandError {
    fn from(e: EmailError) -> Self {
        CommandError::coded(e.code(), e.to_string())
    }
}

/// The keychain name of an account's password: it names the server and user it was given
/// for, so an account moved elsewhere never sends the old password there.
pub fn password_name(name: &str, a: &Account) -> String {
    format!("email-password:{name}:{}@{}:{}", a.user, a.host, a.port)
}

fn account_of(row: &EmailAccountRow) -> Result<Account> {
    serde_json::from_value(row.account.clone()).map_err(|e| CommandError::new(Code::Store, format!("account {}: {e}", row.name)))
}

/// What the server said when asked: the folder's size and whether it can MOVE.
pub async fn probe(account: &Account, password: &str) -> Result<String> {
    let mut s = gatehouse_email::imap::connect(account, password).await?;
    let (accepted, _, can_move) = gatehouse_email::imap::prepare(&mut s).await?;
    let m = s.examine(&account.folder).await.map_err(|e| CommandError::new(Code::NotFound, format!("the folder {:?}: {e}", account.folder)))?;
    let _ = s.logout().await;
    let filing = if can_move { format!("moved to {accepted} and its sibling") } else { "copied and flagged (the server cannot MOVE)".into() };
    Ok(format!("logged in as {}; {} holds {} mail(s); handled mail is {filing}", account.user, account.folder, m.exists))
}

/// Adds (or moves) an account once the server accepts the login. Audited.
pub async fn add(store: std::sync::Arc<Store>, data_dir: &Path, name: &str, account: Account, password: String) -> Result<(EmailAccountRow, String)> {
    let name = name.trim().to_string();
    if name.is_empty() || password.is_empty() {
        return Err(CommandError::new(Code::Invalid, "give the account a name and its password"));
    }
    let said = probe(&account, &password).await?;
    let dir = data_dir.to_path_buf();
    let row = blocking(move || {
        let secrets = Secrets::open(&dir)?;
        if let Some(old) = store.email_account(&name)? {
            secrets.delete(&password_name(&name, &account_of(&old)?))?;
        }
        secrets.put(&password_name(&name, &account), &password)?;
        let value = serde_json::to_value(&account).map_err(|e| CommandError::new(Code::Internal, e.to_string()))?;
        store.email_account_put(&name, &value, &now())?;
        store.audit("email.account_add", None, &serde_json::json!({"name": name, "account": value}), &now())?;
        store.email_account(&name)?.ok_or_else(|| CommandError::new(Code::NotFound, name.clone()))
    })
    .await?;
    Ok((row, said))
}

pub fn list(store: &Store) -> Result<Vec<EmailAccountRow>> {
    Ok(store.email_accounts()?)
}

/// Forgets an account and its password (its receipts stay; its mail stays where it was filed).
pub fn remove(store: &Store, data_dir: &Path, name: &str) -> Result<()> {
    let row = store.email_account(name)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no mail account {name:?}")))?;
    Secrets::open(data_dir)?.delete(&password_name(name, &account_of(&row)?))?;
    store.email_account_remove(name)?;
    store.audit("email.account_remove", None, &serde_json::json!({"name": name}), &now())?;
    Ok(())
}

/// Asks the server again with the kept password.
pub async fn test(store: std::sync::Arc<Store>, data_dir: &Path, name: &str) -> Result<String> {
    let (n, dir) = (name.to_string(), data_dir.to_path_buf());
    let (account, password) = blocking(move || {
        let row = store.email_account(&n)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no mail account {n:?}")))?;
        let account = account_of(&row)?;
        let password = Secrets::open(&dir)?
            .get(&password_name(&n, &account))?
            .ok_or_else(|| CommandError::new(Code::NoToken, format!("no password is kept for {n}: add it again")))?;
        Ok((account, password))
    })
    .await?;
    probe(&account, &password).await
}

/// The accounts a starting inbox follows, with their passwords. Blocking (the keychain).
/// An account whose password is missing is shown as such and not followed.
pub fn follows(store: &Store, data_dir: &Path) -> Result<Vec<Follow>> {
    let secrets = Secrets::open(data_dir)?;
    let mut out = Vec::new();
    for row in store.email_accounts()? {
        let account = account_of(&row)?;
        match secrets.get(&password_name(&row.name, &account))? {
            Some(password) => out.push(Follow { name: row.name, account, password }),
            None => store.email_state(&row.name, "error", Some("no password is kept for this account: add it again"), &now())?,
        }
    }
    Ok(out)
}
