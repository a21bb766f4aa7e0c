//! MCP servers in the window (under Your agents): each server with its tools as let in and
//! those held, the rules for its calls, and its calls as a timeline. Each command is one
//! call into gatehouse_app::mcp, which the CLI calls too (`gatehouse mcp …`).

use gatehouse_app::guardian::{AsopRuleRow, AsopStepRow, RuleInput};
use gatehouse_app::mcp::{McpServerItem, McpTools};

use crate::commands::{blocking, CommandError, ShellState};

type Result<T> = std::result::Result<T, CommandError>;

#[tauri::command]
#[specta::specta]
pub async fn mcp_servers(shell: ShellState<'_>) -> Result<Vec<McpServerItem>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::mcp::servers(&c)).await
}

/// A server's tools (`server`: its name, or its key).
#[tauri::command]
#[specta::specta]
pub async fn mcp_tools(shell: ShellState<'_>, server: String) -> Result<McpTools> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::mcp::tools(&c, &server)).await
}

#[tauri::command]
#[specta::specta]
pub async fn mcp_rules(shell: ShellState<'_>, server: String) -> Result<Vec<AsopRuleRow>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::mcp::rules(&c, &server)).await
}

/// A rule for one of a server's tools (its agent and method are the server's).
#[tauri::command]
#[specta::specta]
pub async fn mcp_rule_add(shell: ShellState<'_>, server: String, input: RuleInput) -> Result<AsopRuleRow> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::mcp::rule_add(&c, &server, input)).await
}

/// A server's last calls, newest first.
#[tauri::command]
#[specta::specta]
pub async fn mcp_log(shell: ShellState<'_>, server: String) -> Result<Vec<AsopStepRow>> {
    let c = shell.inner().clone();
    blocking(move || gatehouse_app::mcp::log(&c, &server, 200)).await
}
