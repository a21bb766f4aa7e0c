//! What every HTTP client in Gatehouse shares (the MAIL swarm client, the UAMP peer client,
//! the IntentWeb site client, the model and DID fetches, replies): the address a user typed
//! checked one way, answers read within a bound, and a failure to connect that names its
//! innermost cause ("connection refused", "certificate expired") rather than reqwest's
//! "error sending request".

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice))]
// A server's numbers (UIDs, sizes, lengths) never wrap an addition, and no index is
// trusted to be in range.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

/// What the doors' client errors share; each door's own error wraps it.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0}")]
    BadUrl(String),
    #[error("could not reach {url}: {message}")]
    Unreachable { url: String, message: String },
    /// Reached, but no whole answer came within the time allowed.
    #[error("{url} did not answer in time ({message})")]
    TimedOut { url: String, message: String },
    /// Reached, but the exchange broke off before a whole answer came.
    #[error("{url} was reached but its answer broke off: {message}")]
    Broke { url: String, message: String },
    #[error("{url} answered more than {max} bytes")]
    TooLarge { url: String, max: usize },
}

impl HttpError {
    /// The stable code this error crosses a boundary with (the app's `{code, message}`).
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            HttpError::BadUrl(_) => gatehouse_code::Code::BadUrl,
            HttpError::Unreachable { .. } => gatehouse_code::Code::Unreachable,
            HttpError::TimedOut { .. } => gatehouse_code::Code::TimedOut,
            HttpError::Broke { .. } => gatehouse_code::Code::Interrupted,
            HttpError::TooLarge { .. } => gatehouse_code::Code::TooLarge,
        }
    }

    /// What a request's failure was, in words that tell the three apart: nothing could be
    /// reached (no connection), it took too long, or the other side was reached and the
    /// exchange broke off before a whole answer.
    pub fn failed(url: &str, e: &reqwest::Error) -> HttpError {
        let (url, message) = (url.to_string(), innermost(e));
        if e.is_timeout() {
            HttpError::TimedOut { url, message }
        } else if e.is_connect() || e.is_builder() {
            HttpError::Unreachable { url, message }
        } else {
            HttpError::Broke { url, message }
        }
    }
}

/// The innermost cause of an error, which says what actually went wrong.
pub fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut at = e;
    while let Some(inner) = at.source() {
        at = inner;
    }
    at.to_string()
}

/// `localhost` or a loopback address, bracketed or not.
pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether plain `http://` may be used at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plain {
    Never,
    /// Only to this machine: nothing crosses a network in the clear.
    OnLoopback,
}

/// How a base address is read from what the user typed.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// What the address is of, in messages: "a swarm", "a UAMP peer", "a site".
    pub what: &'a str,
    pub plain: Plain,
    /// A document under the base that users paste instead of the base (the manifest's
    /// path); it is dropped.
    pub document: Option<&'a str>,
    /// Whether the base may have a path (a swarm may be served under one).
    pub path: bool,
}

/// A base address, `https://host[:port][/path]` without a trailing slash, from a bare host,
/// an address or the document's URL. No query, fragment or credentials: a secret in the
/// address would be stored and shown.
pub fn base_url(input: &str, r: &Rules) -> Result<String, HttpError> {
    let bad = |why: String| Err(HttpError::BadUrl(format!("{input}: {why}")));
    let s = input.trim().trim_end_matches('/');
    let s = r.document.and_then(|d| s.strip_suffix(d)).unwrap_or(s).trim_end_matches('/');
    let with_scheme = if s.contains("://") { s.to_string() } else { format!("https://{s}") };
    let url = match reqwest::Url::parse(&with_scheme) {
        Ok(u) => u,
        Err(e) => return bad(e.to_string()),
    };
    let Some(host) = url.host_str() else { return bad("no host".into()) };
    match (url.scheme(), r.plain) {
        ("https", _) => {}
        ("http", Plain::OnLoopback) if is_loopback(host) => {}
        ("http", Plain::OnLoopback) => {
            return bad("plain http is allowed only on this machine (localhost); use https:// so nothing is sent in the clear".into())
        }
        ("http", Plain::Never) => return bad(format!("{} is reached over TLS only (https://)", r.what)),
        (other, _) => return bad(format!("{other}:// is not the address of {} (https://host:port)", r.what)),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad("give the address without a user name or password".into());
    }
    if url.query().is_some() || url.fragment().is_some() || (!r.path && url.path() != "/") {
        return bad(format!("give the address of {} only (https://host:port)", r.what));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// Reads an answer whole, refusing it once it passes `max` bytes (a declared length over
/// `max` is refused before anything is read).
pub async fn read_limited(url: &str, mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, HttpError> {
    let too_large = || HttpError::TooLarge { url: url.to_string(), max };
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| HttpError::failed(url, &e))? {
        if out.len().saturating_add(chunk.len()) > max {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWARM: Rules = Rules { what: "a swarm", plain: Plain::OnLoopback, document: None, path: true };
    const PEER: Rules = Rules { what: "a UAMP peer", plain: Plain::Never, document: Some("/.well-known/agent-manifest.json"), path: false };

    #[test]
    fn an_address_is_read_the_same_way_for_every_client() {
        assert_eq!(base_url("swarm.example.com", &SWARM).unwrap(), "https://swarm.example.com");
        assert_eq!(base_url("http://127.0.0.1:8000/", &SWARM).unwrap(), "http://127.0.0.1:8000");
        assert_eq!(base_url("http://[::1]:8000", &SWARM).unwrap(), "http://[::1]:8000");
        assert_eq!(base_url("https://host.example/api/", &SWARM).unwrap(), "https://host.example/api");
        assert_eq!(base_url("https://peer.example/.well-known/agent-manifest.json", &PEER).unwrap(), "https://peer.example");
        assert_eq!(base_url("127.0.0.1:8766", &PEER).unwrap(), "https://127.0.0.1:8766");
        for (input, rules, says) in [
            ("http://swarm.example.com", SWARM, "only on this machine"),
            ("http://127.0.0.1:8766", PEER, "TLS only"),
            ("ftp://swarm.example.com", SWARM, "not the address of a swarm"),
            ("https://host.example/?token=x", SWARM, "address of a swarm only"),
            ("https://user:secret@host.example", SWARM, "without a user name or password"),
            ("https://peer.example/inbox", PEER, "address of a UAMP peer only"),
            ("https://:443", SWARM, "https://:443"),
        ] {
            let e = base_url(input, &rules).unwrap_err();
            assert!(matches!(e, HttpError::BadUrl(_)) && e.to_string().contains(says), "{input}: {e}");
        }
    }

    #[test]
    fn the_innermost_cause_is_named() {
        #[derive(Debug, thiserror::Error)]
        #[error("error sending request")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused"));
        assert_eq!(innermost(&e), "connection refused");
        assert_eq!(innermost(&std::io::Error::other("alone")), "alone");
    }

    /// A server on loopback that reads the request, then does `then` with the socket.
    async fn server(then: &'static str) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            match then {
                // Headers promising 1,000 bytes, ten of them, then the connection closed.
                "breaks off" => {
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n0123456789").await;
                }
                // Nothing, until the client gives up.
                _ => tokio::time::sleep(std::time::Duration::from_secs(30)).await,
            }
        });
        format!("http://{addr}/")
    }

    #[tokio::test]
    async fn refused_timed_out_and_broken_off_are_told_apart() {
        let client = reqwest::Client::builder().timeout(std::time::Duration::from_millis(300)).build().unwrap();
        let fetch = |url: String| {
            let client = client.clone();
            async move {
                match client.get(&url).send().await {
                    Ok(r) => r.bytes().await.map(|_| ()).map_err(|e| HttpError::failed(&url, &e)),
                    Err(e) => Err(HttpError::failed(&url, &e)),
                }
            }
        };
        let silent = fetch(server("waits").await).await.unwrap_err();
        assert!(matches!(silent, HttpError::TimedOut { .. }) && silent.to_string().contains("did not answer in time"), "{silent}");
        assert_eq!(silent.code(), gatehouse_code::Code::TimedOut);
        let broken = fetch(server("breaks off").await).await.unwrap_err();
        assert!(matches!(broken, HttpError::Broke { .. }) && broken.to_string().contains("broke off"), "{broken}");
        assert_eq!(broken.code(), gatehouse_code::Code::Interrupted);
        let nobody = fetch("http://127.0.0.1:9/".into()).await.unwrap_err();
        assert!(matches!(nobody, HttpError::Unreachable { .. }) && nobody.to_string().contains("could not reach"), "{nobody}");
    }

    #[tokio::test]
    async fn an_answer_past_its_bound_is_refused() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                // Chunked, so no declared length gives the size away up front.
                let body = "a".repeat(3000);
                let _ = s.write_all(format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n", body.len()).as_bytes()).await;
            }
        });
        let url = format!("http://{addr}/");
        let get = || async { reqwest::get(&url).await.unwrap() };
        assert_eq!(read_limited(&url, get().await, 4096).await.unwrap().len(), 3000);
        let e = read_limited(&url, get().await, 2048).await.unwrap_err();
        assert!(matches!(e, HttpError::TooLarge { max: 2048, .. }), "{e}");
        let e = HttpError::failed("http://127.0.0.1:9/", &reqwest::get("http://127.0.0.1:9/").await.unwrap_err());
        assert!(e.to_string().to_lowercase().contains("refused"), "{e}");
    }
}
