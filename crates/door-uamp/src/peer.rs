//! Learning a UAMP peer's keys when the user adds it (never when an envelope arrives).

use gatehouse_store::UampKey;
use gatehouse_uamp::did;

/// DID documents larger than this are refused.
const MAX_DID_DOCUMENT: usize = 64 * 1024;

/// The keys to keep in a new trust entry for `sender`: none for a did:key (it carries its
/// key, which is checked here), the DID document's keys for a did:web (fetched over HTTPS).
pub async fn keys_for(sender: &str) -> Result<Vec<UampKey>, String> {
    if sender.starts_with("did:key:") {
        did::resolve_did_key(sender).map_err(|e| format!("{sender}: {e}"))?;
        return Ok(Vec::new());
    }
    keys_with(&client()?, sender).await
}

/// The client DID documents are fetched with: HTTPS only, no redirects, a time limit. A
/// debug build also trusts the certificate authority in the PEM file
/// `GATEHOUSE_TEST_DID_CA` names, when that file exists (read at each fetch), so tests can
/// serve a DID document on loopback; a release build has no such knob.
fn client() -> Result<reqwest::Client, String> {
    #[allow(unused_mut)]
    let mut b = reqwest::Client::builder().https_only(true).timeout(std::time::Duration::from_secs(15)).redirect(reqwest::redirect::Policy::none());
    #[cfg(debug_assertions)]
    if let Some(pem) = std::env::var_os("GATEHOUSE_TEST_DID_CA").and_then(|p| std::fs::read(p).ok()) {
        b = b.add_root_certificate(reqwest::Certificate::from_pem(&pem).map_err(|e| format!("GATEHOUSE_TEST_DID_CA: {e}"))?);
    }
    b.build().map_err(|e| e.to_string())
}

/// A did:web's keys, read from its DID document fetched with `client`.
pub async fn keys_with(client: &reqwest::Client, sender: &str) -> Result<Vec<UampKey>, String> {
    let url = did::did_web_url(sender)?;
    let resp = client.get(&url).send().await.map_err(|e| format!("fetching {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("fetching {url}: HTTP {}", resp.status()));
    }
    let bytes = gatehouse_http::read_limited(&url, resp, MAX_DID_DOCUMENT).await.map_err(|e| e.to_string())?;
    let doc: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| format!("{url} is not JSON: {e}"))?;
    let (bare, _) = did::split_kid(sender);
    let keys = did::keys_from_document(bare, &doc)?;
    Ok(keys.into_iter().map(|(kid, k)| UampKey { kid, jwk: k.to_jwk() }).collect())
}
