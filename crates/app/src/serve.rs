//! Where the gate's doors listen and the gate they open onto, composed once for both
//! faces: the CLI's `serve` and the window's inbox [`bind`], [`open`] and
//! [`Serving::run`] through here. A face decides only what a failure means to it (the CLI
//! stops; the window says why in its status and stays usable).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::doors::{ServeOptions, UampOptions};
use tokio::sync::{broadcast, mpsc};

use crate::{Code, CommandError, Context, Result};

pub use crate::doors::gate::flood::Unkept;
pub use crate::doors::gate::runner::ExecProgress;
pub use crate::doors::gate::state::{ArrivalEvent, Status};
/// The gate: what every door shares, and where the user's decisions are carried out.
pub use crate::doors::Gate;

/// Where the doors should listen.
pub struct Doors {
    /// EPP over HTTP (and the guardian): `host:port`.
    pub epp: String,
    /// UAMP over TLS 1.3, if it runs.
    pub uamp: Option<String>,
    /// The folder envelope files are dropped into, if one is watched.
    pub watch: Option<PathBuf>,
    /// Host names other machines use for this inbox (besides its own address).
    pub public_names: Vec<String>,
}

/// The doors bound, ready to run.
pub struct Bound {
    pub options: ServeOptions,
    pub epp: SocketAddr,
    /// Where UAMP listens, or why it cannot (EPP runs regardless).
    pub uamp: std::result::Result<Option<Uamp>, CommandError>,
    /// The mail accounts followed (EPP by email), or why they cannot be read.
    pub email: std::result::Result<Vec<String>, CommandError>,
}

pub struct Uamp {
    pub at: SocketAddr,
    pub did: String,
    /// SHA-256 of the TLS certificate peers pin.
    pub certificate: String,
}

/// Binds the doors for `doors`: EPP's listener (a failure is the caller's error), UAMP's
/// (its failure is kept in [`Bound::uamp`]), the mail accounts followed, and the identity
/// key every door signs with.
pub async fn bind(ctx: &Context, doors: Doors) -> Result<Bound> {
    let (store, data_dir, key) = (&ctx.store, ctx.data_dir.as_path(), &ctx.key);
    let listener =
        tokio::net::TcpListener::bind(&doors.epp).await.map_err(|e| CommandError::new(Code::Unreachable, format!("cannot listen on {}: {e}", doors.epp)))?;
    let epp = listener.local_addr()?;
    let (uamp_options, uamp) = match doors.uamp {
        None => (None, Ok(None)),
        Some(a) => match uamp_listener(&a, data_dir, key).await {
            Ok((opts, u)) => (Some(opts), Ok(Some(u))),
            Err(e) => (None, Err(e)),
        },
    };
    let (s, dir) = (store.clone(), data_dir.to_path_buf());
    let follows = crate::blocking(move || crate::email::follows(&s, &dir)).await;
    let (follows, email) = match follows {
        Ok(f) => {
            let names = f.iter().map(|f| format!("{} ({}@{}, folder {})", f.name, f.account.user, f.account.host, f.account.folder)).collect();
            (f, Ok(names))
        }
        Err(e) => (Vec::new(), Err(e)),
    };
    let options = ServeOptions {
        listener: Some(listener),
        watch: doors.watch,
        uamp: uamp_options,
        public_names: doors.public_names,
        email: follows,
        key: Some(key.clone()),
        data_dir: Some(data_dir.to_path_buf()),
        ..Default::default()
    };
    Ok(Bound { options, epp, uamp, email })
}

/// Where what the gate does is told: kept by a face across pauses and restarts (the window
/// listens for the whole session), or made for one run.
#[derive(Clone)]
pub struct Events {
    pub events: broadcast::Sender<ArrivalEvent>,
    /// Executors at work (a model's answer as it streams).
    pub progress: broadcast::Sender<ExecProgress>,
}

impl Default for Events {
    fn default() -> Self {
        Events { events: broadcast::channel(1024).0, progress: broadcast::channel(256).0 }
    }
}

/// The gate, open to the doors bound, not yet running.
pub struct Serving {
    gate: Arc<Gate>,
    queue: mpsc::UnboundedReceiver<i64>,
    options: ServeOptions,
}

/// The gate the doors bound (`Bound::options`) open onto, telling `events` what it does.
pub fn open(ctx: &Context, options: ServeOptions, events: &Events) -> Serving {
    let here = crate::doors::gate::executor::here::RunsHere::In(ctx.data_dir.clone());
    let (gate, queue) = crate::doors::build_with_events(ctx.store.clone(), &ctx.public_key, events.events.clone(), events.progress.clone(), here);
    Serving { gate, queue, options }
}

impl Serving {
    /// The running gate, for decisions the user makes while it runs.
    pub fn gate(&self) -> Arc<Gate> {
        self.gate.clone()
    }

    /// Runs the doors, the executors and the upkeep until `shutdown` resolves.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> Result<()> {
        crate::doors::run_with(self.gate, self.queue, self.options, shutdown, |_| {}).await.map_err(|e| CommandError::new(Code::Internal, e))
    }
}

/// The gate while no door runs (the window paused): decisions still apply, and what they
/// release runs when the doors open again.
pub fn detached(ctx: &Context, events: &Events) -> Arc<Gate> {
    let here = crate::doors::gate::executor::here::RunsHere::In(ctx.data_dir.clone());
    Arc::new(crate::doors::compose_gate(ctx.store.clone(), &ctx.public_key).with_events(events.events.clone()).with_runs_here(here))
}

async fn uamp_listener(addr: &str, data_dir: &Path, key: &ed25519_dalek::SigningKey) -> Result<(UampOptions, Uamp)> {
    let l = tokio::net::TcpListener::bind(addr).await.map_err(|e| CommandError::new(Code::Unreachable, format!("UAMP cannot listen on {addr}: {e}")))?;
    let at = l.local_addr()?;
    let id = crate::streams::identity(data_dir, key)?;
    let u = Uamp { at, did: id.did, certificate: id.certificate.fingerprint.clone() };
    // Read once: the UAMP door serves with this one.
    Ok((UampOptions { listener: l, key: key.clone(), data_dir: data_dir.to_path_buf(), certificate: Some(id.certificate), started: None }, u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_taken_port_is_the_callers_error_for_epp_and_a_kept_reason_for_uamp() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context::open(dir.path().to_path_buf(), crate::context::KeystoreKind::File, true).unwrap();
        let key = ctx.key.clone();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_at = taken.local_addr().unwrap().to_string();
        let doors = |epp: &str, uamp: &str| Doors { epp: epp.into(), uamp: Some(uamp.into()), watch: None, public_names: Vec::new() };

        let Err(e) = bind(&ctx, doors(&taken_at, "127.0.0.1:0")).await else { panic!("bound a taken port") };
        assert!(e.code == Code::Unreachable && e.message.contains(&format!("cannot listen on {taken_at}")), "{e:?}");

        // UAMP's port taken: EPP still binds, and why UAMP does not is kept for the face.
        let b = bind(&ctx, doors("127.0.0.1:0", &taken_at)).await.unwrap();
        assert!(b.options.listener.is_some() && b.options.uamp.is_none());
        let e = b.uamp.err().unwrap();
        assert!(e.message.starts_with("UAMP cannot listen on"), "{e:?}");
        assert_eq!(b.email.unwrap(), Vec::<String>::new());

        // Both free: UAMP names its DID and the certificate peers pin.
        let b = bind(&ctx, doors("127.0.0.1:0", "127.0.0.1:0")).await.unwrap();
        let u = b.uamp.unwrap().unwrap();
        assert_eq!(u.did, gatehouse_uamp::sign::did_of(&key));
        assert_eq!(u.certificate.split(':').count(), 32, "{}", u.certificate);
        assert_eq!(b.options.key.as_ref().map(|k| k.to_bytes()), Some(key.to_bytes()));
    }
}
