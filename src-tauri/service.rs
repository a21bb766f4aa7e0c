//! The inbox running inside the app: started at launch, paused and resumed from the tray,
//! restarted when the user changes its port or folder. All protocol work is in the core
//! crates; this only wires them to the app's lifetime and events.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gatehouse_inbox::{Inbox, ServeOptions};
use gatehouse_keys::KeystoreKind;
use gatehouse_store::Store;
use serde::Serialize;
use tokio::sync::{broadcast, oneshot};

pub use gatehouse_app::settings::DesktopSettings;

/// What the window shows about the running inbox.
#[derive(Debug, Clone, Default, Serialize, specta::Type)]
pub struct InboxStatus {
    pub running: bool,
    pub paused: bool,
    pub listening: Option<String>,
    pub watching: Option<String>,
    pub error: Option<String>,
    /// Where UAMP peers reach this inbox (https), or why they cannot.
    pub uamp_listening: Option<String>,
    pub uamp_error: Option<String>,
}

pub struct Running {
    pub inbox: Arc<Inbox>,
    stop: Option<oneshot::Sender<()>>,
}

pub struct Core {
    pub data_dir: PathBuf,
    /// The identity key, held for signing UAMP envelopes and as the TLS key; it never
    /// leaves the process (no command returns it, Debug of Core does not exist).
    pub key: ed25519_dalek::SigningKey,
    pub keystore: KeystoreKind,
    pub public_key: String,
    pub store: Arc<Store>,
    pub events: broadcast::Sender<gatehouse_inbox::gate::hub::InboxEvent>,
    /// Executors at work (a model's answer as it streams), kept across pauses like `events`.
    pub progress: broadcast::Sender<gatehouse_inbox::gate::runner::ExecProgress>,
    pub running: Mutex<Option<Running>>,
    pub status: Mutex<InboxStatus>,
}

impl Core {
    /// First run creates the identity (OS keychain) and the store in the data dir.
    pub fn open(data_dir: PathBuf, keystore: KeystoreKind) -> Result<Core, String> {
        let opened = gatehouse_inbox::open(&data_dir, keystore, true).map_err(|e| e.to_string())?;
        Ok(Core {
            key: opened.identity.signing_key().clone(),
            data_dir,
            keystore,
            public_key: opened.identity.public_key.clone(),
            store: opened.store,
            events: broadcast::channel(1024).0,
            progress: broadcast::channel(256).0,
            running: Mutex::new(None),
            status: Mutex::new(InboxStatus::default()),
        })
    }

    pub fn status(&self) -> InboxStatus {
        self.status.lock().unwrap().clone()
    }

    /// The inbox for consent decisions: the running one, or a detached one while paused
    /// (decisions still apply; released envelopes run when the inbox resumes).
    pub fn inbox(&self) -> Arc<Inbox> {
        match &*self.running.lock().unwrap() {
            Some(r) => r.inbox.clone(),
            None => Arc::new(Inbox::new(self.store.clone(), &self.public_key).with_events(self.events.clone())),
        }
    }

    /// Starts the transports. Port or folder problems are reported in the status, not
    /// fatal: the app stays usable to fix them.
    pub async fn start(self: &Arc<Self>) {
        self.stop().await;
        let settings = DesktopSettings::load(&self.store);
        let addr = format!("127.0.0.1:{}", settings.port);
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => {
                *self.status.lock().unwrap() =
                    InboxStatus { error: Some(format!("cannot listen on {addr}: {e}. Choose another port in Settings.")), ..InboxStatus::default() };
                return;
            }
        };
        // UAMP is a second door: if its port is taken, EPP still runs and the status says why.
        let uamp_addr = format!("127.0.0.1:{}", settings.uamp_port);
        let (uamp, uamp_listening, uamp_error) = match tokio::net::TcpListener::bind(&uamp_addr).await {
            Ok(l) => {
                let at = l.local_addr().map(|a| format!("https://{a}")).unwrap_or_default();
                let opts = gatehouse_inbox::UampOptions { listener: l, key: self.key.clone(), data_dir: self.data_dir.clone(), started: None };
                (Some(opts), Some(at), None)
            }
            Err(e) => (None, None, Some(format!("UAMP cannot listen on {uamp_addr}: {e}. Choose another UAMP port in Settings."))),
        };
        // Mail accounts (EPP by email) are followed while the inbox runs; one whose password
        // cannot be read is shown with that error in its state instead.
        let (store, dir) = (self.store.clone(), self.data_dir.clone());
        let email = tokio::task::spawn_blocking(move || gatehouse_app::email::follows(&store, &dir)).await.ok().and_then(Result::ok).unwrap_or_default();
        let (inbox, rx) = gatehouse_inbox::build_with_events(self.store.clone(), &self.public_key, self.events.clone(), self.progress.clone());
        let (tx, stop_rx) = oneshot::channel();
        *self.running.lock().unwrap() = Some(Running { inbox: inbox.clone(), stop: Some(tx) });
        *self.status.lock().unwrap() = InboxStatus {
            running: true,
            paused: false,
            listening: Some(format!("http://{addr}/epp/v1/submit")),
            watching: Some(settings.watch_dir.display().to_string()),
            error: None,
            uamp_listening,
            uamp_error,
        };
        let me = self.clone();
        tauri::async_runtime::spawn(async move {
            let opts = ServeOptions { listener: Some(listener), watch: Some(settings.watch_dir), uamp, email, key: Some(me.key.clone()), ..Default::default() };
            let result = gatehouse_inbox::run_with(
                inbox,
                rx,
                opts,
                async {
                    let _ = stop_rx.await;
                },
                |_| {},
            )
            .await;
            if let Err(e) = result {
                tracing::error!(error = %e, "inbox stopped");
                let mut st = me.status.lock().unwrap();
                st.running = false;
                st.error = Some(e);
            }
        });
    }

    pub async fn stop(&self) {
        let running = self.running.lock().unwrap().take();
        if let Some(mut r) = running {
            if let Some(tx) = r.stop.take() {
                let _ = tx.send(());
            }
            // Give the listener a moment to release its port before a restart binds it.
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        }
        let mut st = self.status.lock().unwrap();
        st.running = false;
        st.listening = None;
        st.watching = None;
        st.uamp_listening = None;
    }

    pub async fn pause(self: &Arc<Self>) {
        self.stop().await;
        self.status.lock().unwrap().paused = true;
    }
}
