//! The EPP reference inbox (github.com/elliptic1/external-prompt-protocol, FastAPI), started
//! for `gatehouse bench --reference` so both inboxes are measured by the same client on the
//! same machine in one run. Nothing of it is in this repository: the user points at a
//! checkout and at a Python that has its dependencies (docs/performance.md says how).

use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;

use super::server::Server;

pub struct Reference {
    /// The reference's source: the directory holding its `epp/` package.
    pub source: PathBuf,
    /// The Python that runs it (a venv with FastAPI, uvicorn, pydantic, cryptography, PyYAML).
    pub python: PathBuf,
}

impl Reference {
    /// Whether `source` is the reference, said before anything is measured.
    pub fn check(&self) -> Result<(), String> {
        if !self.source.join("epp/inbox/server.py").is_file() {
            return Err(format!("{} is not a checkout of the EPP reference (no epp/inbox/server.py)", self.source.display()));
        }
        Ok(())
    }

    /// Starts the reference's own server (`epp.inbox.server.InboxServer`, as its README
    /// runs it) in a fresh directory under `dir`, trusting `senders` for every scope with
    /// its default policy otherwise, and its no-op executor (as Gatehouse's bench inbox
    /// has). Returns the server and the inbox key it made.
    pub fn start(&self, dir: &Path, senders: &[SigningKey]) -> Result<(Server, String), String> {
        self.check()?;
        let home = dir.join("reference");
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let (key, public, registry) = (home.join("inbox.key"), home.join("inbox.pub"), home.join("trust_registry.json"));
        let config = serde_json::json!({
            "inbox": {"host": "127.0.0.1", "port": port, "data_dir": home.join("data")},
            "keys": {"private_key_path": key, "public_key_path": public},
            "storage": {"trust_registry": registry},
            "executor": {"type": "noop"},
        });
        // JSON is YAML: the reference reads its configuration with yaml.safe_load.
        std::fs::write(home.join("config.yaml"), config.to_string()).map_err(|e| e.to_string())?;
        let entries: Vec<_> = senders
            .iter()
            .enumerate()
            .map(|(i, s)| {
                serde_json::json!({
                    "public_key": gatehouse_epp::public_key_hex(s),
                    "name": format!("bench sender {i}"),
                    "added_at": gatehouse_epp::utc_string(chrono::Utc::now()),
                    "policy": {"allowed_scopes": ["*"]},
                })
            })
            .collect();
        std::fs::write(&registry, serde_json::json!({"version": "1", "senders": entries}).to_string()).map_err(|e| e.to_string())?;
        let child = std::process::Command::new(&self.python)
            .arg("-c")
            .arg("import sys; from epp.inbox.server import InboxServer; InboxServer(config_path=sys.argv[1]).run()")
            .arg(home.join("config.yaml"))
            .current_dir(&self.source)
            .env("PYTHONPATH", &self.source)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the reference with {}: {e}", self.python.display()))?;
        // uvicorn's own line once its socket is bound: "Uvicorn running on http://127.0.0.1:PORT".
        let server = Server::listening(child, "Uvicorn running on http://", "reference")?;
        let inbox = std::fs::read_to_string(&public).map_err(|e| format!("the reference wrote no key to {}: {e}", public.display()))?;
        Ok((server, inbox.trim().to_string()))
    }
}
