//! Gatehouse as a UAMP client (spec 7, 8): adding a peer by its URL — its signed manifest
//! fetched, verified and shown with the certificate fingerprint to pin — and sending it an
//! `ask` whose stream is followed, acknowledged within its window, and whose `chunk_b64`
//! frames are reassembled into a file.
//!
//! A peer's certificate is pinned (SHA-256 of its DER), not checked against public CAs:
//! Gatehouse inboxes use self-signed certificates on their identity key, and a pin is what
//! the user compared when they added the peer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::SigningKey;
use futures_util::StreamExt as _;
use gatehouse_store::{NewStream, NewUampMessage, PeerRow, Store, StoreError};
use gatehouse_uamp::manifest::SignedManifest;
use gatehouse_uamp::{did, sign, Delta, DeltaType, Intent, Manifest};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::DigitallySignedStruct;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;

/// One stream frame larger than this ends the stream (chunks carry 16 KiB).
const MAX_EVENT_BYTES: usize = 1024 * 1024;

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

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    BadUrl(String),
    #[error("could not reach {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the peer's certificate has fingerprint {got}, not the pinned {pinned}. It changed since the peer was added: add it again only if its owner confirms the new fingerprint")]
    PinMismatch { pinned: String, got: String },
    #[error("the peer's manifest cannot be trusted: {0}")]
    Manifest(String),
    #[error("the peer refused the message ({status} {code}, {reason}): {message}")]
    Refused { status: u16, code: String, reason: String, message: String, retry_after: Option<u64> },
    #[error("the peer broke the protocol: {0}")]
    Protocol(String),
    #[error("the stream ended without a final frame: {0}")]
    Interrupted(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ClientError {
    /// The stable code this error crosses a boundary with (the app's `{code, message}`).
    pub fn code(&self) -> &'static str {
        match self {
            ClientError::BadUrl(_) => "BAD_URL",
            ClientError::Unreachable { .. } => "UNREACHABLE",
            ClientError::PinMismatch { .. } => "PIN_MISMATCH",
            ClientError::Manifest(_) => "BAD_MANIFEST",
            ClientError::Refused { .. } => "REFUSED",
            ClientError::Protocol(_) | ClientError::Interrupted(_) => "PROTOCOL",
            ClientError::Io { .. } => "IO",
            ClientError::Store(_) => "STORE",
        }
    }
}

/// `https://host:port` from what the user typed: a bare `host:port`, an https URL, or the
/// manifest URL itself. Plain http is refused (UAMP 6.1).
pub fn normalize_url(input: &str) -> Result<String, ClientError> {
    let s = input.trim();
    let s = s.strip_suffix("/.well-known/agent-manifest.json").unwrap_or(s).trim_end_matches('/');
    if s.starts_with("http://") {
        return Err(ClientError::BadUrl(format!("{input}: UAMP peers are reached over TLS only (https://)")));
    }
    let url = if s.contains("://") { s.to_string() } else { format!("https://{s}") };
    let parsed = reqwest::Url::parse(&url).map_err(|e| ClientError::BadUrl(format!("{input}: {e}")))?;
    if parsed.scheme() != "https" || parsed.host_str().is_none() {
        return Err(ClientError::BadUrl(format!("{input}: a UAMP peer is an https:// address")));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() || parsed.path() != "/" {
        return Err(ClientError::BadUrl(format!("{input}: give the peer's address only (https://host:port)")));
    }
    Ok(url)
}

/// Accepts the server's certificate when its SHA-256 matches the pin (or, with no pin yet,
/// records it for the user to confirm); the TLS 1.3 handshake signature is still checked
/// against that certificate's key.
#[derive(Debug)]
struct Pinned {
    pin: Option<String>,
    seen: Arc<Mutex<Option<String>>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = super::tls::fingerprint(end_entity);
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(got.clone());
        match &self.pin {
            Some(pin) if !same_fingerprint(pin, &got) => Err(rustls::Error::General(format!("certificate fingerprint {got} is not the pinned {pin}"))),
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("UAMP peers speak TLS 1.3 only".into()))
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Fingerprints compare without regard to case or colons (users paste them either way).
pub fn same_fingerprint(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.chars().filter(|c| c.is_ascii_hexdigit()).map(|c| c.to_ascii_uppercase()).collect::<String>();
    let (a, b) = (norm(a), norm(b));
    a.len() == 64 && a == b
}

/// The fingerprint of the certificate the peer presented, filled in during the handshake.
type SeenCertificate = Arc<Mutex<Option<String>>>;

/// A TLS 1.3 client that pins `pin` and, with `identity`, presents this inbox's certificate
/// (mTLS) so a peer that trusts this inbox's DID needs no bearer token. Discovery goes
/// without: a peer not yet added learns nothing about who is looking.
fn http_client(pin: Option<&str>, timeout: Option<Duration>, identity: Option<&SigningKey>) -> Result<(reqwest::Client, SeenCertificate), ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let seen = Arc::new(Mutex::new(None));
    let verifier = Pinned { pin: pin.map(str::to_string), seen: seen.clone(), provider: provider.clone() };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| ClientError::Protocol(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut config = match identity {
        Some(key) => {
            let (chain, private) = super::tls::client_identity(key).map_err(|e| ClientError::Protocol(e.to_string()))?;
            builder.with_client_auth_cert(chain, private).map_err(|e| ClientError::Protocol(e.to_string()))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let mut b = reqwest::Client::builder().use_preconfigured_tls(config).connect_timeout(Duration::from_secs(10)).redirect(reqwest::redirect::Policy::none());
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    let client = b.build().map_err(|e| ClientError::Protocol(e.to_string()))?;
    Ok((client, seen))
}

fn unreachable(url: &str, e: reqwest::Error, seen: &Mutex<Option<String>>, pin: Option<&str>) -> ClientError {
    if let (Some(pin), Some(got)) = (pin, seen.lock().unwrap_or_else(|p| p.into_inner()).clone()) {
        if !same_fingerprint(pin, &got) {
            return ClientError::PinMismatch { pinned: pin.to_string(), got };
        }
    }
    // The innermost cause says what went wrong (refused, timed out, TLS alert).
    let mut message = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        message = s.to_string();
        src = s.source();
    }
    ClientError::Unreachable { url: url.to_string(), message }
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
    let bytes = crate::body::read_response(resp, MAX_MANIFEST_BYTES).await.map_err(ClientError::Manifest)?;
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

/// Where an ask's stream stands, reported after every frame.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AskProgress {
    pub stream_id: String,
    pub message_id: String,
    pub frames: u64,
    /// Bytes reassembled so far.
    pub bytes: u64,
    /// The peer's own estimate (`progress` frames' `pct`), when it sends one.
    pub pct: Option<f64>,
    /// NEW, IN_PROGRESS, COMPLETED, CANCELLED or ERROR.
    pub state: String,
    pub mime: Option<String>,
    pub file: Option<PathBuf>,
    /// The peer's final payload (`done`) or its error message.
    pub detail: Option<Value>,
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
            received_at: gatehouse_epp::utc_string(now),
            received_ms: now.timestamp_millis(),
            raw: String::from_utf8_lossy(&bytes).into_owned(),
            receipt_id: body.get("receipt_id").and_then(|r| r.as_str()).unwrap_or_default().to_string(),
        };
        let store = self.store.clone();
        let new_stream = NewStream { stream_id: stream_id.clone(), direction: "out", peer: peer.did.clone(), delta_window: window };
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
            c: self,
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
                Err(e @ (ClientError::Unreachable { .. } | ClientError::Interrupted(_))) if resumes < RESUMES => {
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

async fn post(
    client: &reqwest::Client,
    peer: &PeerRow,
    token: Option<&str>,
    body: Vec<u8>,
    seen: &Mutex<Option<String>>,
) -> Result<reqwest::Response, ClientError> {
    let mut req = client
        .post(format!("{}/v1/messages", peer.url))
        .header(reqwest::header::CONTENT_TYPE, format!("{};v=1", gatehouse_uamp::MEDIA_TYPE))
        .timeout(Duration::from_secs(30))
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.map_err(|e| unreachable(&peer.url, e, seen, Some(&peer.cert_sha256)))
}

fn refused(status: u16, body: &Value) -> ClientError {
    let s = |k: &str| body.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let message = match s("message") {
        m if m.is_empty() => format!("HTTP {status}"),
        m => m,
    };
    ClientError::Refused { status, code: s("code"), reason: s("reason"), message, retry_after: body.get("retry_after").and_then(|v| v.as_u64()) }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, StoreError> + Send + 'static) -> Result<T, ClientError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ClientError::Protocol(e.to_string()))?.map_err(ClientError::Store)
}

/// The file an outgoing stream's chunks are written to until it ends.
async fn open_part(files_dir: &Path, stream_id: &str) -> Result<(PathBuf, tokio::fs::File), ClientError> {
    tokio::fs::create_dir_all(files_dir).await.map_err(|source| ClientError::Io { path: files_dir.to_path_buf(), source })?;
    let part = files_dir.join(format!("{stream_id}.part"));
    let file = tokio::fs::File::create(&part).await.map_err(|source| ClientError::Io { path: part.clone(), source })?;
    Ok((part, file))
}

/// Reading one outgoing stream, across resumptions.
struct Follow<'a> {
    c: &'a Client,
    peer: &'a PeerRow,
    token: Option<&'a str>,
    http: &'a reqwest::Client,
    seen: &'a Mutex<Option<String>>,
    ask_id: &'a str,
    window: u32,
    stream_id: &'a str,
    /// Names the files of this stream: made locally, never the peer's stream id.
    file_stem: &'a str,
    part: PathBuf,
    file: tokio::fs::File,
    next: u64,
    acked: i64,
}

impl Follow<'_> {
    /// Reads frames until the terminal one (Ok) or until the connection drops (Err).
    async fn read(&mut self, location: &str, p: &mut AskProgress, on: &mut (impl FnMut(&AskProgress) + Send)) -> Result<(), ClientError> {
        let mut req = self.http.get(format!("{}{location}", self.peer.url)).header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(t) = self.token {
            req = req.bearer_auth(t);
        }
        if self.next > 0 {
            req = req.header("Last-Event-ID", (self.next - 1).to_string());
        }
        let resp = req.send().await.map_err(|e| unreachable(&self.peer.url, e, self.seen, Some(&self.peer.cert_sha256)))?;
        let status = resp.status().as_u16();
        if status != 200 {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            return Err(refused(status, &body));
        }
        let mut events = std::pin::pin!(gatehouse_sse::events(resp.bytes_stream(), MAX_EVENT_BYTES));
        while let Some(ev) = events.next().await {
            let ev = ev.map_err(|e| ClientError::Interrupted(e.to_string()))?;
            if ev.data.is_empty() {
                continue;
            }
            let delta = Delta::parse_from_peer(ev.data.as_bytes(), self.stream_id)
                .map_err(|e| ClientError::Protocol(format!("frame after {}: {}", self.next, e.message)))?;
            if delta.delta_seq < self.next {
                continue; // already have it (a resumed stream may repeat)
            }
            if delta.delta_seq > self.next {
                return Err(ClientError::Protocol(format!("frame {} arrived where {} was due", delta.delta_seq, self.next)));
            }
            let done = self.take(&delta, &ev.data, p).await?;
            on(p);
            if done {
                return Ok(());
            }
            self.maybe_ack(delta.delta_seq as i64).await?;
        }
        Err(ClientError::Interrupted(format!("the connection closed after frame {}", self.next as i64 - 1)))
    }

    /// Applies one frame: chunk bytes to the file, the state to the store. True at the end.
    async fn take(&mut self, d: &Delta, raw: &str, p: &mut AskProgress) -> Result<bool, ClientError> {
        let mut added = 0usize;
        match d.kind {
            DeltaType::Chunk => {
                let b64 = d.payload.as_ref().and_then(|x| x.get("chunk_b64")).and_then(|x| x.as_str());
                if let Some(b64) = b64 {
                    let bytes = STANDARD.decode(b64).map_err(|e| ClientError::Protocol(format!("frame {}: chunk_b64 is not base64: {e}", d.delta_seq)))?;
                    self.file.write_all(&bytes).await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
                    added = bytes.len();
                } else if let Some(text) = d.payload.as_ref().and_then(|x| x.get("text")).and_then(|x| x.as_str()) {
                    // Text deltas (a peer streaming tokens) land in the same file.
                    self.file.write_all(text.as_bytes()).await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
                    added = text.len();
                }
            }
            DeltaType::Progress => {
                if let Some(pct) = d.payload.as_ref().and_then(|x| x.get("pct")).and_then(|x| x.as_f64()) {
                    p.pct = Some(pct.clamp(0.0, 100.0));
                }
            }
            _ => {}
        }
        p.frames += 1;
        p.bytes += added as u64;
        self.next = d.delta_seq + 1;
        let terminal = d.kind.is_terminal();
        let state = match d.kind {
            DeltaType::Done => "COMPLETED",
            DeltaType::Cancel => "CANCELLED",
            DeltaType::Error => "ERROR",
            _ => "IN_PROGRESS",
        };
        p.state = state.into();
        if terminal {
            p.detail = d.payload.clone();
            if d.kind == DeltaType::Done {
                p.pct = Some(100.0);
            }
        }
        let store = self.c.store.clone();
        let (sid, seq, raw) = (self.stream_id.to_string(), d.delta_seq, raw.to_string());
        let st = state.to_string();
        blocking(move || store.uamp_out_frame(&sid, seq, &raw, added, Some(&st), &gatehouse_epp::utc_string(chrono::Utc::now()))).await?;
        if terminal {
            self.finish(d, p).await?;
        }
        Ok(terminal)
    }

    /// The terminal frame: the `.part` file becomes the result (named for its type), or,
    /// when the stream failed, stays beside it as `.partial` with the reason.
    async fn finish(&mut self, d: &Delta, p: &mut AskProgress) -> Result<(), ClientError> {
        self.file.flush().await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
        self.file.sync_all().await.map_err(|source| ClientError::Io { path: self.part.clone(), source })?;
        let declared = d.payload.as_ref().and_then(|x| x.get("mime")).and_then(|x| x.as_str()).map(str::to_string);
        let head = read_head(&self.part).await;
        let mime = match declared {
            Some(m) if m != "application/octet-stream" => Some(m),
            other => infer::get(&head).map(|t| t.mime_type().to_string()).or(other),
        };
        let (path, detail) = if d.kind == DeltaType::Done {
            (self.c.files_dir.join(format!("{}.{}", self.file_stem, extension(mime.as_deref(), &head))), None)
        } else {
            let why = d
                .payload
                .as_ref()
                .and_then(|x| x.get("message").or_else(|| x.get("reason")))
                .and_then(|x| x.as_str())
                .unwrap_or("the stream ended early")
                .to_string();
            (self.c.files_dir.join(format!("{}.partial", self.file_stem)), Some(why))
        };
        tokio::fs::rename(&self.part, &path).await.map_err(|source| ClientError::Io { path: path.clone(), source })?;
        if let Some(why) = &detail {
            let reason = path.with_extension("partial.reason.txt");
            let _ = tokio::fs::write(&reason, format!("{}: {why}\n", p.state)).await;
        }
        let store = self.c.store.clone();
        let (sid, file, m) = (self.stream_id.to_string(), path.to_string_lossy().into_owned(), mime.clone());
        let st = p.state.clone();
        blocking(move || {
            store.uamp_set_file(&sid, &file, m.as_deref())?;
            if let Some(why) = detail {
                store.uamp_set_state(&sid, &st, Some(&why), &gatehouse_epp::utc_string(chrono::Utc::now()))?;
            }
            Ok(())
        })
        .await?;
        p.mime = mime;
        p.file = Some(path);
        Ok(())
    }

    /// Acknowledges (a signed `progress` envelope) once half the window is used, so the
    /// peer never stalls on a full window while the acknowledgement travels.
    async fn maybe_ack(&mut self, seq: i64) -> Result<(), ClientError> {
        let half = i64::from(self.window.div_ceil(2));
        if seq - self.acked < half {
            return Ok(());
        }
        let c = self.c;
        let mut env = sign::draft(&c.did(), &[&self.peer.did], Intent::Progress, "application/json", &json!({"delta_seq": seq}).to_string());
        env["stream_id"] = self.stream_id.into();
        env["reply_to"] = self.ask_id.into();
        env["ext"] = json!({"delta_seq": seq});
        let env = sign::sign(env, &c.key);
        let resp = post(self.http, self.peer, self.token, serde_json::to_vec(&env).expect("serialises"), self.seen).await?;
        let status = resp.status().as_u16();
        if status != 200 {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            return Err(refused(status, &body));
        }
        self.acked = seq;
        Ok(())
    }

    /// The stream cannot be followed further: keep what arrived, aside, with the reason.
    async fn abandon(&mut self, p: &mut AskProgress, e: &ClientError) {
        let _ = self.file.flush().await;
        let path = self.c.files_dir.join(format!("{}.partial", self.file_stem));
        if tokio::fs::rename(&self.part, &path).await.is_ok() {
            let _ = tokio::fs::write(path.with_extension("partial.reason.txt"), format!("ERROR: {e}\n")).await;
            p.file = Some(path.clone());
            let (store, sid, file) = (self.c.store.clone(), self.stream_id.to_string(), path.to_string_lossy().into_owned());
            let _ = blocking(move || store.uamp_set_file(&sid, &file, None)).await;
        }
        p.state = "ERROR".into();
        p.detail = Some(json!({"message": e.to_string()}));
        let (store, sid, why) = (self.c.store.clone(), self.stream_id.to_string(), e.to_string());
        let _ = blocking(move || store.uamp_set_state(&sid, "ERROR", Some(&why), &gatehouse_epp::utc_string(chrono::Utc::now()))).await;
    }
}

async fn read_head(path: &Path) -> Vec<u8> {
    use tokio::io::AsyncReadExt as _;
    let mut head = vec![0u8; 8192];
    let n = match tokio::fs::File::open(path).await {
        Ok(mut f) => f.read(&mut head).await.unwrap_or(0),
        Err(_) => 0,
    };
    head.truncate(n);
    head
}

/// Extensions a received file may get: documents, images, audio, video and archives the
/// user's tools open as data. Anything else (a program, a script, a shortcut, a type
/// only a peer's claim names) is saved as `.bin`, so opening it never runs it.
const DATA_EXTENSIONS: &[&str] = &[
    "txt", "md", "json", "csv", "pdf", "png", "jpg", "gif", "webp", "bmp", "tif", "ico", "avif", "heif", "mp3", "wav", "ogg", "flac", "m4a", "mp4", "webm",
    "mkv", "mov", "avi", "zip", "gz", "tar", "xz", "bz2", "zst", "7z",
];

/// A file extension for what arrived, so the user's tools open it.
fn extension(mime: Option<&str>, head: &[u8]) -> String {
    let essence = mime.map(|m| m.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
    let ext = match essence.as_deref() {
        Some("text/plain") => "txt",
        Some("text/markdown") => "md",
        Some("application/json") => "json",
        _ => infer::get(head).map(|t| t.extension()).unwrap_or("bin"),
    };
    if DATA_EXTENSIONS.contains(&ext) { ext } else { "bin" }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_address_is_https_host_and_port_only() {
        assert_eq!(normalize_url("127.0.0.1:8766").unwrap(), "https://127.0.0.1:8766");
        assert_eq!(normalize_url("https://peer.example/.well-known/agent-manifest.json").unwrap(), "https://peer.example");
        assert!(matches!(normalize_url("http://127.0.0.1:8766"), Err(ClientError::BadUrl(m)) if m.contains("TLS")));
        assert!(normalize_url("https://peer.example/v1/messages").is_err());
        assert!(normalize_url("").is_err());
    }

    #[test]
    fn fingerprints_compare_as_users_paste_them() {
        let a = "AB:".repeat(31) + "AB";
        assert!(same_fingerprint(&a, &"ab".repeat(32)));
        assert!(!same_fingerprint(&a, &"ac".repeat(32)));
        assert!(!same_fingerprint("", ""));
    }

    #[test]
    fn a_reassembled_file_is_named_for_what_it_is() {
        let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D', b'R'];
        assert_eq!(extension(Some("image/png"), &png), "png");
        assert_eq!(extension(None, &png), "png");
        assert_eq!(extension(Some("text/plain; charset=utf-8"), b"hi"), "txt");
        assert_eq!(extension(None, b"\x00\x01"), "bin");
        // A program is data to keep, never something a double-click runs.
        assert_eq!(extension(Some("application/x-msdownload"), b"MZ\x90\x00\x03\x00\x00\x00\x04\x00"), "bin");
        assert_eq!(extension(None, b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "bin");
    }
}
