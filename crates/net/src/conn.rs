//! Who gets a connection slot, and how long an idle connection keeps it.
//!
//! Both listeners (plain HTTP and UAMP over TLS) admit connections here: at most
//! `max` at once and at most `per_client` from one address, so one remote client cannot
//! take every slot. A connection with nothing in progress for `idle` is asked to close
//! (HTTP/2 GOAWAY, HTTP/1 close): a live HTTP/2 peer answers keep-alive pings, so without
//! this an idle connection would hold its slot forever. On loopback every local process
//! has the same address, so the share cannot tell them apart there; the idle close and
//! the header and handshake timeouts are what bound a local client.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use hyper_util::server::graceful::GracefulConnection;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; further clients wait in the listen backlog.
    pub max: usize,
    /// Connections one address may hold; more are closed as soon as they are accepted.
    pub per_client: usize,
    /// A connection with no request or response in progress for this long is closed.
    pub idle: Duration,
}

pub const MAX_CONNECTIONS: usize = 1024;
pub const MAX_PER_CLIENT: usize = 128;
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for Limits {
    fn default() -> Self {
        Limits { max: MAX_CONNECTIONS, per_client: MAX_PER_CLIENT, idle: IDLE_TIMEOUT }
    }
}

/// The slots of one listener.
pub(crate) struct Admission {
    limits: Limits,
    slots: Arc<Semaphore>,
    per_client: Mutex<HashMap<IpAddr, usize>>,
}

/// A held slot; it is given back when the connection's task drops it.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    ip: IpAddr,
    admission: Arc<Admission>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.admission.per_client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Admission { limits, slots: Arc::new(Semaphore::new(limits.max.max(1))), per_client: Mutex::new(HashMap::new()) })
    }

    /// The next connection within the limits, or None when `shutdown` resolves first.
    pub(crate) async fn accept<F: std::future::Future<Output = ()>>(
        self: &Arc<Self>,
        listener: &TcpListener,
        mut shutdown: std::pin::Pin<&mut F>,
    ) -> Option<(TcpStream, Slot)> {
        let permit = tokio::select! {
            p = self.slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            () = shutdown.as_mut() => return None,
        };
        loop {
            tokio::select! {
                r = listener.accept() => match r {
                    Ok((stream, peer)) => {
                        let ip = peer.ip();
                        {
                            let mut counts = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
                            let n = counts.entry(ip).or_insert(0);
                            if *n >= self.limits.per_client {
                                // Dropped unanswered: the client has its share already.
                                tracing::debug!(%ip, "connection over the per-client share closed");
                                continue;
                            }
                            *n += 1;
                        }
                        let _ = stream.set_nodelay(true);
                        return Some((stream, Slot { _permit: permit, ip, admission: self.clone() }));
                    }
                    Err(e) => {
                        // Out of file descriptors, say: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                () = shutdown.as_mut() => return None,
            }
        }
    }
}

/// What is in progress on one connection, and since when nothing has been.
#[derive(Clone)]
pub struct Activity(Arc<ActivityInner>);

struct ActivityInner {
    open: AtomicUsize,
    since: Mutex<Instant>,
}

/// One request and its response body; the connection is busy while any exists.
struct Busy(Activity);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0 .0.since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0 .0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Default for Activity {
    fn default() -> Self {
        Activity(Arc::new(ActivityInner { open: AtomicUsize::new(0), since: Mutex::new(Instant::now()) }))
    }
}

impl Activity {
    fn touch(&self) {
        *self.0.since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn begin(&self) -> Busy {
        self.0.open.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// Resolves once nothing has been in progress for `idle`; sleeps until then
    /// rather than polling, so an idle server does not wake.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let since = *self.0.since.lock().unwrap_or_else(|e| e.into_inner());
            let due = since + idle;
            if self.0.open.load(Ordering::Acquire) == 0 && Instant::now() >= due {
                return;
            }
            let wake = if Instant::now() >= due { Instant::now() + idle } else { due };
            tokio::time::sleep_until(wake.into()).await;
        }
    }
}

/// `app` with every request counted on `activity` until its response body is done (a
/// streamed response keeps the connection busy).
pub fn tracked(
    app: Router,
    activity: Activity,
    remote: Option<std::net::SocketAddr>,
) -> impl tower::Service<Request<hyper::body::Incoming>, Response = axum::response::Response, Error = std::convert::Infallible, Future = impl Send> + Clone + Send
{
    use http_body_util::BodyExt;
    tower::service_fn(move |mut req: Request<hyper::body::Incoming>| {
        let busy = activity.begin();
        // Who is at the other end of the connection (a reverse proxy, for requests it
        // forwards), for limits kept per client.
        if let Some(addr) = remote {
            req.extensions_mut().insert(axum::extract::ConnectInfo(addr));
        }
        let call = tower::ServiceExt::oneshot(app.clone(), req.map(Body::new));
        async move {
            let resp = call.await?;
            Ok(resp.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _held = &busy;
                    frame
                }))
            }))
        }
    })
}

/// A connection that can be asked to close once what is in progress is done: either
/// listener's, and the plain one's HTTP/1 with upgrades (which hyper-util's sealed
/// `GracefulConnection` does not name).
pub trait Closing: std::future::Future {
    fn close(self: std::pin::Pin<&mut Self>);
}

impl<C: GracefulConnection> Closing for Graceful<C> {
    fn close(self: std::pin::Pin<&mut Self>) {
        self.get_mut().0.as_mut().graceful_shutdown();
    }
}

/// A connection hyper-util knows how to close.
pub struct Graceful<C>(pub std::pin::Pin<Box<C>>);

impl<C: std::future::Future> std::future::Future for Graceful<C> {
    type Output = C::Output;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<C::Output> {
        self.get_mut().0.as_mut().poll(cx)
    }
}

impl<I, B, S> Closing for hyper::server::conn::http1::UpgradeableConnection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn close(self: std::pin::Pin<&mut Self>) {
        hyper::server::conn::http1::UpgradeableConnection::graceful_shutdown(self);
    }
}

/// Drives `conn` until it ends, asking it to close once it has been idle for `idle` or
/// the server stops (`stop`); then waits for what is in progress to finish.
pub async fn drive<C: Closing>(conn: C, activity: Activity, idle: Duration, mut stop: watch::Receiver<bool>) {
    tokio::pin!(conn);
    tokio::select! {
        // Errors here are the client's (reset, timed out headers): nothing to report.
        _ = conn.as_mut() => return,
        () = activity.idle_for(idle) => {}
        _ = stop.wait_for(|s| *s) => {}
    }
    conn.as_mut().close();
    // An HTTP/2 client that never acknowledges the GOAWAY's ping would keep the
    // connection open: once nothing has been in progress for a moment, it is dropped.
    activity.touch();
    tokio::select! {
        _ = conn.as_mut() => {}
        () = activity.idle_for(CLOSE_GRACE) => {}
    }
}

/// How long a connection asked to close may take once nothing is in progress on it.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Serves a listener: connections within `limits` are accepted until `shutdown`, each
/// driven by `per_conn` (given the stream and the stop signal) on its own task holding
/// its slot; then every connection is told to close and waited for. The plain and the
/// TLS listeners differ only in `per_conn`.
pub async fn serve<F, Fut>(listener: TcpListener, limits: Limits, shutdown: impl std::future::Future<Output = ()>, per_conn: F)
where
    F: Fn(TcpStream, watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let admission = Admission::new(limits);
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(shutdown);
    while let Some((stream, slot)) = admission.accept(&listener, shutdown.as_mut()).await {
        let conn = per_conn(stream, stopped.clone());
        tokio::spawn(async move {
            conn.await;
            drop(slot);
        });
    }
    drop(listener);
    drop(stopped);
    stop_all(stop).await;
}

/// Tells every connection driven with `stop` to close and waits (at most 5 s) for the
/// requests in progress to finish.
async fn stop_all(stop: watch::Sender<bool>) {
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), stop.closed()).await;
}
