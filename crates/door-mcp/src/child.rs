//! The MCP server a client's configuration names, started as Gatehouse's child: in a
//! process group of its own, its stdin and stdout the relay's, its stderr the client's
//! (where MCP servers log). The whole group dies with the relay: when the client goes,
//! when the server's side closes, or when this is dropped.

use gatehouse_gate::process::{self, Group};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A started server and its group (killed when this is dropped).
pub struct Server {
    pub child: Child,
    pipes: Option<(ChildStdin, ChildStdout)>,
    group: Group,
}

/// Starts `program` with `args` (the user's own configuration: nothing the network sent).
pub fn start(program: &str, args: &[String]) -> std::io::Result<Server> {
    let mut cmd = process::command(program);
    cmd.args(args).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::inherit());
    let mut child = cmd.spawn()?;
    let group = Group::of(&child);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the server's stdin and stdout were not piped"));
    };
    Ok(Server { child, pipes: Some((stdin, stdout)), group })
}

impl Server {
    /// Its stdin and stdout, for the relay (once).
    pub fn take_pipes(&mut self) -> Option<(ChildStdin, ChildStdout)> {
        self.pipes.take()
    }

    /// Ends the server and everything it started in its group.
    pub fn stop(&mut self) {
        self.group.kill();
    }
}
