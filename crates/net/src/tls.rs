//! The TLS listener every door on it shares: TLS 1.3 only, ALPN `h2` and `http/1.1`, the
//! same connection admission, Host checks and bounds as the plain listener.
//!
//! Clients may present a certificate (mTLS). It is not checked against any CA: the
//! handshake proves the client holds the certificate's key, and that key is what a door
//! learns ([`PeerKey`], and the certificate itself as [`PeerCertificate`] for a door that
//! names keys its own way). Whether that key may speak for a sender is decided with the
//! trust registry, like a bearer token.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::peer::PeerKey;

/// A TLS handshake must finish within this time.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP/2 streams one connection may have open at once.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 32;

/// The client certificate of a TLS connection (DER), as the handshake proved its key: a
/// request extension beside [`PeerKey`], for a door that reads the key its own way. One
/// per connection, shared by its requests: what a door reads of it is read once
/// ([`PeerCertificate::read`]), not again for every request the connection carries.
#[derive(Debug, Clone, Default)]
pub struct PeerCertificate {
    der: Option<Arc<[u8]>>,
    read: Arc<std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>>,
}

impl PeerCertificate {
    pub fn new(der: Option<&[u8]>) -> PeerCertificate {
        PeerCertificate { der: der.map(Arc::from), read: Arc::default() }
    }

    /// The certificate (DER), if the client presented one.
    pub fn der(&self) -> Option<&[u8]> {
        self.der.as_deref()
    }

    /// What `read` makes of the certificate, made once per connection and kept with it.
    /// (Were two doors to read one connection's certificate as different things, the
    /// second would read it at each request: only the first reading is kept.)
    pub fn read<T: Send + Sync + 'static>(&self, read: impl FnOnce(Option<&[u8]>) -> T) -> Arc<T> {
        if let Some(t) = self.read.get().and_then(|k| k.clone().downcast::<T>().ok()) {
            return t;
        }
        let t = Arc::new(read(self.der()));
        // The first reading is kept (two first requests racing both read; one is kept).
        let _ = self.read.set(t.clone());
        t
    }
}

/// Serves `app` over TLS on `listener` until `shutdown` resolves, admitting connections
/// within `limits` ([`crate::conn`]). A client that does not complete a TLS 1.3
/// handshake (plain HTTP, TLS 1.2) is disconnected without a response.
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    public_names: &[String],
    limits: crate::conn::Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let app = crate::host_check::layer(app, crate::host_check::Allowed::new(listener.local_addr()?, true, public_names));
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(crate::plain::HEADER_TIMEOUT);
    // Streams per connection are bounded, so connections × streams × body budget is too.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .enable_connect_protocol();
    let builder = Arc::new(builder);
    crate::conn::serve(listener, limits, shutdown, move |tcp, stopped| {
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
            let peer = cert.map(|c| PeerKey::from_certificate(c)).unwrap_or_default();
            let certificate = PeerCertificate::new(cert.map(|c| c.as_ref()));
            let app = app.layer(axum::Extension(certificate)).layer(axum::Extension(peer));
            let activity = crate::conn::Activity::default();
            let service = hyper_util::service::TowerToHyperService::new(crate::conn::tracked(app, activity.clone(), remote));
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            crate::conn::drive(crate::conn::Graceful(Box::pin(conn)), activity, limits.idle, stopped).await;
        }
    })
    .await;
    Ok(())
}

/// TLS 1.3 only; ALPN h2 then http/1.1; client certificates optional, taken when
/// `client_key_taken` takes the certificate (DER): the key types a door can name.
/// `key_pkcs8`: the server's private key (PKCS#8 DER) for `cert_der`.
pub fn config(cert_der: &[u8], key_pkcs8: Vec<u8>, client_key_taken: fn(&[u8]) -> Result<(), String>) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyClientKey { provider: provider.clone(), taken: client_key_taken });
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![CertificateDer::from(cert_der.to_vec())], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_pkcs8)))
        .map_err(|e| e.to_string())?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Asks every client for a certificate without requiring one (a bearer token does as
/// well), takes any certificate whose key the door can name and checks the handshake
/// signature against its key.
#[derive(Debug)]
struct AnyClientKey {
    provider: Arc<rustls::crypto::CryptoProvider>,
    taken: fn(&[u8]) -> Result<(), String>,
}

impl ClientCertVerifier for AnyClientKey {
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
        (self.taken)(end_entity).map_err(|e| rustls::Error::General(format!("client certificate: {e}")))?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General("this listener is TLS 1.3 only".into()))
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        // Only the key types a door names (a did:key's).
        vec![SignatureScheme::ED25519, SignatureScheme::ECDSA_NISTP256_SHA256]
    }
}

#[cfg(test)]
mod tests {
    use super::PeerCertificate;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_connections_certificate_is_read_once_for_all_its_requests() {
        let conn = PeerCertificate::new(Some(b"certificate bytes"));
        let reads = AtomicUsize::new(0);
        let read = |der: Option<&[u8]>| {
            reads.fetch_add(1, Ordering::SeqCst);
            der.map(<[u8]>::len)
        };
        // Each request gets a clone of the connection's extension.
        for request in [conn.clone(), conn.clone(), conn] {
            assert_eq!(*request.read(read), Some(17));
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_second_doors_reading_of_another_kind_is_made_again_not_refused() {
        let conn = PeerCertificate::new(None);
        assert!(!*conn.read(|d| d.is_some()));
        assert_eq!(*conn.read(|d| d.map_or(0u8, |_| 1)), 0);
        assert_eq!(*conn.read(|d| d.map_or(7u8, |_| 1)), 7, "not kept: read each time");
    }
}
