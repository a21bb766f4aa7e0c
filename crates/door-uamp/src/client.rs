//! Gatehouse as a UAMP client (spec 7, 8): adding a peer by its URL — its signed manifest
//! fetched, verified and shown with the certificate fingerprint to pin — and sending it an
//! `ask` whose stream is followed, acknowledged within its window, and whose `chunk_b64`
//! frames are reassembled into a file.
//!
//! A peer's certificate is pinned (SHA-256 of its DER), not checked against public CAs:
//! Gatehouse inboxes use self-signed certificates on their identity key, and a pin is what
//! the user compared when they added the peer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::SigningKey;
pub use gatehouse_http::HttpError;
use gatehouse_store::uamp::{NewStream, NewUampMessage, PeerRow};
use gatehouse_store::Store;
use gatehouse_uamp::manifest::SignedManifest;
use gatehouse_uamp::{did, sign, Intent, Manifest};
use serde::Serialize;
use serde_json::Value;

/// Signed manifests larger than this are refused.
const MAX_MANIFEST_BYTES: usize = 256 * 1024;
/// How often a dropped stream is resumed (`Last-Event-ID`) before giving up.
const RESUMES: u32 = 5;
/// Frames asked for in flight when the user does not choose.
pub const DEFAULT_WINDOW: u32 = 16;

/// Where reassembled answers are kept, in a data dir.
pub fn files_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("received")
}

/// The keychain name of the bearer token a peer issued to this inbox.
pub fn token_name(peer_did: &str) -> String {
    format!("uamp-token:{}", gatehouse_store::sender_key(peer_did))
}

/// What the user is shown before adding a peer.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Discovered {
    /// The DID that signed the manifest: the identity Gatehouse will address.
    pub did: String,
    pub url: String,
    /// SHA-256 of the certificate the peer presented, to compare and pin.
    pub cert_sha256: String,
    pub manifest: Manifest,
}

/// Fetches `url`'s signed manifest and checks its signature against the key its `kid`
/// names (a did:key resolved here, a did:web's DID document fetched over HTTPS).
pub async fn discover(url: &str, pin: Option<&str>) -> Result<Discovered, ClientError> {
    let base = normalize_url(url)?;
    let (client, seen) = http_client(pin, Some(Duration::from_secs(20)), None)?;
    let manifest_url = format!("{base}/.well-known/agent-manifest.json");
    let resp = client.get(&manifest_url).send().await.map_err(|e| unreachable(&base, e, &seen, pin))?;
    if !resp.status().is_success() {
        return Err(ClientError::Manifest(format!("{manifest_url} answered HTTP {}", resp.status())));
    }
    let bytes = gatehouse_http::read_limited(&manifest_url, resp, MAX_MANIFEST_BYTES).await.map_err(|e| ClientError::Manifest(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| ClientError::Manifest("the signed manifest is not UTF-8".into()))?;
    let signed = SignedManifest::parse(&text).map_err(|e| ClientError::Manifest(e.message))?;
    let (peer_did, _) = did::split_kid(&signed.kid);
    let key = if peer_did.starts_with("did:key:") {
        did::resolve_did_key(&signed.kid).map_err(ClientError::Manifest)?
    } else if peer_did.starts_with("did:web:") {
        let keys = super::peer::keys_for(peer_did).await.map_err(ClientError::Manifest)?;
        let jwk = keys
            .iter()
            .find(|k| k.kid == signed.kid || k.kid.ends_with(signed.kid.trim_start_matches(peer_did)))
            .ok_or_else(|| ClientError::Manifest(format!("{}'s DID document has no key {}", peer_did, signed.kid)))?;
        did::PublicKey::from_jwk(&jwk.jwk).map_err(ClientError::Manifest)?
    } else {
        return Err(ClientError::Manifest(format!("the manifest is signed by {:?}, which is neither a did:key nor a did:web", signed.kid)));
    };
    if !signed.verify(&key) {
        return Err(ClientError::Manifest(format!("its signature does not verify with {}'s key", signed.kid)));
    }
    let cert_sha256 = seen.lock().unwrap_or_else(|p| p.into_inner()).clone().ok_or_else(|| ClientError::Protocol("no certificate was presented".into()))?;
    Ok(Discovered { did: peer_did.to_string(), url: base, cert_sha256, manifest: signed.manifest })
}

/// What a user asks a peer.
#[derive(Debug, Clone)]
pub struct Ask {
    pub body_type: String,
    pub content: String,
    /// Frames the peer may send before Gatehouse acknowledges.
    pub delta_window: u32,
}

/// Sends as this inbox's identity and keeps what was sent and received in its store.
pub struct Client {
    pub key: SigningKey,
    pub store: Arc<Store>,
    /// Where reassembled files are written.
    pub files_dir: PathBuf,
}

impl Client {
    pub fn did(&self) -> String {
        sign::did_of(&self.key)
    }

    /// Sends `ask` to `peer`, follows its stream to the end and returns the final state.
    /// `on_progress` sees every step (for a progress bar). A refusal or an unreachable
    /// peer is an error; a stream that ends in `error` or `cancel` is a final state.
    pub async fn ask(
        &self,
        peer: &PeerRow,
        token: Option<&str>,
        ask: &Ask,
        mut on_progress: impl FnMut(&AskProgress) + Send,
    ) -> Result<AskProgress, ClientError> {
        let (client, seen) = http_client(Some(&peer.cert_sha256), None, Some(&self.key))?;
        let stream_id = format!("str-{}", uuid::Uuid::now_v7());
        let window = ask.delta_window.max(1);
        let mut env = sign::draft(&self.did(), &[&peer.did], Intent::Ask, &ask.body_type, &ask.content);
        env["stream_id"] = stream_id.clone().into();
        env["delta_window"] = window.into();
        let env = sign::sign(env, &self.key);
        let message_id = env["id"].as_str().unwrap_or_default().to_string();
        let bytes = serde_json::to_vec(&env).expect("an envelope serialises");

        let resp = post(&client, peer, token, bytes.clone(), &seen).await?;
        let status = resp.status().as_u16();
        let location = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_string);
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if status != 202 {
            return Err(refused(status, &body));
        }
        // The peer may name the stream itself; its Location is authoritative. Its name is
        // only ever a protocol identifier: files are named after `file_stem`, made here.
        let file_stem = stream_id.clone();
        let stream_id = match body.get("stream_id").and_then(|s| s.as_str()) {
            Some(s) if gatehouse_uamp::envelope::is_stream_id(s) => s.to_string(),
            Some(s) => {
                return Err(ClientError::Protocol(format!("the peer named its stream {:?}, which is not a stream id", s.chars().take(80).collect::<String>())))
            }
            None => stream_id,
        };
        let location = location.unwrap_or_else(|| format!("/v1/stream/{stream_id}"));
        if !location.starts_with('/') || location.starts_with("//") {
            return Err(ClientError::Protocol(format!("Location {location:?} is not a path on the peer")));
        }
        let now = chrono::Utc::now();
        let msg = NewUampMessage {
            message_id: gatehouse_uamp::envelope::parse_uuid(&message_id).map(|u| u.to_string()).unwrap_or(message_id.clone()),
            direction: "out",
            sender: self.did(),
            recipients: vec![peer.did.clone()],
            intent: "ask".into(),
            stream_id: Some(stream_id.clone()),
            reply_to: None,
            scope: Some("ask".into()),
            body_type: ask.body_type.clone(),
            content: ask.content.clone(),
            ts: env["ts"].as_str().unwrap_or_default().to_string(),
            received_at: gatehouse_gate::clock::utc_string(now),
            received_ms: now.timestamp_millis(),
            raw: String::from_utf8_lossy(&bytes).into_owned(),
            receipt_id: body.get("receipt_id").and_then(|r| r.as_str()).unwrap_or_default().to_string(),
        };
        let store = self.store.clone();
        let new_stream = NewStream { stream_id: stream_id.clone(), direction: "out", peer: peer.did.clone(), delta_window: window, executor_spec: None };
        blocking(move || store.uamp_record_out(&msg, Some(&new_stream))).await?;

        let mut p = AskProgress {
            stream_id: stream_id.clone(),
            message_id: message_id.clone(),
            frames: 0,
            bytes: 0,
            pct: None,
            state: "NEW".into(),
            mime: None,
            file: None,
            detail: None,
        };
        on_progress(&p);
        let (part, file) = open_part(&self.files_dir, &file_stem).await?;
        let mut follow = Follow {
            key: &self.key,
            store: &self.store,
            files_dir: &self.files_dir,
            peer,
            token,
            http: &client,
            seen: &seen,
            ask_id: &message_id,
            window,
            stream_id: &stream_id,
            file_stem: &file_stem,
            part,
            file,
            next: 0,
            acked: -1,
        };
        let mut resumes = 0;
        loop {
            match follow.read(&location, &mut p, &mut on_progress).await {
                Ok(()) => return Ok(p),
                Err(
                    e @ (ClientError::Transport(HttpError::Unreachable { .. } | HttpError::Broke { .. } | HttpError::TimedOut { .. })
                    | ClientError::Interrupted(_)),
                ) if resumes < RESUMES => {
                    resumes += 1;
                    tracing::warn!(error = %e, stream = %stream_id, "stream dropped; resuming");
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(resumes))).await;
                }
                Err(e) => {
                    follow.abandon(&mut p, &e).await;
                    on_progress(&p);
                    return Err(e);
                }
            }
        }
    }

    /// Asks the peer to stop a stream this inbox opened there.
    pub async fn cancel(&self, peer: &PeerRow, token: Option<&str>, stream_id: &str) -> Result<(), ClientError> {
        let (client, seen) = http_client(Some(&peer.cert_sha256), Some(Duration::from_secs(20)), Some(&self.key))?;
        let mut env = sign::draft(&self.did(), &[&peer.did], Intent::Cancel, "text/plain", "cancelled by the user");
        env["stream_id"] = stream_id.into();
        let env = sign::sign(env, &self.key);
        let resp = post(&client, peer, token, serde_json::to_vec(&env).expect("serialises"), &seen).await?;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if status != 200 {
            return Err(refused(status, &body));
        }
        Ok(())
    }
}

use super::connect::{blocking, http_client, post, refused, unreachable};
pub use super::connect::{normalize_url, same_fingerprint, ClientError};
pub use super::follow::AskProgress;
use super::follow::{open_part, Follow};
