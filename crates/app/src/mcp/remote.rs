//! MCP servers the user adds by address, served to their AI app by the gate itself
//! (`door-mcp/src/served.rs`): the address in a sealed setting (it decides where the
//! gate connects and whose calls it passes), the user's credentials for the server in the
//! keychain, never in a file or the app's configuration; the app proves it is the user's
//! with a token Gatehouse gives once, kept only as its hash.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::doors::mcp::served::{Remote, Remotes};
use crate::doors::mcp::signed;
use crate::{Code, CommandError, Context, Result};

/// The setting the added servers are kept in (sealed, as every deciding setting).
pub const SETTING: &str = "mcp_remotes";

/// One server the user added.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RemoteEntry {
    pub url: String,
    /// SHA-256 (hex) of the app's token.
    pub token_sha256: String,
    /// Whether a credential for it is in the keychain.
    pub credential: bool,
    pub added_at: String,
}

/// What the app is configured with to reach a server the user added.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Added {
    pub name: String,
    /// Where the app connects (the inbox's address).
    pub url: String,
    /// The token the app sends (`Authorization: Bearer …`); shown this once.
    pub token: String,
}

fn secret_name(name: &str) -> String {
    format!("mcp-remote-{name}")
}

fn entries(ctx: &Context) -> Result<BTreeMap<String, RemoteEntry>> {
    Ok(ctx.store.setting(SETTING)?.unwrap_or_default())
}

/// Adds the server `name` at `url` (https, or http on this computer), with the
/// credential the user gave for it (an `Authorization` header's value) kept in the
/// keychain. `inbox` is where the app reaches the gate. Audited.
pub fn add(ctx: &Context, name: &str, url: &str, credential: Option<&str>, inbox: &str) -> Result<Added> {
    if !signed::name_ok(name) {
        return Err(CommandError::new(Code::Invalid, format!("{name:?}: a server's name is 1 to 64 letters, digits, - or _")));
    }
    super::wrap::address_ok(url)?;
    let name = name.to_ascii_lowercase();
    let mut all = entries(ctx)?;
    if all.contains_key(&name) {
        return Err(CommandError::new(Code::Invalid, format!("a server {name:?} was added already; remove it first")));
    }
    if let Some(c) = credential {
        reqwest::header::HeaderValue::from_str(c).map_err(|_| CommandError::new(Code::Invalid, "the credential is not a header's value (one line of text)"))?;
        gatehouse_keys::Secrets::open(&ctx.data_dir)?.put(&secret_name(&name), c)?;
    }
    let mut raw = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut raw)
        .map_err(|_| CommandError::new(Code::Internal, "no randomness from the system"))?;
    let token = hex::encode(raw);
    all.insert(
        name.clone(),
        RemoteEntry {
            url: url.to_string(),
            token_sha256: hex::encode(Sha256::digest(token.as_bytes())),
            credential: credential.is_some(),
            added_at: crate::now(),
        },
    );
    ctx.store.set_setting(SETTING, &all)?;
    ctx.store.audit("mcp.remote_add", Some(&name), &serde_json::json!({"url": url, "credential": credential.is_some()}), &crate::now())?;
    let url = format!("{}{}", inbox.trim_end_matches('/'), crate::doors::mcp::served::PATH.replace("{name}", &name));
    Ok(Added { name, url, token })
}

/// Removes a server the user added, and its credential. Audited.
pub fn remove(ctx: &Context, name: &str) -> Result<()> {
    let name = name.to_ascii_lowercase();
    let mut all = entries(ctx)?;
    if all.remove(&name).is_none() {
        return Err(CommandError::new(Code::NotFound, format!("no server {name:?} was added")));
    }
    ctx.store.set_setting(SETTING, &all)?;
    let _ = gatehouse_keys::Secrets::open(&ctx.data_dir).and_then(|s| s.delete(&secret_name(&name)));
    ctx.store.audit("mcp.remote_remove", Some(&name), &serde_json::json!({}), &crate::now())?;
    Ok(())
}

/// The servers the user added, by name.
pub fn list(ctx: &Context) -> Result<BTreeMap<String, RemoteEntry>> {
    entries(ctx)
}

/// The added servers as the gate's MCP door reads them: the sealed setting, and each
/// one's credential from the keychain (read when a session begins).
pub struct Kept {
    pub store: Arc<gatehouse_store::Store>,
    pub data_dir: Option<PathBuf>,
}

impl Kept {
    fn entry(&self, name: &str) -> Option<RemoteEntry> {
        let all: BTreeMap<String, RemoteEntry> = self.store.setting(SETTING).ok().flatten()?;
        all.get(&name.to_ascii_lowercase()).cloned()
    }
}

impl Remotes for Kept {
    fn remote(&self, name: &str) -> Option<Remote> {
        self.entry(name).map(|e| Remote { url: e.url, token_sha256: e.token_sha256 })
    }

    fn credential(&self, name: &str) -> std::result::Result<reqwest::header::HeaderMap, String> {
        let mut headers = reqwest::header::HeaderMap::new();
        if !self.entry(name).is_some_and(|e| e.credential) {
            return Ok(headers);
        }
        let cannot = |why: String| format!("cannot read the credential for {name:?} from the keychain: {why}");
        let dir = self.data_dir.as_deref().ok_or_else(|| cannot("this gate has no data dir".into()))?;
        let secret = gatehouse_keys::Secrets::open(dir)
            .and_then(|s| s.get(&secret_name(&name.to_ascii_lowercase())))
            .map_err(|e| cannot(e.to_string()))?
            .ok_or_else(|| cannot("it is not there (removed outside Gatehouse?)".into()))?;
        headers
            .insert(reqwest::header::AUTHORIZATION, reqwest::header::HeaderValue::from_str(&secret).map_err(|_| cannot("it is not a header's value".into()))?);
        Ok(headers)
    }
}
