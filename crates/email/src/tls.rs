//! TLS for both directions (IMAP in, SMTP out): the public roots, plus a self-hosted
//! server's own certificate when the account is given it.

use std::sync::Arc;

use crate::EmailError;

/// The certificates in a PEM text (at least one).
pub fn certificates(pem: &str) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, EmailError> {
    use rustls::pki_types::pem::PemObject as _;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EmailError::Invalid(format!("the certificate to trust is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(EmailError::Invalid("the certificate to trust holds no certificate (-----BEGIN CERTIFICATE-----)".into()));
    }
    Ok(certs)
}

pub(crate) fn tls(extra: Option<&str>) -> Result<tokio_rustls::TlsConnector, EmailError> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    if let Some(pem) = extra {
        for c in certificates(pem)? {
            roots.add(c).map_err(|e| EmailError::Invalid(format!("the certificate to trust cannot be used: {e}")))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// A TLS failure in words a user can act on: a self-hosted server's own certificate is
/// trusted only when the account is given it.
pub fn tls_hint(error: &str) -> String {
    if error.contains("UnknownIssuer") {
        format!("{error}: the server's certificate is not from a public authority; if it is your own server, give the account its certificate")
    } else {
        error.to_string()
    }
}
