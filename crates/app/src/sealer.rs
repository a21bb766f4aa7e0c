//! The gate's key as the store's [`Sealer`]: every trust entry, block, revocation, deciding
//! setting, approver and quorum rule is signed by it when Gatehouse writes it, and acted on
//! only while it verifies. The newest head of that sealed state this machine verified is
//! kept in its data dir (`state-witness.json`, 0600), out of the database's reach, so a
//! database put back to an older copy is found (docs/threat-model-team.md 25).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use ed25519_dalek::{Signer as _, SigningKey, Verifier as _};
use gatehouse_store::Sealer;

pub const FILE: &str = "state-witness.json";

pub struct GateSealer {
    key: SigningKey,
    public: String,
    /// Where the witness is kept (none: kept in memory only, for stores in tests).
    dir: Option<PathBuf>,
    /// The newest version kept, also in memory (a witness that could not be written
    /// still holds for this process).
    newest: AtomicI64,
    writing: std::sync::Mutex<()>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Witness {
    version: i64,
}

impl GateSealer {
    pub fn new(key: &SigningKey, data_dir: Option<&Path>) -> GateSealer {
        GateSealer {
            key: key.clone(),
            public: hex::encode(key.verifying_key().as_bytes()),
            dir: data_dir.map(Path::to_path_buf),
            newest: AtomicI64::new(0),
            writing: std::sync::Mutex::new(()),
        }
    }

    fn in_file(&self) -> Option<i64> {
        let path = self.dir.as_ref()?.join(FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => match serde_json::from_str::<Witness>(&text) {
                Ok(w) => Some(w.version),
                Err(e) => {
                    // Unreadable is not "never saw one": the database's head is then
                    // checked against what this process saw, and the file rewritten.
                    tracing::warn!("{}: not a witness this machine kept ({e})", path.display());
                    None
                }
            },
            Err(_) => None,
        }
    }
}

impl Sealer for GateSealer {
    fn signer(&self) -> String {
        self.public.clone()
    }

    fn sign(&self, message: &[u8]) -> String {
        hex::encode(self.key.sign(message).to_bytes())
    }

    fn verify(&self, message: &[u8], signature: &str) -> bool {
        let Ok(bytes) = hex::decode(signature) else { return false };
        let Ok(sig) = ed25519_dalek::Signature::from_slice(&bytes) else { return false };
        self.key.verifying_key().verify(message, &sig).is_ok()
    }

    fn kept(&self) -> Option<i64> {
        let memory = self.newest.load(Ordering::Acquire);
        match (self.in_file(), memory) {
            (None, 0) => None,
            (file, memory) => Some(file.unwrap_or(0).max(memory)),
        }
    }

    fn keep(&self, version: i64) {
        self.newest.fetch_max(version, Ordering::AcqRel);
        let Some(dir) = &self.dir else { return };
        // One writer at a time, so an older version never lands after a newer one.
        let _turn = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        if self.in_file().is_some_and(|v| v >= version) {
            return;
        }
        let text = serde_json::to_string(&Witness { version }).unwrap_or_default();
        if let Err(e) = gatehouse_keys::replace_private(&dir.join(FILE), &text) {
            tracing::warn!("keeping the gate's state version in {}: {e}", dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_witness_only_moves_forward_and_survives_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        let s = GateSealer::new(&key, Some(dir.path()));
        assert_eq!(s.kept(), None);
        s.keep(5);
        s.keep(3);
        assert_eq!(s.kept(), Some(5));
        let again = GateSealer::new(&key, Some(dir.path()));
        assert_eq!(again.kept(), Some(5), "a new process reads what the last one kept");
        let sig = s.sign(b"m");
        assert!(s.verify(b"m", &sig));
        assert!(!s.verify(b"n", &sig));
        assert!(!s.verify(b"m", "zz"));
    }
}
