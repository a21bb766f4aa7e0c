//! TLS to PostgreSQL, for a team's gate whose nodes reach the database over a network.
//!
//! The URL says it as libpq does: `sslmode=require` (and `verify-ca`/`verify-full`, which
//! mean the same here) encrypts and verifies the server's certificate, for the URL's host,
//! against the public roots and the CA file `sslrootcert=` names; `disable`, `prefer` or
//! none connect in the clear (a database on the node's own machine). There is no mode that
//! encrypts without verifying: a certificate nobody checked protects from no one.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls};

use crate::{Result, StoreError};

/// How a node's connections reach the database.
#[derive(Clone)]
pub(crate) enum Tls {
    Off,
    On(tokio_postgres_rustls::MakeRustlsConnect),
}

/// What a database URL says, read without opening anything: tokio-postgres's config (the
/// options it does not take, libpq's names, read and removed) and the CA file it names.
pub(crate) fn read(url: &str) -> Result<(Config, Option<String>)> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut rootcert = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslrootcert", path)) => rootcert = Some(percent_decoded(path)?),
            Some(("sslmode", "verify-ca" | "verify-full")) => kept.push("sslmode=require".to_string()),
            _ => kept.push(pair.to_string()),
        }
    }
    let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    let config: Config = url.parse().map_err(|e| StoreError::Invalid(format!("not a PostgreSQL URL: {e}")))?;
    Ok((config, rootcert))
}

/// [`read`], and how to connect.
pub(crate) fn parse(url: &str) -> Result<(Config, Tls)> {
    let (config, rootcert) = read(url)?;
    let tls = match (config.get_ssl_mode(), &rootcert) {
        (SslMode::Require, _) => Tls::On(connector(rootcert.as_deref())?),
        (_, Some(_)) => {
            return Err(StoreError::Invalid("the database URL names a CA (sslrootcert) but does not ask for TLS: add sslmode=require".into()));
        }
        _ => Tls::Off,
    };
    Ok((config, tls))
}

fn percent_decoded(s: &str) -> Result<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex: String = bytes.by_ref().take(2).map(char::from).collect();
            let v = u8::from_str_radix(&hex, 16).map_err(|_| StoreError::Invalid(format!("sslrootcert: bad escape %{hex}")))?;
            out.push(v);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).map_err(|_| StoreError::Invalid("sslrootcert is not UTF-8".into()))
}

fn connector(rootcert: Option<&str>) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = rootcert {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<std::result::Result<_, _>>())
            .map_err(|e| StoreError::Invalid(format!("cannot read the database's CA file {path} (sslrootcert): {e}")))?;
        if certs.is_empty() {
            return Err(StoreError::Invalid(format!("the database's CA file {path} (sslrootcert) holds no certificate")));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| StoreError::Invalid(format!("the database's CA file {path} (sslrootcert): {e}")))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Invalid(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Connects, and drives the connection on the runtime this is awaited on.
pub(crate) async fn connect(config: &Config, tls: &Tls) -> std::result::Result<Client, tokio_postgres::Error> {
    async fn drive<F: std::future::Future<Output = std::result::Result<(), tokio_postgres::Error>>>(connection: F) {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "a database connection ended");
        }
    }
    match tls {
        Tls::Off => {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(drive(connection));
            Ok(client)
        }
        Tls::On(make) => {
            let (client, connection) = config.connect(make.clone()).await?;
            tokio::spawn(drive(connection));
            Ok(client)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_s_verifying_modes_mean_require_and_the_ca_file_is_not_passed_on() {
        let (config, tls) = parse("postgres://u@db.example:5432/gate?sslmode=verify-full&application_name=x").unwrap();
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        assert!(matches!(tls, Tls::On(_)));
        let (config, tls) = parse("postgres://u@localhost/gate").unwrap();
        assert_eq!(config.get_ssl_mode(), SslMode::Prefer);
        assert!(matches!(tls, Tls::Off), "no TLS asked for: in the clear, as on one machine");
        let e = parse("postgres://u@localhost/gate?sslrootcert=/nonexistent.pem").err().unwrap();
        assert!(e.to_string().contains("sslmode=require"), "{e}");
        let e = parse("postgres://u@localhost/gate?sslmode=require&sslrootcert=/nonexistent%20file.pem").err().unwrap();
        assert!(e.to_string().contains("/nonexistent file.pem"), "{e}");
    }
}
