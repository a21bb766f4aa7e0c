//! UAMP's transport security (spec 6.1) on the shared TLS listener
//! ([`gatehouse_net::tls`]: TLS 1.3 only, ALPN `h2` and `http/1.1`).
//!
//! The certificate is self-signed, made on first run (rcgen) for the inbox's own Ed25519
//! identity key, so no second secret exists outside the keychain: the certificate file
//! in the data dir is public, and peers pin its SHA-256 fingerprint, which the app shows.
//!
//! Clients may present a certificate (spec 6.2, mTLS): the listener takes one whose key a
//! did:key can name ([`client_key_taken`]), and UAMP reads that key's did:key from it
//! ([`ClientKey::of`]). Whether that key may speak for an envelope's sender is decided
//! with the trust registry, like a bearer token.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::http::{header, HeaderMap};
use ed25519_dalek::SigningKey;
use gatehouse_net::tls::PeerCertificate;
use gatehouse_uamp::did::PublicKey;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

use super::TransportAuth;

pub const CERT_FILE: &str = "uamp-cert.pem";

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

/// The key a client proved it holds during the TLS handshake, if it presented a
/// certificate, as UAMP names keys.
#[derive(Debug, Clone, Default)]
pub struct ClientKey(pub Option<PublicKey>);

impl ClientKey {
    /// The key of the connection's certificate (the listener's request extension), read
    /// once per connection.
    pub fn of(cert: Option<&PeerCertificate>) -> ClientKey {
        let read = |der: Option<&[u8]>| der.and_then(|d| PublicKey::from_certificate(&CertificateDer::from(d)).ok());
        ClientKey(cert.and_then(|c| (*c.read(read)).clone()))
    }
}

/// Whether the listener takes a client certificate: its key is one a did:key can name
/// (Ed25519 or P-256).
pub fn client_key_taken(der: &[u8]) -> Result<(), String> {
    PublicKey::from_certificate(&CertificateDer::from(der)).map(|_| ()).map_err(|e| e.to_string())
}

/// The inbox's TLS configuration on the shared listener: its certificate on its identity
/// key, client certificates optional ([`client_key_taken`]).
pub fn config(cert_der: &[u8], key: &SigningKey) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    gatehouse_net::tls::config(cert_der, pkcs8(key), client_key_taken).map_err(TlsError::Config)
}

pub use gatehouse_net::tls::{serve, HANDSHAKE_TIMEOUT, MAX_STREAMS_PER_CONNECTION};

/// The credentials a request carries: its bearer token and the client certificate's key of
/// its connection.
pub(crate) fn transport_auth(headers: &HeaderMap, cert: Option<&PeerCertificate>) -> TransportAuth {
    TransportAuth { bearer: bearer(headers), client_key: ClientKey::of(cert).0 }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string())
}
