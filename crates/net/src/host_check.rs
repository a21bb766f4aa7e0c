//! Who may talk to a listener, decided before any route runs.
//!
//! Loopback is not a boundary: any web page the user opens can send requests to
//! 127.0.0.1 (a no-CORS POST needs no preflight), and DNS rebinding makes a page's own
//! host name resolve to 127.0.0.1 so the browser lets it read the answers. Senders and
//! agents are programs: they name this listener by its address (or a public name the
//! user configured) and send no `Origin`. Browsers always name the page's host in `Host`
//! after a rebinding, and add `Origin` or `Sec-Fetch-Site` to what a page sends. So a
//! request is served only when its `Host` is this listener (its address, `localhost`, or
//! a configured name, with this listener's port) and it carries no browser origin.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// What a listener answers to.
#[derive(Debug, Clone)]
pub struct Allowed {
    bound: SocketAddr,
    /// The port a `Host` without one means (80 for plain HTTP, 443 for TLS).
    default_port: u16,
    /// Host names the user configured for a listener reachable from elsewhere, lower case.
    names: Vec<String>,
    /// Paths of pages this listener serves to a browser (and the requests those pages
    /// make to their own origin): the only place a same-origin browser request is served.
    pages: Vec<String>,
}

impl Allowed {
    pub fn new(bound: SocketAddr, tls: bool, names: &[String]) -> Allowed {
        Allowed {
            bound,
            default_port: if tls { 443 } else { 80 },
            names: names.iter().map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase()).collect(),
            pages: Vec::new(),
        }
    }

    /// Serves the pages under `prefixes` (each a path and what is below it) to a browser,
    /// with the requests they make to their own origin. Every other path still refuses
    /// any web page.
    pub fn with_pages(mut self, prefixes: &[&str]) -> Allowed {
        self.pages = prefixes.iter().map(|p| p.trim_end_matches('/').to_string()).collect();
        self
    }

    fn is_page(&self, path: &str) -> bool {
        self.pages.iter().any(|p| path == p || path.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with('/')))
    }

    /// Why a request may not be served here, or None.
    pub fn refusal(&self, headers: &HeaderMap, uri: &axum::http::Uri) -> Option<String> {
        let page = self.is_page(uri.path());
        // A page's own requests name its origin: this very Host (which is checked below
        // like any other), by either scheme (a proxy in front may speak TLS).
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let own_origin = |origin: &str| {
            let rest = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"));
            page && rest.zip(host).is_some_and(|(r, h)| r.eq_ignore_ascii_case(h))
        };
        if let Some(origin) = headers.get(header::ORIGIN) {
            if !origin.to_str().is_ok_and(own_origin) {
                return Some(format!(
                    "requests from web pages are refused (Origin: {})",
                    String::from_utf8_lossy(origin.as_bytes()).chars().take(100).collect::<String>()
                ));
            }
        }
        if let Some(site) = headers.get("sec-fetch-site") {
            if site.as_bytes() != b"none" && !(page && site.as_bytes() == b"same-origin") {
                return Some("requests from web pages are refused (Sec-Fetch-Site)".into());
            }
        }
        // HTTP/2 carries the authority in the request line; HTTP/1.1 in Host.
        let authority = match headers.get(header::HOST) {
            Some(h) => h.to_str().ok()?.to_string(),
            None => match uri.authority() {
                Some(a) => a.as_str().to_string(),
                None => return Some("the request names no Host".into()),
            },
        };
        let Ok(parsed) = authority.parse::<axum::http::uri::Authority>() else {
            return Some(format!("Host {authority:?} is not a host name"));
        };
        if parsed.as_str().contains('@') {
            return Some(format!("Host {authority:?} is not a host name"));
        }
        let host = parsed.host().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
        let port = parsed.port_u16().unwrap_or(self.default_port);
        // A configured public name is reached through whatever is in front (a reverse
        // proxy on 443, passing the name on as the client wrote it): its web ports count
        // as this listener's. A page cannot rebind a name the user configured.
        let public = self.names.contains(&host) && matches!(parsed.port_u16(), None | Some(80 | 443));
        if port != self.bound.port() && !public {
            return Some(format!("Host {authority:?} names another port than this listener's ({})", self.bound.port()));
        }
        let ok = match host.parse::<IpAddr>() {
            // An address is not a name a page can rebind; it must be one this listener has.
            Ok(ip) => (ip.is_loopback() && self.bound.ip().is_loopback()) || ip == self.bound.ip() || self.bound.ip().is_unspecified(),
            Err(_) => (host == "localhost" && (self.bound.ip().is_loopback() || self.bound.ip().is_unspecified())) || self.names.contains(&host),
        };
        if ok {
            None
        } else {
            Some(format!("Host {authority:?} is not this inbox's address; a public name must be configured (--public-name) to be used"))
        }
    }
}

/// Adds the check to `app`, answering a refused request with 421 and a typed error.
pub fn layer(app: axum::Router, allowed: Allowed) -> axum::Router {
    app.layer(axum::middleware::from_fn_with_state(Arc::new(allowed), check))
}

async fn check(State(allowed): State<Arc<Allowed>>, req: Request, next: Next) -> Response {
    match allowed.refusal(req.headers(), req.uri()) {
        None => next.run(req).await,
        Some(why) => {
            tracing::info!(reason = %why, path = %req.uri().path(), "request refused before routing");
            (StatusCode::MISDIRECTED_REQUEST, axum::Json(serde_json::json!({"error": {"code": "FORBIDDEN_HOST", "message": why}}))).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(host: Option<&str>, extra: &[(&str, &str)]) -> (HeaderMap, axum::http::Uri) {
        let mut h = HeaderMap::new();
        if let Some(host) = host {
            h.insert(header::HOST, host.parse().unwrap());
        }
        for (k, v) in extra {
            h.insert(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        (h, "/epp/v1/submit".parse().unwrap())
    }

    #[test]
    fn only_this_listeners_own_names_and_no_web_page() {
        let a = Allowed::new("127.0.0.1:8765".parse().unwrap(), false, &["inbox.example.org".into()]);
        let refused = |host: Option<&str>, extra: &[(&str, &str)]| {
            let (h, u) = req(host, extra);
            a.refusal(&h, &u)
        };
        // A public name as a reverse proxy passes it on (nginx's `$host`: no port).
        for ok in ["127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765", "inbox.example.org:8765", "inbox.example.org", "inbox.example.org:443"] {
            assert_eq!(refused(Some(ok), &[]), None, "{ok}");
        }
        for bad in [
            "attacker.example:8765",
            "attacker.example",
            "127.0.0.1:80",
            "127.0.0.1",
            "localhost",
            "localhost:443",
            "inbox.example.org:9999",
            "localhost.attacker.example:8765",
            "192.168.1.5:8765",
            "user@127.0.0.1:8765",
        ] {
            assert!(refused(Some(bad), &[]).is_some(), "{bad}");
        }
        assert!(refused(None, &[]).unwrap().contains("no Host"));
        assert!(refused(Some("127.0.0.1:8765"), &[("origin", "https://evil.example")]).unwrap().contains("web pages"));
        assert!(refused(Some("127.0.0.1:8765"), &[("origin", "null")]).is_some());
        assert!(refused(Some("127.0.0.1:8765"), &[("sec-fetch-site", "cross-site")]).is_some());
        assert_eq!(refused(Some("127.0.0.1:8765"), &[("sec-fetch-site", "none")]), None);
        // No path is a page unless the listener serves pages.
        assert!(refused(Some("127.0.0.1:8765"), &[("origin", "http://127.0.0.1:8765"), ("sec-fetch-site", "same-origin")]).is_some());
    }

    #[test]
    fn a_page_the_listener_serves_may_call_its_own_origin_and_nothing_else_may() {
        let a = Allowed::new("127.0.0.1:8765".parse().unwrap(), false, &["gate.example".into()]).with_pages(&["/approve"]);
        let at = |path: &str, host: &str, extra: &[(&str, &str)]| {
            let (h, _) = req(Some(host), extra);
            a.refusal(&h, &path.parse().unwrap())
        };
        let own = [("origin", "http://127.0.0.1:8765"), ("sec-fetch-site", "same-origin")];
        assert_eq!(at("/approve/decide", "127.0.0.1:8765", &own), None);
        assert_eq!(at("/approve", "127.0.0.1:8765", &[("sec-fetch-site", "same-origin")]), None);
        assert_eq!(at("/approve/waiting", "gate.example:8765", &[("origin", "https://gate.example:8765"), ("sec-fetch-site", "same-origin")]), None);
        // Not a page: the submit door refuses the same request.
        assert!(at("/epp/v1/submit", "127.0.0.1:8765", &own).unwrap().contains("web pages"));
        assert!(at("/approvex", "127.0.0.1:8765", &own).is_some());
        // Another origin, another site, or a rebinding name is refused on a page too.
        assert!(at("/approve/decide", "127.0.0.1:8765", &[("origin", "https://evil.example"), ("sec-fetch-site", "cross-site")]).is_some());
        assert!(at("/approve/decide", "127.0.0.1:8765", &[("origin", "http://127.0.0.1:8765"), ("sec-fetch-site", "cross-site")]).is_some());
        assert!(at("/approve/decide", "127.0.0.1:8765", &[("origin", "http://127.0.0.1:9999")]).is_some());
        assert!(at("/approve/decide", "evil.example:8765", &[("origin", "http://evil.example:8765"), ("sec-fetch-site", "same-origin")]).is_some());
    }
}
