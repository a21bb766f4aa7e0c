//! How the UAMP client reaches a peer: its address normalised to `https://host:port`, a
//! TLS 1.3 connection that pins the certificate the user compared (SHA-256 of its DER, not
//! public CAs: Gatehouse inboxes use self-signed certificates on their identity key), and
//! this inbox's own certificate presented for mTLS.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ed25519_dalek::SigningKey;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::DigitallySignedStruct;

use gatehouse_http::{HttpError, Plain, Rules};

use gatehouse_store::uamp::PeerRow;
use gatehouse_store::StoreError;
use serde_json::Value;

/// `https://host:port` from what the user typed: a bare `host:port`, an https URL, or the
/// manifest URL itself. Plain http is refused (UAMP 6.1).
pub fn normalize_url(input: &str) -> Result<String, ClientError> {
    Ok(gatehouse_http::base_url(input, &Rules { what: "a UAMP peer", plain: Plain::Never, document: Some("/.well-known/agent-manifest.json"), path: false })?)
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
pub(super) type SeenCertificate = Arc<Mutex<Option<String>>>;

/// A TLS 1.3 client that pins `pin` and, with `identity`, presents this inbox's certificate
/// (mTLS) so a peer that trusts this inbox's DID needs no bearer token. Discovery goes
/// without: a peer not yet added learns nothing about who is looking.
pub(super) fn http_client(
    pin: Option<&str>,
    timeout: Option<Duration>,
    identity: Option<&SigningKey>,
) -> Result<(reqwest::Client, SeenCertificate), ClientError> {
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

pub(super) fn unreachable(url: &str, e: reqwest::Error, seen: &Mutex<Option<String>>, pin: Option<&str>) -> ClientError {
    if let (Some(pin), Some(got)) = (pin, seen.lock().unwrap_or_else(|p| p.into_inner()).clone()) {
        if !same_fingerprint(pin, &got) {
            return ClientError::PinMismatch { pinned: pin.to_string(), got };
        }
    }
    HttpError::failed(url, &e).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_address_is_https_host_and_port_only() {
        assert_eq!(normalize_url("127.0.0.1:8766").unwrap(), "https://127.0.0.1:8766");
        assert_eq!(normalize_url("https://peer.example/.well-known/agent-manifest.json").unwrap(), "https://peer.example");
        assert!(matches!(normalize_url("http://127.0.0.1:8766"), Err(ClientError::Transport(HttpError::BadUrl(m))) if m.contains("TLS")));
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
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Transport(#[from] HttpError),
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
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ClientError::Transport(e) => e.code(),
            ClientError::PinMismatch { .. } => gatehouse_code::Code::PinMismatch,
            ClientError::Manifest(_) => gatehouse_code::Code::BadManifest,
            ClientError::Refused { .. } => gatehouse_code::Code::Refused,
            ClientError::Protocol(_) | ClientError::Interrupted(_) => gatehouse_code::Code::Protocol,
            ClientError::Io { .. } => gatehouse_code::Code::Io,
            ClientError::Store(_) => gatehouse_code::Code::Store,
        }
    }
}

pub(super) async fn post(
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

pub(super) fn refused(status: u16, body: &Value) -> ClientError {
    let s = |k: &str| body.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let message = match s("message") {
        m if m.is_empty() => format!("HTTP {status}"),
        m => m,
    };
    ClientError::Refused { status, code: s("code"), reason: s("reason"), message, retry_after: body.get("retry_after").and_then(|v| v.as_u64()) }
}

pub(super) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, StoreError> + Send + 'static) -> Result<T, ClientError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ClientError::Protocol(e.to_string()))?.map_err(ClientError::Store)
}
