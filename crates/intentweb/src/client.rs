//! Talking to IntentSites: the manifest at `{origin}/intentmanifest.yaml` and envelopes
//! POSTed to the manifest's `intent_endpoint`, over HTTPS (plain HTTP only on this machine).

use std::time::Duration;

pub use gatehouse_http::HttpError;
use gatehouse_http::{base_url, read_limited, Plain, Rules};

use crate::envelope::{Envelope, MAX_ENVELOPE_BYTES};
use crate::manifest::{endpoint_allowed, Manifest, MAX_MANIFEST_BYTES};
use crate::FieldError;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Transport(#[from] HttpError),
    #[error("{url} answered HTTP {status}")]
    Http { url: String, status: u16 },
    #[error("the manifest at {url} is invalid: {error}")]
    Manifest { url: String, error: FieldError },
    #[error("the IntentSite's answer is invalid: {0}")]
    Envelope(FieldError),
}

impl ClientError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ClientError::Transport(e) => e.code(),
            ClientError::Http { .. } => gatehouse_code::Code::Http,
            ClientError::Manifest { .. } => gatehouse_code::Code::BadManifest,
            ClientError::Envelope(_) => gatehouse_code::Code::BadEnvelope,
        }
    }
}

/// `https://host[:port]` from what the user typed (a bare host, an origin, or the
/// manifest's URL).
pub fn normalize_origin(input: &str) -> Result<String, ClientError> {
    Ok(base_url(input, &Rules { what: "a site", plain: Plain::OnLoopback, document: Some("/intentmanifest.yaml"), path: false })?)
}

fn http() -> reqwest::Client {
    builder().build().expect("a reqwest client builds")
}

fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        // A redirect could lead a https origin to plain http, or outside to inside.
        .redirect(reqwest::redirect::Policy::none())
}

/// Addresses a site on the internet must not make Gatehouse reach: this machine and
/// the networks around it (loopback, private, link-local, CGNAT, unique-local, unspecified).
pub fn is_inward(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast() || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_inward(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback() || v6.is_unspecified() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Whether a URL's host is this machine or its network by name or address, without a lookup.
fn names_inward(u: &reqwest::Url) -> bool {
    match u.host() {
        Some(url::Host::Ipv4(ip)) => is_inward(ip.into()),
        Some(url::Host::Ipv6(ip)) => is_inward(ip.into()),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        None => true,
    }
}

/// Resolves names like the system does, but never to an inward address: a public site's
/// name that resolves (or is rebound) to 127.0.0.1 or a LAN address is unreachable.
struct OutwardOnly;

impl reqwest::dns::Resolve for OutwardOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.filter(|a| !is_inward(a.ip())).collect();
            if found.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> = format!("{host} resolves only to addresses on this machine or its local network").into();
                return Err(e);
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The client for requests a site's manifest aimed: a site reached on the internet can
/// only lead Gatehouse to the internet; one the user added on this machine or the local
/// network may name endpoints there too.
fn http_from(origin: &str, endpoint: &reqwest::Url) -> Result<reqwest::Client, ClientError> {
    let origin_url = reqwest::Url::parse(origin).map_err(|e| HttpError::BadUrl(format!("{origin}: {e}")))?;
    if names_inward(&origin_url) {
        return Ok(http());
    }
    if names_inward(endpoint) {
        return Err(ClientError::Transport(HttpError::BadUrl(format!(
            "{origin} names {endpoint} as its endpoint, which is on this machine or its local network; a site on the internet cannot send Gatehouse there"
        ))));
    }
    Ok(builder().dns_resolver(std::sync::Arc::new(OutwardOnly)).build().expect("a reqwest client builds"))
}

/// Fetches and checks an origin's manifest; returns it with its YAML text.
pub async fn fetch_manifest(origin: &str) -> Result<(Manifest, String), ClientError> {
    let origin = normalize_origin(origin)?;
    let url = format!("{origin}/intentmanifest.yaml");
    let resp = http().get(&url).send().await.map_err(|e| HttpError::failed(&url, &e))?;
    if !resp.status().is_success() {
        return Err(ClientError::Http { url, status: resp.status().as_u16() });
    }
    let bytes = read_limited(&url, resp, MAX_MANIFEST_BYTES).await?;
    let text = String::from_utf8(bytes).map_err(|_| ClientError::Manifest { url: url.clone(), error: FieldError::new("/", "is not UTF-8") })?;
    let manifest = Manifest::parse(&text).map_err(|error| ClientError::Manifest { url, error })?;
    Ok((manifest, text))
}

/// POSTs `env` to `endpoint`, named by `origin`'s manifest; the answer must be a valid
/// envelope (an `error` envelope with a non-2xx status is still an answer).
pub async fn post(origin: &str, endpoint: &str, env: &Envelope) -> Result<(Envelope, serde_json::Value), ClientError> {
    let url = endpoint_allowed(endpoint).map_err(HttpError::BadUrl)?;
    let resp = http_from(origin, &url)?.post(endpoint).json(env).send().await.map_err(|e| HttpError::failed(endpoint, &e))?;
    let status = resp.status().as_u16();
    let bytes = read_limited(endpoint, resp, MAX_ENVELOPE_BYTES).await?;
    let v: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) if !(200..300).contains(&status) => return Err(ClientError::Http { url: endpoint.into(), status }),
        Err(e) => return Err(ClientError::Envelope(FieldError::new("/", format!("not JSON: {e}")))),
    };
    match Envelope::from_value(&v) {
        Ok(e) => Ok((e, v)),
        Err(_) if !(200..300).contains(&status) => Err(ClientError::Http { url: endpoint.into(), status }),
        Err(e) => Err(ClientError::Envelope(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inward_addresses_are_this_machine_and_its_networks() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
        ] {
            assert!(is_inward(a.parse().unwrap()), "{a}");
        }
        for a in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "172.32.0.1", "100.128.0.1"] {
            assert!(!is_inward(a.parse().unwrap()), "{a}");
        }
    }

    #[tokio::test]
    async fn a_site_on_the_internet_cannot_aim_gatehouse_at_this_machine() {
        let endpoint = |u: &str| reqwest::Url::parse(u).unwrap();
        for inner in
            ["http://127.0.0.1:8765/epp/v1/submit", "https://localhost/x", "https://[::1]:9/x", "https://192.168.1.10/x", "https://169.254.169.254/latest"]
        {
            let e = http_from("https://shop.example", &endpoint(inner)).unwrap_err();
            assert!(e.to_string().contains("on this machine or its local network"), "{inner}: {e}");
        }
        assert!(http_from("https://shop.example", &endpoint("https://api.shop.example/intents")).is_ok());
        // A site the user runs locally may keep its endpoint local.
        assert!(http_from("http://127.0.0.1:9000", &endpoint("http://127.0.0.1:9001/intents")).is_ok());
        // A public name that resolves to loopback is refused at connect time.
        let e = reqwest::dns::Resolve::resolve(&OutwardOnly, "localhost".parse().unwrap()).await.err().expect("refused");
        assert!(e.to_string().contains("only to addresses on this machine"), "{e}");
    }
}
