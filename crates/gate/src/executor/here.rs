//! What this machine's operator allowed to run here. The executor setting lives in the
//! database, which every node of a team shares and which whoever holds a database login
//! can write: a row there must not make a node run a program or write into a folder. A
//! program runs, and a folder is written, only when it is listed in this machine's own
//! file ([`FILE`], 0600 in its data dir), written when the user sets the executor on this
//! machine (the CLI command typed, the window's native confirmation) or allows it with
//! `gatehouse executor allow` — never because a row says so (docs/threat-model.md 9).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ExecutorSpec;

/// The file in a data dir that lists what may run on this machine.
pub const FILE: &str = "runs-here.json";

/// A program with its arguments, or a folder, that may be used on this machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    #[serde(default)]
    pub programs: Vec<Program>,
    #[serde(default)]
    pub folders: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
}

impl Listed {
    /// Whether `spec` may run here: commands and folders only when listed, exactly.
    pub fn permits(&self, spec: &ExecutorSpec) -> bool {
        match spec {
            ExecutorSpec::Command { program, args, .. } => self.programs.iter().any(|p| &p.program == program && &p.args == args),
            ExecutorSpec::FileQueue { dir } => self.folders.iter().any(|f| f == dir),
            _ => true,
        }
    }

    /// Adds what `spec` runs or writes into, if it is a program or a folder.
    pub fn add(&mut self, spec: &ExecutorSpec) {
        if self.permits(spec) {
            return;
        }
        match spec {
            ExecutorSpec::Command { program, args, .. } => self.programs.push(Program { program: program.clone(), args: args.clone() }),
            ExecutorSpec::FileQueue { dir } => self.folders.push(dir.clone()),
            _ => {}
        }
    }
}

/// Where a machine's list is kept, or that the gate was composed without one.
#[derive(Debug, Clone, Default)]
pub enum RunsHere {
    /// Composed in-process without a data dir (the crates' own tests): every executor runs.
    #[default]
    Unlisted,
    /// The data dir whose [`FILE`] lists what may run.
    In(PathBuf),
}

impl RunsHere {
    /// Why `spec` may not run here, or None. The list is read at each run, so an
    /// allowance made by the CLI takes effect on a running node.
    pub fn refusal(&self, spec: &ExecutorSpec) -> Option<String> {
        let RunsHere::In(dir) = self else { return None };
        if !matches!(spec, ExecutorSpec::Command { .. } | ExecutorSpec::FileQueue { .. }) {
            return None;
        }
        match load(dir) {
            Ok(l) if l.permits(spec) => None,
            Ok(_) => Some(format!(
                "{} is not allowed on this machine: the executor setting came from the database, not from this machine's operator. \
                 Set it here (`gatehouse executor set`, or the window), or run `gatehouse executor allow` on this machine",
                what(spec)
            )),
            Err(e) => Some(format!("{} was not run: this machine's list of what may run could not be read ({e})", what(spec))),
        }
    }
}

fn what(spec: &ExecutorSpec) -> String {
    match spec {
        ExecutorSpec::Command { program, args, .. } => format!("the program {program} {}", args.join(" ")).trim_end().to_string(),
        ExecutorSpec::FileQueue { dir } => format!("the folder {}", dir.display()),
        other => other.name().to_string(),
    }
}

/// The list in `dir` (empty when there is none).
pub fn load(dir: &Path) -> Result<Listed, String> {
    match std::fs::read_to_string(dir.join(FILE)) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", dir.join(FILE).display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Listed::default()),
        Err(e) => Err(format!("{}: {e}", dir.join(FILE).display())),
    }
}

/// Writes `listed` to `dir` (0600, replacing the old list whole).
pub fn save(dir: &Path, listed: &Listed) -> Result<(), String> {
    gatehouse_keys::replace_private(&dir.join(FILE), &serde_json::to_string_pretty(listed).unwrap_or_default())
        .map_err(|e| format!("{}: {e}", dir.join(FILE).display()))
}
