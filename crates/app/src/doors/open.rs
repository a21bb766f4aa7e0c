//! Opening a data dir: the identity (made on a first run) and the store, the data dir's
//! own SQLite file or a team's PostgreSQL database; everything this process writes is
//! the user's alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_keys::{Identity, KeystoreKind};
use gatehouse_store::Store;

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Keys(#[from] gatehouse_keys::KeyError),
    #[error("cannot open the store {path}: {source}")]
    Store { path: PathBuf, source: gatehouse_store::StoreError },
    #[error("cannot create the data dir {path}: {source}")]
    DataDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the gate's database ({at}): {source}")]
    Database { at: String, source: gatehouse_store::StoreError },
    /// A team's nodes are one gate with one identity: a node with another key would
    /// answer as someone else.
    #[error(
        "the gate's database belongs to the identity {owner}, and this node's identity is {mine}: give every node the team's key file (docs/team-gate.md)"
    )]
    NotThisGate { owner: String, mine: String },
}

/// Where the store lives inside a data dir.
pub fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join("gatehouse.db")
}

pub struct Opened {
    pub identity: Identity,
    pub store: Arc<Store>,
    pub created: bool,
}

/// Loads (or creates) the identity and opens the store of a data dir.
pub fn open(data_dir: &Path, keystore: KeystoreKind, create: bool) -> Result<Opened, OpenError> {
    open_at(data_dir, keystore, create, None)
}

/// [`open`], with the gate's tables in the PostgreSQL database at `database` (a team's
/// gate: every node opens the same one) instead of the data dir's own file. The data dir
/// still holds what is this node's: the identity's key (the team's, the same on every
/// node), certificates, the watched folder.
pub fn open_at(data_dir: &Path, keystore: KeystoreKind, create: bool, database: Option<&str>) -> Result<Opened, OpenError> {
    make_private(data_dir).map_err(|source| OpenError::DataDir { path: data_dir.into(), source })?;
    let (identity, created) = if create { gatehouse_keys::load_or_create(data_dir, keystore)? } else { (gatehouse_keys::load(data_dir, keystore)?, false) };
    let store_location = database.map_or_else(|| store_path(data_dir).display().to_string(), Store::describe_url);
    let store = match database {
        None => {
            let path = store_path(data_dir);
            Store::open(&path).map_err(|source| OpenError::Store { path, source })?
        }
        Some(url) => {
            let node = node_name(data_dir).map_err(|source| OpenError::DataDir { path: data_dir.into(), source })?;
            let store =
                Store::open_url(url).map_err(|source| OpenError::Database { at: Store::describe_url(url), source })?.with_data_dir(data_dir).with_node(&node);
            let claimed = store.claim_identity(&identity.public_key).map_err(|source| OpenError::Database { at: store.location(), source })?;
            if let Some(owner) = claimed {
                return Err(OpenError::NotThisGate { owner, mine: identity.public_key.clone() });
            }
            store
        }
    };
    // Every deciding row is signed by the gate's key as it is written, and acted on only
    // while it verifies (`sealer`).
    let sealer = Arc::new(crate::sealer::GateSealer::new(identity.signing_key(), Some(data_dir)));
    let store = store.with_sealer(sealer).map_err(|source| OpenError::Database { at: store_location, source })?;
    Ok(Opened { identity, store: Arc::new(store), created })
}

/// This node's name on a team's gate, kept in its data dir so that it is the same after
/// a restart (its runner then knows which claims were its own).
fn node_name(data_dir: &Path) -> std::io::Result<String> {
    let path = data_dir.join("node-id");
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Ok(_) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{} is empty", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = uuid::Uuid::new_v4().to_string();
            std::fs::write(&path, &name)?;
            Ok(name)
        }
        Err(e) => Err(e),
    }
}

/// Everything this process writes (the store, receipts, received files, exports, the
/// watched folder's filing) is the user's alone: files are created 0600 and folders 0700
/// from here on, and the data dir is made 0700 even when an older version left it open.
pub fn make_private(data_dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // SAFETY: umask only sets the process's file creation mask; it cannot fail.
        unsafe { libc::umask(0o077) };
        std::fs::create_dir_all(data_dir)?;
        std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(data_dir)
}
