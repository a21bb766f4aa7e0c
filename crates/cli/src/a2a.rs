//! `gatehouse a2a …`: A2A agents let in with a token you give them.

use std::process::ExitCode;

use clap::Subcommand;
use gatehouse_app::Context;

use crate::CommandError;

#[derive(Subcommand)]
pub enum A2aCmd {
    /// Let a new A2A agent in with a bearer token (shown once; only its hash is kept).
    /// An agent with a client certificate needs none: it knocks, and you are asked
    Token {
        /// What you call this agent
        #[arg(long)]
        name: String,
        /// A scope it may ask for (repeatable; default: ask)
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Print the token and the contact as JSON
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: A2aCmd, o: Context) -> Result<ExitCode, CommandError> {
    match cmd {
        A2aCmd::Token { name, scopes, json } => {
            let issued = gatehouse_app::a2a::token_issue(&o.store, &name, &scopes, chrono::Utc::now())?;
            if json {
                crate::print_json(&issued);
            } else {
                eprintln!(
                    "{} may now ask for {}; give it this token, which is not shown again:",
                    issued.entry.name,
                    issued.entry.policy.allowed_scopes.join(", ")
                );
                println!("{}", issued.token);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
