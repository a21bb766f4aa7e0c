//! Mail accounts in the window (EPP by email): listed with their state, added after the
//! servers accept the login (the password goes to the keychain), tested, removed. Each
//! command is one call into gatehouse_app::email, which the CLI calls too; a change
//! restarts the inbox's transports so the account is followed (or dropped) at once.

use gatehouse_app::email::{self, AccountInput, EmailAccountRow};

use crate::commands::{blocking, CommandError, ShellState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn email_accounts(shell: ShellState<'_>) -> Result<Vec<EmailAccountRow>> {
    let c = shell.inner().clone();
    blocking(move || email::list(&c)).await
}

/// Adds (or changes) an account once its servers accept the login; returns what they said.
#[tauri::command]
#[specta::specta]
pub async fn email_add(shell: ShellState<'_>, input: AccountInput) -> Result<String> {
    let c = shell.inner().clone();
    let account = input.account()?;
    let (_, said) = email::add(&c, &input.name, account, input.password).await?;
    restart(&c).await;
    Ok(said)
}

/// Logs in again with the kept password and says what the servers hold.
#[tauri::command]
#[specta::specta]
pub async fn email_test(shell: ShellState<'_>, name: String) -> Result<String> {
    let c = shell.inner().clone();
    email::test(&c, &name).await
}

#[tauri::command]
#[specta::specta]
pub async fn email_remove(shell: ShellState<'_>, name: String) -> Result<()> {
    let c = shell.inner().clone();
    let shell = c.clone();
    blocking(move || email::remove(&shell, &name)).await?;
    restart(&c).await;
    Ok(())
}

/// A paused inbox stays paused; it follows the accounts as they are when resumed.
async fn restart(c: &std::sync::Arc<crate::shell::Shell>) {
    if !c.status().paused {
        c.start().await;
    }
}
