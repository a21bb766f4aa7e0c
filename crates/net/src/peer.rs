//! Who a TLS client is, as any door may read it: the key its certificate carries, which
//! the handshake proved it holds. Nothing else of the certificate (names, issuer, dates)
//! is read: an agent's self-signed certificate says nothing more that could be checked.

use sha2::{Digest, Sha256};

/// The client's certificate key, as the SHA-256 of its SubjectPublicKeyInfo (DER), in
/// lower-case hex: the same pin whatever the key type. Absent when the client presented
/// no certificate. A request extension on TLS listeners.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerKey(pub Option<String>);

impl PeerKey {
    /// The key of an X.509 certificate (DER); an unreadable certificate gives none.
    pub fn from_certificate(der: &[u8]) -> PeerKey {
        use x509_cert::der::{Decode as _, Encode as _};
        let spki = x509_cert::Certificate::from_der(der).ok().and_then(|c| c.tbs_certificate.subject_public_key_info.to_der().ok());
        PeerKey(spki.map(|s| hex::encode(Sha256::digest(s))))
    }
}
