//! UAMP's transport security (spec 6.1): TLS 1.3 only, ALPN `h2` and `http/1.1`.
//!
//! The certificate is self-signed, made on first run (rcgen) for the inbox's own Ed25519
//! identity key, so no second secret exists outside the keychain: the certificate file
//! in the data dir is public, and peers pin its SHA-256 fingerprint, which the app shows.
//!
//! Clients may present a certificate (spec 6.2, mTLS). It is not checked against any CA:
//! the handshake proves the client holds the certificate's key, and that key's did:key is
//! what the inbox learns ([`ClientKey`]). Whether that key may speak for an envelope's
//! sender is decided with the trust registry, like a bearer token.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap};
use axum::Router;
use ed25519_dalek::SigningKey;
use gatehouse_uamp::did::PublicKey;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use sha2::{Digest, Sha256};

use super::TransportAuth;

pub const CERT_FILE: &str = "uamp-cert.pem";
/// A TLS handshake must finish within this time.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("could not make the UAMP certificate: {0}")]
    Generate(String),
    #[error("the UAMP certificate {0} is unreadable: {1}")]
    Corrupt(PathBuf, String),
    #[error("TLS setup failed: {0}")]
    Config(String),
}

/// The certificate in use and its fingerprint for pinning.
#[derive(Debug, Clone)]
pub struct Certificate {
    pub der: Vec<u8>,
    pub pem: String,
    /// SHA-256 of the DER certificate, upper-case hex pairs joined by colons.
    pub fingerprint: String,
}

fn pkcs8(key: &SigningKey) -> Vec<u8> {
    // RFC 8410 PKCS#8 v1 for an Ed25519 private key: a fixed header and the 32-byte seed.
    let mut der = vec![0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
    der.extend_from_slice(&key.to_bytes());
    der
}

pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

fn generate(key: &SigningKey) -> Result<String, TlsError> {
    let der = PrivatePkcs8KeyDer::from(pkcs8(key));
    let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_ED25519).map_err(|e| TlsError::Generate(e.to_string()))?;
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])
        .map_err(|e| TlsError::Generate(e.to_string()))?;
    params.distinguished_name.push(rcgen::DnType::CommonName, "Gatehouse UAMP inbox");
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(2045, 1, 1);
    let cert = params.self_signed(&pair).map_err(|e| TlsError::Generate(e.to_string()))?;
    Ok(cert.pem())
}

fn parse_pem(path: &Path, pem: &str) -> Result<Vec<u8>, TlsError> {
    use rustls::pki_types::pem::PemObject as _;
    CertificateDer::from_pem_slice(pem.as_bytes()).map(|c| c.to_vec()).map_err(|e| TlsError::Corrupt(path.to_path_buf(), e.to_string()))
}

/// The data dir's certificate, made now if there is none or if it belongs to another key
/// (the identity was replaced).
pub fn load_or_create(data_dir: &Path, key: &SigningKey) -> Result<Certificate, TlsError> {
    let path = data_dir.join(CERT_FILE);
    let io = |source| TlsError::Io { path: path.clone(), source };
    let existing = match std::fs::read_to_string(&path) {
        Ok(pem) => Some(pem),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    if let Some(pem) = existing {
        let der = parse_pem(&path, &pem)?;
        if config(&der, key).is_ok() {
            return Ok(Certificate { fingerprint: fingerprint(&der), der, pem });
        }
        tracing::warn!(path = %path.display(), "the UAMP certificate is for another key; making a new one");
    }
    let pem = generate(key)?;
    let tmp = data_dir.join(format!(".{CERT_FILE}.tmp"));
    std::fs::write(&tmp, &pem).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    let der = parse_pem(&path, &pem)?;
    Ok(Certificate { fingerprint: fingerprint(&der), der, pem })
}

/// The certificate and key this inbox presents as a client (mTLS): the same self-signed
/// certificate on its identity key, made in memory.
pub fn client_identity(key: &SigningKey) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    use rustls::pki_types::pem::PemObject as _;
    let pem = generate(key)?;
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::Generate(e.to_string()))?;
    Ok((vec![der], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8(key)))))
}

/// The key a client proved it holds during the TLS handshake, if it presented a certificate.
/// Handlers read it as a request extension.
#[derive(Debug, Clone, Default)]
pub struct ClientKey(pub Option<PublicKey>);

/// Asks every client for a certificate without requiring one (a bearer token does as
/// well), accepts any Ed25519 or P-256 certificate and checks the handshake signature
/// against its key.
#[derive(Debug)]
struct AnyAgentKey {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ClientCertVerifier for AnyAgentKey {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        PublicKey::from_certificate(end_entity).map_err(|e| rustls::Error::General(format!("client certificate: {e}")))?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("UAMP is TLS 1.3 only".into()))
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        // Only the key types a did:key can name.
        vec![SignatureScheme::ED25519, SignatureScheme::ECDSA_NISTP256_SHA256]
    }
}

/// TLS 1.3 only; ALPN h2 then http/1.1; client certificates optional.
pub fn config(cert_der: &[u8], key: &SigningKey) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyAgentKey { provider: provider.clone() });
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![CertificateDer::from(cert_der.to_vec())], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8(key))))
        .map_err(|e| TlsError::Config(e.to_string()))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// HTTP/2 streams one connection may have open at once.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 32;

/// Serves `app` over TLS on `listener` until `shutdown` resolves, admitting connections
/// within `limits` ([`gatehouse_net::conn`]). A client that does not complete a TLS 1.3
/// handshake (plain HTTP, TLS 1.2) is disconnected without a response.
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    public_names: &[String],
    limits: gatehouse_net::conn::Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let app = gatehouse_net::host_check::layer(app, gatehouse_net::host_check::Allowed::new(listener.local_addr()?, true, public_names));
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(gatehouse_net::plain::HEADER_TIMEOUT);
    // Streams per connection are bounded, so connections × streams × body budget is too.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .enable_connect_protocol();
    let builder = Arc::new(builder);
    gatehouse_net::conn::serve(listener, limits, shutdown, move |tcp, stopped| {
        let (acceptor, app, builder) = (acceptor.clone(), app.clone(), builder.clone());
        async move {
            let remote = tcp.peer_addr().ok();
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "TLS handshake refused");
                    return;
                }
                Err(_) => return,
            };
            // Verified above; what the handlers need is the key.
            let cert = tls.get_ref().1.peer_certificates().and_then(|c| c.first());
            let client = ClientKey(cert.and_then(|c| PublicKey::from_certificate(c).ok()));
            // Other doors on this listener read who the client is in no protocol's terms.
            let peer = cert.map(|c| gatehouse_net::peer::PeerKey::from_certificate(c)).unwrap_or_default();
            let app = app.layer(axum::Extension(client)).layer(axum::Extension(peer));
            let activity = gatehouse_net::conn::Activity::default();
            let service = hyper_util::service::TowerToHyperService::new(gatehouse_net::conn::tracked(app, activity.clone(), remote));
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            gatehouse_net::conn::drive(conn, activity, limits.idle, stopped).await;
        }
    })
    .await;
    Ok(())
}

/// The credentials a request carries: its bearer token and the client certificate's key of
/// its connection.
pub(crate) fn transport_auth(headers: &HeaderMap, client: Option<&ClientKey>) -> TransportAuth {
    TransportAuth { bearer: bearer(headers), client_key: client.and_then(|c| c.0.clone()) }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
}
