//! The plain HTTP listener every door on it shares (EPP's submit, the guardian, UAMP's
//! refusal to speak without TLS): connections admitted, Host and Origin checked, headers
//! within a deadline.

use std::time::Duration;

use axum::Router;

/// Request headers must arrive within this time, and an idle keep-alive connection is
/// closed after it: a slow-loris client cannot hold a connection open by trickling.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `shutdown` resolves, admitting connections within
/// `limits` ([`crate::conn`]); then stops accepting, lets requests in progress finish,
/// and closes idle connections. Only requests naming this listener (its address or one
/// of `public_names`) and sent by no web page are routed, but for the `pages` the listener
/// serves and their requests to their own origin ([`crate::host_check`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    public_names: &[String],
    pages: &[&str],
    limits: crate::conn::Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let allowed = crate::host_check::Allowed::new(listener.local_addr()?, false, public_names).with_pages(pages);
    let app = crate::host_check::layer(app, allowed);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).max_buf_size(256 * 1024);
    crate::conn::serve(listener, limits, shutdown, move |stream, stopped| {
        let activity = crate::conn::Activity::default();
        let remote = stream.peer_addr().ok();
        let service = hyper_util::service::TowerToHyperService::new(crate::conn::tracked(app.clone(), activity.clone(), remote));
        // With upgrades: a door may take a connection over once its request is checked
        // (the MCP door's kept line for a wrap); it bounds it itself from then on.
        let conn = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
        crate::conn::drive(conn, activity, limits.idle, stopped)
    })
    .await;
    Ok(())
}
