//! How the UAMP client reaches a peer: its address normalised to `https://host:port`, a
//! TLS 1.3 connection that pins the certificate the user compared (SHA-256 of its DER, not
//! public CAs: Gatehouse inboxes use self-signed certificates on their identity key), and
//! this inbox's own certificate presented for mTLS.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ed25519_dalek::SigningKey;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::DigitallySignedStruct;

use gatehouse_http::{HttpError, Plain, Rules};

use super::client::ClientError;

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
