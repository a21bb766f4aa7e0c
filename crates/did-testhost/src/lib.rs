//! A did:web host for tests. A did:web agent's keys are read from
//! `https://<host>/.well-known/did.json`; this serves that document on loopback over TLS
//! (a certificate for `localhost` made at start), and the test changes what it lists to
//! play an owner rotating its keys. Plain threads, so sync and async tests alike can use it.

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};

use ed25519_dalek::SigningKey;
use gatehouse_uamp::did::PublicKey;
use serde_json::{json, Value};

pub struct DidHost {
    did: String,
    doc: Arc<Mutex<Value>>,
    ca_pem: String,
    ca_der: Vec<u8>,
}

impl DidHost {
    /// Listens on a free loopback port; the document lists no keys until [`DidHost::publish`].
    pub fn start() -> DidHost {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("a certificate for localhost");
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .expect("the certificate and its key");
        let config = Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let did = format!("did:web:localhost%3A{port}");
        let doc = Arc::new(Mutex::new(json!({"id": did, "verificationMethod": []})));
        let served = doc.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let (config, served) = (config.clone(), served.clone());
                std::thread::spawn(move || {
                    let _ = tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                    let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                    let mut tls = rustls::StreamOwned::new(conn, tcp);
                    let mut req = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 16 * 1024 {
                        match tls.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => req.extend_from_slice(&buf[..n]),
                        }
                    }
                    let (status, body) = if req.starts_with(b"GET /.well-known/did.json ") {
                        ("200 OK", served.lock().unwrap_or_else(|p| p.into_inner()).to_string())
                    } else {
                        ("404 Not Found", "{}".to_string())
                    };
                    let head = format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                    let _ = tls.write_all(head.as_bytes()).and_then(|_| tls.write_all(body.as_bytes()));
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                });
            }
        });
        DidHost { did, doc, ca_pem: cert.cert.pem(), ca_der: cert.cert.der().to_vec() }
    }

    /// The agent's DID (`did:web:localhost%3A<port>`).
    pub fn did(&self) -> &str {
        &self.did
    }

    /// The key id of one of its keys, by fragment.
    pub fn kid(&self, fragment: &str) -> String {
        format!("{}#{fragment}", self.did)
    }

    /// The document now lists these Ed25519 keys, by fragment.
    pub fn publish(&self, keys: &[(&str, &SigningKey)]) {
        let methods: Vec<Value> = keys
            .iter()
            .map(|(frag, k)| {
                json!({"id": format!("#{frag}"), "type": "JsonWebKey2020", "controller": self.did, "publicKeyJwk": PublicKey::Ed25519(k.verifying_key()).to_jwk()})
            })
            .collect();
        *self.doc.lock().unwrap_or_else(|p| p.into_inner()) = json!({"id": self.did, "verificationMethod": methods});
    }

    /// The certificate to trust (PEM), e.g. for `GATEHOUSE_TEST_DID_CA`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The certificate to trust (DER).
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }
}
