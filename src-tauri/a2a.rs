//! A2A in the window: where agents reach this gate, whether agents on this computer may
//! call without TLS, tokens that let a new agent in, and the agents the user sends to.

use gatehouse_app::a2a::{AgentRow, Issued};
use serde::{Deserialize, Serialize};

use crate::commands::{blocking, ShellState};

type Result<T> = std::result::Result<T, crate::commands::CommandError>;

#[derive(Serialize, specta::Type)]
pub struct A2aInfo {
    /// The JSON-RPC endpoint on the TLS listener (none while the inbox is paused).
    pub endpoint: Option<String>,
    /// The endpoint on the plain loopback listener, served only while `plain` is on.
    pub plain_endpoint: Option<String>,
    pub plain: bool,
}

#[tauri::command]
#[specta::specta]
pub async fn a2a_info(shell: ShellState<'_>) -> Result<A2aInfo> {
    let c = shell.inner().clone();
    blocking(move || {
        let st = c.status();
        let plain_endpoint = st.listening.as_deref().and_then(|l| l.strip_suffix("/epp/v1/submit")).map(|base| format!("{base}/a2a"));
        Ok(A2aInfo { endpoint: st.uamp_listening.map(|u| format!("{u}/a2a")), plain_endpoint, plain: gatehouse_app::a2a::plain_loopback(&c)? })
    })
    .await
}

/// Lets agents on this computer call over plain HTTP (with a token), or stops it.
#[tauri::command]
#[specta::specta]
pub async fn a2a_plain_set(shell: ShellState<'_>, on: bool) -> Result<bool> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::a2a::set_plain_loopback(&c, on)).await
}

/// A token for a new agent, trusted for `scopes`; the window shows it once.
#[tauri::command]
#[specta::specta]
pub async fn a2a_token_issue(shell: ShellState<'_>, name: String, scopes: Vec<String>) -> Result<Issued> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::a2a::token_issue(&c, &name, &scopes, chrono::Utc::now())).await
}

#[tauri::command]
#[specta::specta]
pub async fn a2a_agents(shell: ShellState<'_>) -> Result<Vec<AgentRow>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::a2a::agent_list(&c)).await
}

#[derive(Deserialize, specta::Type)]
pub struct A2aAgentInput {
    pub url: String,
    pub name: String,
    /// The bearer token the agent gave the user, kept in the keychain for its address.
    pub token: Option<String>,
}

/// Adds an agent to send to: its card is read now, and its endpoint must be on that address.
#[tauri::command]
#[specta::specta]
pub async fn a2a_agent_add(shell: ShellState<'_>, input: A2aAgentInput) -> Result<AgentRow> {
    gatehouse_app::a2a::agent_add(&shell, &input.name, &input.url, input.token).await
}

#[tauri::command]
#[specta::specta]
pub async fn a2a_agent_remove(shell: ShellState<'_>, name: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::a2a::agent_remove(&c, &name)).await
}
