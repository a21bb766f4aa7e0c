//! `gatehouse mcp …`: MCP servers your AI app reaches through Gatehouse.

use crate::CommandError;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum McpCmd {
    /// Run an MCP server behind Gatehouse: put this in your AI app's MCP configuration in
    /// place of the server's command (`gatehouse mcp wrap --name files -- npx server …`).
    /// Every tool call is judged by your running Gatehouse as a step of the agent
    /// `mcp-NAME` (let it in once; then your rules decide, or you are asked).
    Wrap {
        /// What you call this server (letters, digits, - and _): it is your agent `mcp-NAME`
        #[arg(long)]
        name: String,
        /// Where your Gatehouse listens, when not at the inbox's default address
        /// (http://127.0.0.1:8765, or $GATEHOUSE_PORT)
        #[arg(long, value_name = "URL")]
        gate: Option<String>,
        /// The server's command and its arguments, after --
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// Runs on the process's own stdin and stdout, which are the app's MCP channel: nothing
/// else is printed there. Opens nothing of the data dir (an app starts its servers with
/// little of the user's environment: no keychain).
pub fn run(cmd: McpCmd) -> Result<ExitCode, CommandError> {
    match cmd {
        McpCmd::Wrap { name, gate, command } => {
            let (program, args) = command.split_first().ok_or_else(|| crate::invalid("name the server's command after --"))?;
            let (stdin, stdout) = crate::terminal::protocol_channel();
            crate::uamp::runtime()?.block_on(gatehouse_app::mcp::wrap(&name, program, args, gate.as_deref(), tokio::io::BufReader::new(stdin), stdout))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
