//! The inbox identity: an Ed25519 key whose secret lives in the OS keychain (Secret
//! Service on Linux, Keychain on macOS, Credential Manager on Windows). A headless host
//! may opt into a 0600 file in the data dir; Gatehouse never falls back to it silently.
//!
//! `identity.json` in the data dir records only public facts: the public key, which
//! keystore holds the secret, and the keychain account name.

use std::fmt;
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

const SERVICE: &str = "gatehouse";
const META_FILE: &str = "identity.json";
const KEY_FILE: &str = "identity.key";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeystoreKind {
    Os,
    File,
}

impl std::str::FromStr for KeystoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "os" => Ok(KeystoreKind::Os),
            "file" => Ok(KeystoreKind::File),
            other => Err(format!("unknown keystore {other:?}: use os or file")),
        }
    }
}

impl fmt::Display for KeystoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeystoreKind::Os => "os",
            KeystoreKind::File => "file",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("no identity in {0}; run `gatehouse init` first")]
    Missing(PathBuf),
    #[error("the OS keychain is unavailable ({0}). On a headless host, opt into a key file with --keystore file (or GATEHOUSE_KEYSTORE=file)")]
    Keychain(String),
    #[error("the identity's secret is missing from the OS keychain (account {0}); it was removed outside Gatehouse")]
    SecretGone(String),
    #[error("this identity's secret is kept in the {stored} keystore, but --keystore {asked} was given")]
    WrongKeystore { stored: KeystoreKind, asked: KeystoreKind },
    #[error("key file {path} is readable by other users (mode {mode:o}); run chmod 600 on it")]
    LooseFile { path: PathBuf, mode: u32 },
    #[error("the stored secret does not match the recorded public key {0}")]
    Mismatch(String),
    #[error("stored identity is corrupt: {0}")]
    Corrupt(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Meta {
    public_key: String,
    keystore: KeystoreKind,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    keychain_account: Option<String>,
}

/// The inbox's signing identity. Its Debug output never includes the secret.
pub struct Identity {
    key: SigningKey,
    pub public_key: String,
    pub keystore: KeystoreKind,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity").field("public_key", &self.public_key).field("keystore", &self.keystore).finish()
    }
}

impl Identity {
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io { path: path.to_path_buf(), source }
}

fn read_meta(data_dir: &Path) -> Result<Option<Meta>, KeyError> {
    let path = data_dir.join(META_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) => serde_json::from_str(&s).map(Some).map_err(|e| KeyError::Corrupt(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&path)(e)),
    }
}

/// Loads the identity, failing with [`KeyError::Missing`] when there is none.
/// The identity of `data_dir`, from whichever keystore it was created in.
pub fn load_recorded(data_dir: &Path) -> Result<Identity, KeyError> {
    let meta = read_meta(data_dir)?.ok_or_else(|| KeyError::Missing(data_dir.to_path_buf()))?;
    load(data_dir, meta.keystore)
}

pub fn load(data_dir: &Path, kind: KeystoreKind) -> Result<Identity, KeyError> {
    let meta = read_meta(data_dir)?.ok_or_else(|| KeyError::Missing(data_dir.to_path_buf()))?;
    if meta.keystore != kind {
        return Err(KeyError::WrongKeystore { stored: meta.keystore, asked: kind });
    }
    let seed_hex = match meta.keystore {
        KeystoreKind::Os => {
            let account = meta.keychain_account.clone().ok_or_else(|| KeyError::Corrupt("no keychain account recorded".into()))?;
            let entry = keyring::Entry::new(SERVICE, &account).map_err(|e| KeyError::Keychain(e.to_string()))?;
            match entry.get_password() {
                Ok(s) => s,
                Err(keyring::Error::NoEntry) => return Err(KeyError::SecretGone(account)),
                Err(e) => return Err(KeyError::Keychain(e.to_string())),
            }
        }
        KeystoreKind::File => {
            let path = data_dir.join(KEY_FILE);
            check_private(&path)?;
            std::fs::read_to_string(&path).map_err(io(&path))?
        }
    };
    let key = key_from_hex(seed_hex.trim())?;
    let public_key = public_hex(&key);
    if public_key != meta.public_key {
        return Err(KeyError::Mismatch(meta.public_key));
    }
    Ok(Identity { key, public_key, keystore: meta.keystore })
}

/// An identity's public key as every door and the registry write it: 64 lower-case hex
/// digits of the Ed25519 key.
pub fn public_hex(key: &ed25519_dalek::SigningKey) -> String {
    hex::encode(key.verifying_key().as_bytes())
}

/// Loads the identity, creating it first if the data dir has none. Returns whether it
/// was created.
pub fn load_or_create(data_dir: &Path, kind: KeystoreKind) -> Result<(Identity, bool), KeyError> {
    if read_meta(data_dir)?.is_some() {
        return load(data_dir, kind).map(|i| (i, false));
    }
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let key = ed25519_dalek::SigningKey::generate(&mut rand::rngs::OsRng);
    let public_key = public_hex(&key);
    let seed_hex = hex::encode(key.to_bytes());
    let keychain_account = match kind {
        KeystoreKind::Os => {
            // One account per identity, so two data dirs (two inboxes) never collide.
            let account = format!("inbox-identity-{}", uuid::Uuid::new_v4());
            let entry = keyring::Entry::new(SERVICE, &account).map_err(|e| KeyError::Keychain(e.to_string()))?;
            entry.set_password(&seed_hex).map_err(|e| KeyError::Keychain(e.to_string()))?;
            // Read back: some backends accept a write they cannot serve later.
            match entry.get_password() {
                Ok(s) if s == seed_hex => {}
                Ok(_) => return Err(KeyError::Keychain("the keychain returned a different secret than was stored".into())),
                Err(e) => return Err(KeyError::Keychain(e.to_string())),
            }
            Some(account)
        }
        KeystoreKind::File => {
            write_private(&data_dir.join(KEY_FILE), &seed_hex)?;
            None
        }
    };
    let meta = Meta { public_key: public_key.clone(), keystore: kind, keychain_account };
    let meta_path = data_dir.join(META_FILE);
    let tmp = data_dir.join(format!(".{META_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(&meta).expect("meta serialises")).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &meta_path).map_err(io(&meta_path))?;
    Ok((Identity { key, public_key, keystore: kind }, true))
}

/// A key of its own kept in `path` (0600, its folder 0700), made on first use: for a
/// process that runs where the keychain cannot be reached (an MCP server's wrap, started
/// by an app that passes it little of the user's environment). A file readable by anyone
/// else is refused, as the identity's is.
pub fn load_or_create_file(path: &Path) -> Result<SigningKey, KeyError> {
    match std::fs::read_to_string(path) {
        Ok(s) => {
            check_private(path)?;
            return key_from_hex(s.trim());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(path)(e)),
    }
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let key = SigningKey::generate(&mut rand::rngs::OsRng);
    // Written whole beside it, then linked into place: a process starting at the same time
    // reads no half-written key, and the first one linked is the one both use.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.new", uuid::Uuid::new_v4()));
    let tmp = PathBuf::from(tmp);
    write_private(&tmp, &hex::encode(key.to_bytes()))?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let s = std::fs::read_to_string(path).map_err(io(path))?;
            check_private(path)?;
            key_from_hex(s.trim())
        }
        Err(e) => Err(io(path)(e)),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<(), KeyError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) => Err(io(dir)(e)),
    }
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<(), KeyError> {
    std::fs::create_dir_all(dir).map_err(io(dir))
}

/// Removes the identity's secret and metadata (used by tests and `gatehouse identity --delete`).
pub fn delete(data_dir: &Path) -> Result<(), KeyError> {
    let Some(meta) = read_meta(data_dir)? else { return Ok(()) };
    if let Some(account) = meta.keychain_account {
        let entry = keyring::Entry::new(SERVICE, &account).map_err(|e| KeyError::Keychain(e.to_string()))?;
        match entry.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => {}
            Err(e) => return Err(KeyError::Keychain(e.to_string())),
        }
    }
    for f in [KEY_FILE, META_FILE] {
        let p = data_dir.join(f);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&p)(e)),
        }
    }
    Ok(())
}

/// Other secrets of this identity (a bearer token a UAMP peer issued to Gatehouse, for
/// one): kept in the same keystore as the identity, never in the store.
pub struct Secrets {
    data_dir: PathBuf,
    keystore: KeystoreKind,
    account: Option<String>,
}

impl Secrets {
    /// The secret store of the identity in `data_dir` (which must exist).
    pub fn open(data_dir: &Path) -> Result<Secrets, KeyError> {
        let meta = read_meta(data_dir)?.ok_or_else(|| KeyError::Missing(data_dir.to_path_buf()))?;
        Ok(Secrets { data_dir: data_dir.to_path_buf(), keystore: meta.keystore, account: meta.keychain_account })
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry, KeyError> {
        let account = self.account.as_deref().ok_or_else(|| KeyError::Corrupt("no keychain account recorded".into()))?;
        keyring::Entry::new(SERVICE, &format!("{account}/{name}")).map_err(|e| KeyError::Keychain(e.to_string()))
    }

    fn file(&self, name: &str) -> PathBuf {
        let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
        self.data_dir.join("secrets").join(safe)
    }

    /// Keeps `value` under `name`, replacing what was there.
    pub fn put(&self, name: &str, value: &str) -> Result<(), KeyError> {
        match self.keystore {
            KeystoreKind::Os => self.entry(name)?.set_password(value).map_err(|e| KeyError::Keychain(e.to_string())),
            KeystoreKind::File => {
                let path = self.file(name);
                let dir = path.parent().expect("secrets has a parent");
                std::fs::create_dir_all(dir).map_err(io(dir))?;
                let _ = std::fs::remove_file(&path);
                write_private(&path, value)
            }
        }
    }

    pub fn get(&self, name: &str) -> Result<Option<String>, KeyError> {
        match self.keystore {
            KeystoreKind::Os => match self.entry(name)?.get_password() {
                Ok(s) => Ok(Some(s)),
                Err(keyring::Error::NoEntry) => Ok(None),
                Err(e) => Err(KeyError::Keychain(e.to_string())),
            },
            KeystoreKind::File => {
                let path = self.file(name);
                match std::fs::read_to_string(&path) {
                    Ok(s) => {
                        check_private(&path)?;
                        Ok(Some(s))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(io(&path)(e)),
                }
            }
        }
    }

    pub fn delete(&self, name: &str) -> Result<(), KeyError> {
        match self.keystore {
            KeystoreKind::Os => match self.entry(name)?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(KeyError::Keychain(e.to_string())),
            },
            KeystoreKind::File => match std::fs::remove_file(self.file(name)) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io(&self.file(name))(e)),
            },
        }
    }
}

fn key_from_hex(s: &str) -> Result<SigningKey, KeyError> {
    let bytes: [u8; 32] =
        hex::decode(s).ok().and_then(|b| b.try_into().ok()).ok_or_else(|| KeyError::Corrupt("the stored secret is not 32 bytes of hex".into()))?;
    Ok(SigningKey::from_bytes(&bytes))
}

#[cfg(unix)]
fn write_private(path: &Path, contents: &str) -> Result<(), KeyError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(io(path))?;
    f.write_all(contents.as_bytes()).and_then(|_| f.sync_all()).map_err(io(path))
}

#[cfg(not(unix))]
fn write_private(path: &Path, contents: &str) -> Result<(), KeyError> {
    std::fs::write(path, contents).map_err(io(path))
}

/// Replaces `path` with `contents`, readable by this user only (0600): written whole to a
/// new file beside it, synced, then renamed over it, so a reader sees the old or the new,
/// never a part. For what a machine keeps of its own in its data dir.
pub fn replace_private(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = std::path::PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    write_private(&tmp, contents).map_err(|e| std::io::Error::other(e.to_string()))?;
    std::fs::rename(&tmp, path)
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), KeyError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_err(io(path))?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::LooseFile { path: path.to_path_buf(), mode });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), KeyError> {
    Ok(())
}
