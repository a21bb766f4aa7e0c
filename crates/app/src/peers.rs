//! UAMP peers the user adds, with the token each issued to this inbox kept in the keychain:
//! added only under the certificate fingerprint the user compared, removed with their
//! token, every change audited. Both faces first show what `discover` found.

use std::path::Path;

use crate::doors::uamp::client::{self, Client};
use gatehouse_keys::Secrets;
use gatehouse_store::Store;

use crate::{Code, CommandError, Context, Result};

pub use crate::doors::uamp::client::{Ask, AskProgress, Discovered, DEFAULT_WINDOW};
pub use gatehouse_store::uamp::PeerRow;

/// A peer as the user sees it: whether it gave this inbox a token.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PeerView {
    #[serde(flatten)]
    pub peer: PeerRow,
    pub has_token: bool,
}

/// Keeps a peer: its manifest is fetched again under `pin` (the fingerprint the user was
/// shown and confirmed; the peer must still present it), then the peer is stored, its
/// token (if any) put in the keychain, and the addition audited.
pub async fn add(ctx: &Context, url: &str, name: &str, pin: &str, token: Option<String>) -> Result<PeerRow> {
    let data_dir: &Path = &ctx.data_dir;
    let store = ctx.store.clone();
    let name = name.trim().to_string();
    if name.is_empty() {
        return Err(CommandError::new(Code::Invalid, "give the peer a name"));
    }
    let found = client::discover(url, Some(pin)).await?;
    let data_dir = data_dir.to_path_buf();
    crate::blocking(move || {
        let row = PeerRow {
            did: found.did,
            name,
            url: found.url,
            cert_sha256: found.cert_sha256,
            manifest: serde_json::to_value(&found.manifest).unwrap_or_default(),
            added_at: crate::now(),
        };
        if let Some(t) = token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            Secrets::open(&data_dir).and_then(|s| s.put(&client::token_name(&row.did), t))?;
        }
        store.uamp_peer_put(&row)?;
        store.audit("uamp.peer_add", Some(&row.did), &serde_json::json!({"url": row.url, "cert_sha256": row.cert_sha256}), &row.added_at)?;
        Ok(row)
    })
    .await
}

pub fn list(ctx: &Context) -> Result<Vec<PeerView>> {
    let data_dir: &Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let secrets = Secrets::open(data_dir)?;
    store.uamp_peers()?.into_iter().map(|p| Ok(PeerView { has_token: secrets.get(&client::token_name(&p.did))?.is_some(), peer: p })).collect()
}

/// A peer by its DID or the name the user gave it.
pub fn find(ctx: &Context, peer: &str) -> Result<PeerRow> {
    find_in(&ctx.store, peer)
}

/// [`find`] on the store itself, for this crate's own callers.
pub(crate) fn find_in(store: &Store, peer: &str) -> Result<PeerRow> {
    store.uamp_peer(peer)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no peer {peer:?}; add it first (its https://host:port address)")))
}

/// Keeps the token a peer issued to this inbox (replacing an earlier one), audited.
pub fn set_token(ctx: &Context, peer: &str, token: &str) -> Result<PeerRow> {
    let data_dir: &Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let row = find(ctx, peer)?;
    Secrets::open(data_dir).and_then(|s| s.put(&client::token_name(&row.did), token.trim()))?;
    store.audit("uamp.peer_token", Some(&row.did), &serde_json::json!({}), &crate::now())?;
    Ok(row)
}

/// Forgets a peer (by DID or name) and the token it issued, audited.
pub fn remove(ctx: &Context, peer: &str) -> Result<PeerRow> {
    let data_dir: &Path = &ctx.data_dir;
    let store: &Store = &ctx.store;
    let row = find(ctx, peer)?;
    store.uamp_peer_remove(&row.did)?;
    Secrets::open(data_dir).and_then(|s| s.delete(&client::token_name(&row.did)))?;
    store.audit("uamp.peer_remove", Some(&row.did), &serde_json::json!({}), &crate::now())?;
    Ok(row)
}

/// Step one of adding a peer: what it is, for the user to check before trusting it (with
/// `pin`, only if it presents that certificate).
pub async fn discover(url: &str, pin: Option<&str>) -> Result<Discovered> {
    Ok(client::discover(url, pin).await?)
}

/// The token `peer` issued to this inbox, from the keychain.
async fn token_of(ctx: &Context, peer: &PeerRow) -> Result<Option<String>> {
    let (data_dir, name) = (ctx.data_dir.clone(), client::token_name(&peer.did));
    crate::blocking(move || Ok(Secrets::open(&data_dir).and_then(|s| s.get(&name))?)).await
}

/// Sends as this inbox's identity, keeping answers under the data dir.
fn sender(ctx: &Context) -> Client {
    Client { key: ctx.key.clone(), store: ctx.store.clone(), files_dir: client::files_dir(&ctx.data_dir) }
}

/// Sends `ask` to a peer ([`find`] it first) and follows its stream to its final state;
/// `on_progress` sees every step. A refusal or an unreachable peer is an error.
pub async fn ask(ctx: &Context, peer: &PeerRow, ask: &Ask, on_progress: impl FnMut(&AskProgress) + Send) -> Result<AskProgress> {
    let token = token_of(ctx, peer).await?;
    Ok(sender(ctx).ask(peer, token.as_deref(), ask, on_progress).await?)
}

/// Asks the peer of one of this inbox's asks to stop its stream.
pub async fn cancel(ctx: &Context, stream_id: &str) -> Result<()> {
    let (store, id) = (ctx.store.clone(), stream_id.to_string());
    let row = crate::blocking(move || find_in(&store, &crate::streams::peer_of(&store, &id)?)).await?;
    let token = token_of(ctx, &row).await?;
    Ok(sender(ctx).cancel(&row, token.as_deref(), stream_id).await?)
}
