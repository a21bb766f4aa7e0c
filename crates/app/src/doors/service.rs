//! The composition: deciding which doors run on which listeners and which executors
//! exist, and running it all until shutdown (opening the data dir is `open`).
//! What a user does with it (trust, consent, executors, exports) is `gatehouse-app`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_store::Store;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::epp::folder::{self, Processed};
use super::gate::executor::Delegates;
use super::gate::runner;
use super::Gate;

#[derive(Default)]
pub struct ServeOptions {
    pub listener: Option<TcpListener>,
    /// Host names (besides this machine's own) under which the listeners are reached,
    /// for an inbox bound where other machines reach it; requests naming any other host
    /// are refused (DNS rebinding).
    pub public_names: Vec<String>,
    pub watch: Option<PathBuf>,
    /// Connection slots, per-client share and idle close for both listeners.
    pub limits: gatehouse_net::conn::Limits,
    /// UAMP and A2A over TLS 1.3 on their own listener.
    pub uamp: Option<UampOptions>,
    /// Mail accounts followed for envelopes (EPP by email).
    pub email: Vec<super::email::Follow>,
    /// The identity key, held by the caller that opened the data dir: replies and asks of
    /// UAMP peers are signed with it (without it, with the key the data dir records, read
    /// from the keychain for each).
    pub key: Option<ed25519_dalek::SigningKey>,
    /// This machine's data dir, where it keeps the newest checkpoint of the audit log it
    /// signed or saw ([`crate::witness`]).
    pub data_dir: Option<PathBuf>,
}

pub struct UampOptions {
    pub listener: TcpListener,
    /// The identity key: it signs envelopes and manifests and is the TLS key.
    pub key: ed25519_dalek::SigningKey,
    /// Where the certificate is kept.
    pub data_dir: PathBuf,
    /// The certificate, when the caller has already read it (else read from `data_dir`).
    pub certificate: Option<super::uamp::tls::Certificate>,
    /// Receives the UAMP inbox once it runs (the app uses it to show streams).
    pub started: Option<tokio::sync::oneshot::Sender<Arc<super::uamp::UampDoor>>>,
}

/// How often expired nonces and per-minute usage older than any window are dropped.
const GC_EVERY: Duration = Duration::from_secs(600);

/// How often the gate's deciding state is checked against its seals (and a problem shown
/// on `/ready`): a read of every sealed row, cheap beside a minute of arrivals.
const STATE_EVERY: Duration = Duration::from_secs(30);

/// The scopes the guardian, the MCP door and IntentWeb record for themselves (an agent
/// registered, a server let in, a site pinned), each with its door: no other door's
/// sender may ask for one.
pub const RESERVED_SCOPES: [(&str, &str); 3] =
    [(super::guardian::DOOR, super::guardian::SCOPE), (super::mcp::DOOR, super::mcp::at_gate::SCOPE), (super::intent::DOOR, super::intent::SCOPE)];

/// The gate over a store, with what the doors composed here keep for themselves.
pub fn gate(store: Arc<Store>, public_key: &str) -> Gate {
    Gate::new(store, public_key).with_reserved_scopes(&RESERVED_SCOPES)
}

/// An inbox wired to an executor queue; [`run_with`] drains the queue.
pub fn build(store: Arc<Store>, public_key: &str) -> (Arc<Gate>, mpsc::UnboundedReceiver<i64>) {
    build_with_events(store, public_key, tokio::sync::broadcast::channel(256).0, tokio::sync::broadcast::channel(256).0, Default::default())
}

/// [`build`] with an event channel that outlives this inbox (the app keeps one across
/// pauses and restarts).
pub fn build_with_events(
    store: Arc<Store>,
    public_key: &str,
    events: tokio::sync::broadcast::Sender<super::gate::state::ArrivalEvent>,
    progress: tokio::sync::broadcast::Sender<super::gate::runner::ExecProgress>,
    runs_here: super::gate::executor::here::RunsHere,
) -> (Arc<Gate>, mpsc::UnboundedReceiver<i64>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(gate(store, public_key).with_executions(tx).with_events(events).with_progress(progress).with_runs_here(runs_here)), rx)
}

/// The executors beyond the gate's own (a swarm, a peer), and what follows a successful
/// executor (a reply to the sender): the doors that provide them are composed here.
fn runner_hooks(
    store: &Arc<Store>,
    mail: Vec<super::email::Follow>,
    key: Option<ed25519_dalek::SigningKey>,
    runs_here: super::gate::executor::here::RunsHere,
) -> runner::Hooks {
    let delegates = Delegates::default()
        .with(super::mail::executor::KIND, Arc::new(super::mail::executor::SwarmExecutor { store: store.clone() }))
        .with(super::uamp::executor::KIND, Arc::new(super::uamp::executor::PeerExecutor { store: store.clone(), key: key.clone() }))
        .with(super::a2a::executor::KIND, Arc::new(super::a2a::executor::AgentExecutor { store: store.clone() }));
    // Each door describes its own work to the executor it runs on.
    let describe: runner::Describe = Arc::new(|spec, row, name| match row.transport.as_str() {
        super::a2a::DOOR => super::a2a::work::describe(spec, row, name),
        _ => super::epp::work::describe(spec, row, name),
    });
    runner::Hooks { delegates, runs_here, describe, on_success: Some(super::epp::reply::after_success(mail, key)) }
}

/// Runs the transports, the executor runner and nonce GC until `shutdown` resolves.
pub async fn run<F>(
    store: Arc<Store>,
    public_key: String,
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_processed: F,
) -> Result<(), String>
where
    F: Fn(&Processed) + Send + Sync + 'static,
{
    let (inbox, rx) = build(store, &public_key);
    run_with(inbox, rx, opts, shutdown, on_processed).await
}

/// [`run`] for an inbox the caller built (and keeps, to submit consented envelopes).
pub async fn run_with<F>(
    inbox: Arc<Gate>,
    rx: mpsc::UnboundedReceiver<i64>,
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_processed: F,
) -> Result<(), String>
where
    F: Fn(&Processed) + Send + Sync + 'static,
{
    let store = inbox.store().clone();
    let requeue = {
        let s = store.clone();
        tokio::task::spawn_blocking(move || runner::recover(&s)).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?
    };
    for id in requeue {
        inbox.execute(id);
    }
    let key = opts.key.clone().or_else(|| opts.uamp.as_ref().map(|u| u.key.clone()));
    let notify_task = tokio::spawn(crate::notify::run(inbox.clone(), opts.email.clone()));
    let tell_task = tokio::spawn(crate::waiting::tell(inbox.clone()));
    let runner_task =
        tokio::spawn(runner::run(store.clone(), rx, inbox.progress_sender(), runner_hooks(&store, opts.email.clone(), key.clone(), inbox.runs_here().clone())));
    let gc_store = store.clone();
    let gc_gate = inbox.clone();
    let signer = key.clone();
    let witness_dir = opts.data_dir.clone();
    let gc_task = tokio::spawn(async move {
        let mut every = tokio::time::interval(GC_EVERY);
        loop {
            every.tick().await;
            let s = gc_store.clone();
            let now = chrono::Utc::now().timestamp_millis();
            let (signer, witness_dir, gate) = (signer.clone(), witness_dir.clone(), gc_gate.clone());
            let collected = tokio::task::spawn_blocking(move || {
                let pruned = s.prune(now, &s.retention());
                // What changed since the last checkpoint is signed now, pruning included,
                // if the log extends what was signed before (a rewound log is reported).
                let signed = match (signer, witness_dir) {
                    (Some(k), Some(dir)) => Some(crate::audit::checkpoint_here_in(&s, &k, &dir)),
                    (Some(k), None) => Some(crate::audit::checkpoint(&s, &k, None)),
                    _ => None,
                };
                match signed {
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "signing a checkpoint of the audit log failed");
                        // A log that does not extend what was signed is told on /ready.
                        if e.code == crate::Code::Changed {
                            gate.set_problem("audit", Some(e.message));
                        }
                    }
                    Some(Ok(_)) => gate.set_problem("audit", None),
                    None => {}
                }
                (s.gc_nonces(now), s.gc_usage(now), pruned)
            })
            .await;
            if let Ok((nonces, usage, pruned)) = collected {
                match pruned {
                    Ok(p) if p.bodies_cleared + p.audit_removed > 0 => {
                        tracing::info!(bodies = p.bodies_cleared, audit = p.audit_removed, "old refused bodies and audit entries dropped (retention)")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "applying the retention setting failed"),
                }
                match nonces {
                    Ok(n) if n > 0 => tracing::info!(removed = n, "expired nonces collected"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "collecting expired nonces failed"),
                }
                if let Err(e) = usage {
                    tracing::warn!(error = %e, "forgetting old per-minute usage failed");
                }
            }
        }
    });

    let state_task = tokio::spawn(watch_state(store.clone(), inbox.clone()));

    let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut tasks: tokio::task::JoinSet<Result<(), String>> = tokio::task::JoinSet::new();
    // One A2A door for both listeners it may be served on (its open streams are counted
    // once); its card is signed with the identity key.
    let a2a = key.clone().map(|k| super::a2a::A2aDoor::new(inbox.clone(), k));
    if let Some(listener) = opts.listener {
        let mut stop = stop_tx.subscribe();
        let guardian = super::guardian::Guardian::new(&inbox, super::guardian::DEFAULT_TIMEOUT);
        inbox.register_door(&guardian);
        // An MCP server's call: its server judged at the gate, the call by the guardian's
        // rules (the two doors meet here, never in each other).
        let mcp = super::mcp::at_gate::McpDoor::new(&inbox, crate::mcp::GuardianJudge::new(&guardian));
        // Servers the user added by address, served to their app: the addresses from the
        // sealed settings, the credentials from the keychain.
        let remotes = Arc::new(crate::mcp::remote::Kept { store: store.clone(), data_dir: opts.data_dir.clone() });
        let app = super::epp::http::router(inbox.clone())
            .merge(super::guardian::router(guardian))
            .merge(super::mcp::served::router(super::mcp::served::Served::new(mcp.clone(), remotes)))
            .merge(super::mcp::http::router(mcp))
            .merge(super::uamp::http::plain_router())
            .merge(crate::approve_http::router(inbox.clone()));
        // A2A without TLS only where no other machine can connect, and only while the
        // user allows it (checked per request, so the setting applies without a restart).
        let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
        let app = match &a2a {
            Some(door) if loopback => app.merge(super::a2a::http::router(door.clone(), super::a2a::Listener::PlainLoopback)),
            _ => app,
        };
        tracing::info!(addr = %listener.local_addr().map(|a| a.to_string()).unwrap_or_default(), "inbox listening");
        let names = opts.public_names.clone();
        let limits = opts.limits;
        tasks.spawn(async move {
            gatehouse_net::plain::serve(listener, app, &names, crate::approve_http::PAGES, limits, async move {
                let _ = stop.recv().await;
            })
            .await
            .map_err(|e| format!("HTTP server failed: {e}"))
        });
    }
    if let Some(u) = opts.uamp {
        let cert = match u.certificate {
            Some(c) => c,
            None => super::uamp::tls::load_or_create(&u.data_dir, &u.key).map_err(|e| e.to_string())?,
        };
        let tls = super::uamp::tls::config(&cert.der, &u.key).map_err(|e| e.to_string())?;
        let uamp = super::uamp::UampDoor::new(inbox.clone(), u.key);
        if let Ok(addr) = u.listener.local_addr() {
            let _ = uamp.tls_addr.set(addr);
        }
        {
            let uamp = uamp.clone();
            tokio::task::spawn_blocking(move || uamp.recover()).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        }
        tracing::info!(addr = %uamp.tls_addr.get().map(|a| a.to_string()).unwrap_or_default(), fingerprint = %cert.fingerprint, did = %uamp.did(), "UAMP listening (TLS 1.3)");
        // A2A shares the TLS listener: the same certificate, Host checks and bounds; the
        // client certificate's key reaches it in no protocol's terms. Its door is there
        // whenever UAMP is (the identity key falls back to UAMP's).
        let app = super::uamp::http::router(uamp.clone());
        let app = match &a2a {
            Some(door) => app.merge(super::a2a::http::router(door.clone(), super::a2a::Listener::Tls)),
            None => app,
        };
        if let Some(tx) = u.started {
            let _ = tx.send(uamp);
        }
        let mut stop = stop_tx.subscribe();
        let names = opts.public_names.clone();
        let limits = opts.limits;
        tasks.spawn(async move {
            super::uamp::tls::serve(u.listener, tls, app, &names, limits, async move {
                let _ = stop.recv().await;
            })
            .await
            .map_err(|e| format!("UAMP server failed: {e}"))
        });
    }
    for f in opts.email {
        // One node of a team's gate reads and answers an account at a time (on a laptop
        // the one process always holds the lease).
        let mut stop = stop_tx.subscribe();
        let (inbox, store) = (inbox.clone(), store.clone());
        tasks.spawn(async move {
            let lease = format!("email:{}", f.name);
            let work = || {
                let (inbox, store, f) = (inbox.clone(), store.clone(), f.clone());
                async move {
                    let never = std::future::pending::<()>;
                    tokio::join!(super::email::deliver(store.clone(), f.clone(), never()), super::email::follow(inbox, store, f, never()));
                }
            };
            super::lease::while_held(store.clone(), lease, work, async move {
                let _ = stop.recv().await;
            })
            .await;
            Ok(())
        });
    }
    // Kept for as long as the doors run: the folder finds the other files it takes here.
    let others = Arc::new(folder::Others(vec![Arc::new(super::mail::TaskLogs)]));
    inbox.register_door(&others);
    if let Some(dir) = opts.watch {
        let mut stop = stop_tx.subscribe();
        let inbox = inbox.clone();
        tasks.spawn(async move {
            let stopped = async move {
                let _ = stop.recv().await;
            };
            folder::watch(dir, inbox, stopped, on_processed).await.map_err(|e| e.to_string())
        });
    }
    // Whichever comes first: the caller's shutdown, or a transport ending on its own.
    let mut first_error = None;
    tokio::pin!(shutdown);
    tokio::select! {
        _ = &mut shutdown => {}
        Some(r) = tasks.join_next() => {
            first_error = Some(match r {
                Ok(Ok(())) => "a transport stopped unexpectedly".to_string(),
                Ok(Err(e)) => e,
                Err(e) => e.to_string(),
            });
        }
    }
    let _ = stop_tx.send(());
    while let Some(r) = tasks.join_next().await {
        if let Ok(Err(e)) = r {
            first_error.get_or_insert(e);
        }
    }
    gc_task.abort();
    state_task.abort();
    runner_task.abort();
    notify_task.abort();
    tell_task.abort();
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Checks the gate's deciding state at start and every [`STATE_EVERY`]: rows changed
/// outside Gatehouse are shown on `/ready` (`problems.state`) and written once to the
/// audit log, so the window's Activity and `audit verify` name them too.
async fn watch_state(store: Arc<Store>, gate: Arc<Gate>) {
    let mut every = tokio::time::interval(STATE_EVERY);
    let mut told: Option<String> = None;
    loop {
        every.tick().await;
        let s = store.clone();
        let Ok(Ok(report)) = tokio::task::spawn_blocking(move || s.state_check()).await else { continue };
        if report.intact() {
            gate.set_problem("state", None);
            told = None;
            continue;
        }
        let summary = report.summary();
        gate.set_problem("state", Some(summary.clone()));
        if told.as_ref() != Some(&summary) {
            tracing::warn!(problem = %summary, "the gate's state was changed outside Gatehouse");
            let s = store.clone();
            let detail = serde_json::json!({ "broken": report.broken, "changes": report.changes });
            let _ = tokio::task::spawn_blocking(move || s.audit("state.changed_outside", None, &detail, &crate::now())).await;
            told = Some(summary);
        }
    }
}
