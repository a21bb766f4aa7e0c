//! Talking to IntentSites: the manifest at `{origin}/intentmanifest.yaml` and envelopes
//! POSTed to the manifest's `intent_endpoint`, over HTTPS (plain HTTP only on this machine).

use std::time::Duration;

use futures_util::StreamExt as _;

use crate::envelope::{Envelope, MAX_ENVELOPE_BYTES};
use crate::manifest::{endpoint_allowed, Manifest, MAX_MANIFEST_BYTES};
use crate::FieldError;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    BadUrl(String),
    #[error("could not reach {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("{url} answered HTTP {status}")]
    Http { url: String, status: u16 },
    #[error("the manifest at {url} is invalid: {error}")]
    Manifest { url: String, error: FieldError },
    #[error("the IntentSite's answer is invalid: {0}")]
    Envelope(FieldError),
    #[error("{0}")]
    TooLarge(String),
}

impl ClientError {
    pub fn code(&self) -> &'static str {
        match self {
            ClientError::BadUrl(_) => "BAD_URL",
            ClientError::Unreachable { .. } => "UNREACHABLE",
            ClientError::Http { .. } => "HTTP",
            ClientError::Manifest { .. } => "BAD_MANIFEST",
            ClientError::Envelope(_) => "BAD_ENVELOPE",
            ClientError::TooLarge(_) => "TOO_LARGE",
        }
    }
}

/// `https://host[:port]` from what the user typed (a bare host, an origin, or the
/// manifest's URL).
pub fn normalize_origin(input: &str) -> Result<String, ClientError> {
    let s = input.trim().trim_end_matches('/');
    let s = s.strip_suffix("/intentmanifest.yaml").unwrap_or(s);
    let with = if s.contains("://") { s.to_string() } else { format!("https://{s}") };
    let u = endpoint_allowed(&with).map_err(ClientError::BadUrl)?;
    if u.path() != "/" || u.query().is_some() {
        return Err(ClientError::BadUrl(format!("{input}: give the site's origin (https://host)")));
    }
    Ok(u.origin().ascii_serialization())
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        // A redirect could lead a https origin to plain http.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a reqwest client builds")
}

fn unreachable(url: &str, e: reqwest::Error) -> ClientError {
    let mut message = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        message = s.to_string();
        src = s.source();
    }
    ClientError::Unreachable { url: url.to_string(), message }
}

async fn read_limited(url: &str, resp: reqwest::Response, max: usize) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| unreachable(url, e))?;
        if out.len() + chunk.len() > max {
            return Err(ClientError::TooLarge(format!("{url} answered more than {max} bytes")));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Fetches and checks an origin's manifest; returns it with its YAML text.
pub async fn fetch_manifest(origin: &str) -> Result<(Manifest, String), ClientError> {
    let origin = normalize_origin(origin)?;
    let url = format!("{origin}/intentmanifest.yaml");
    let resp = http().get(&url).send().await.map_err(|e| unreachable(&url, e))?;
    if !resp.status().is_success() {
        return Err(ClientError::Http { url, status: resp.status().as_u16() });
    }
    let bytes = read_limited(&url, resp, MAX_MANIFEST_BYTES).await?;
    let text = String::from_utf8(bytes).map_err(|_| ClientError::Manifest { url: url.clone(), error: FieldError::new("/", "is not UTF-8") })?;
    let manifest = Manifest::parse(&text).map_err(|error| ClientError::Manifest { url, error })?;
    Ok((manifest, text))
}

/// POSTs `env` to `endpoint`; the answer must be a valid envelope (an `error` envelope
/// with a non-2xx status is still an answer).
pub async fn post(endpoint: &str, env: &Envelope) -> Result<(Envelope, serde_json::Value), ClientError> {
    endpoint_allowed(endpoint).map_err(ClientError::BadUrl)?;
    let resp = http().post(endpoint).json(env).send().await.map_err(|e| unreachable(endpoint, e))?;
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
