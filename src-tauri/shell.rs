//! The desktop shell's state: the app's one context, and the gate's doors running inside
//! the app (started at launch, paused and resumed from the tray, restarted when the user
//! changes a port or the folder). All protocol work is in the library crates; this only
//! wires them to the app's lifetime and events.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gatehouse_app::context::KeystoreKind;
use gatehouse_app::serve::{Events, Gate};
use gatehouse_app::Context;
use serde::Serialize;
use tokio::sync::oneshot;

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
    pub gate: Arc<Gate>,
    stop: Option<oneshot::Sender<()>>,
}

/// The app's one context (the data dir opened) and the doors' life with the window: the
/// events are kept across pauses and restarts, so the window listens once.
pub struct Shell {
    pub ctx: Context,
    pub events: Events,
    pub running: Mutex<Option<Running>>,
    pub status: Mutex<InboxStatus>,
}

impl std::ops::Deref for Shell {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.ctx
    }
}

impl Shell {
    /// First run creates the identity (OS keychain) and the store in the data dir.
    pub fn open(data_dir: PathBuf, keystore: KeystoreKind) -> Result<Shell, String> {
        let ctx = Context::open(data_dir, keystore, true).map_err(|e| e.message)?;
        Ok(Shell { ctx, events: Events::default(), running: Mutex::new(None), status: Mutex::new(InboxStatus::default()) })
    }

    pub fn status(&self) -> InboxStatus {
        self.status.lock().unwrap().clone()
    }

    /// The inbox for consent decisions: the running one, or a detached one while paused
    /// (decisions still apply; released envelopes run when the inbox resumes).
    pub fn gate(&self) -> Arc<Gate> {
        match &*self.running.lock().unwrap() {
            Some(r) => r.gate.clone(),
            None => gatehouse_app::serve::detached(&self.ctx, &self.events),
        }
    }

    /// Starts the transports. Port or folder problems are reported in the status, not
    /// fatal: the app stays usable to fix them.
    pub async fn start(self: &Arc<Self>) {
        self.stop().await;
        let settings = DesktopSettings::load(&self.ctx);
        let doors = gatehouse_app::serve::Doors {
            epp: format!("127.0.0.1:{}", settings.port),
            uamp: Some(format!("127.0.0.1:{}", settings.uamp_port)),
            watch: Some(settings.watch_dir.clone()),
            public_names: Vec::new(),
        };
        let bound = match gatehouse_app::serve::bind(&self.ctx, doors).await {
            Ok(b) => b,
            Err(e) => {
                *self.status.lock().unwrap() =
                    InboxStatus { error: Some(format!("{}. Choose another port in Settings.", e.message)), ..InboxStatus::default() };
                return;
            }
        };
        // UAMP is a second door: if its port is taken, EPP still runs and the status says why.
        // A mail account whose password cannot be read shows that error in its own state.
        let (uamp_listening, uamp_error) = match &bound.uamp {
            Ok(u) => (u.as_ref().map(|u| format!("https://{}", u.at)), None),
            Err(e) => (None, Some(format!("{}. Choose another UAMP port in Settings.", e.message))),
        };
        let serving = gatehouse_app::serve::open(&self.ctx, bound.options, &self.events);
        let (tx, stop_rx) = oneshot::channel();
        *self.running.lock().unwrap() = Some(Running { gate: serving.gate(), stop: Some(tx) });
        *self.status.lock().unwrap() = InboxStatus {
            running: true,
            paused: false,
            listening: Some(format!("http://{}/epp/v1/submit", bound.epp)),
            watching: Some(settings.watch_dir.display().to_string()),
            error: None,
            uamp_listening,
            uamp_error,
        };
        let me = self.clone();
        tauri::async_runtime::spawn(async move {
            let result = serving
                .run(async {
                    let _ = stop_rx.await;
                })
                .await;
            if let Err(e) = result {
                tracing::error!(error = %e, "inbox stopped");
                let mut st = me.status.lock().unwrap();
                st.running = false;
                st.error = Some(e.message);
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

/// The shell as a command receives it.
pub type ShellState<'a> = tauri::State<'a, std::sync::Arc<Shell>>;
/// What a command answers.
pub(crate) type CommandResult<T> = std::result::Result<T, gatehouse_app::CommandError>;

/// Runs blocking store work off the async runtime's threads.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> CommandResult<T> + Send + 'static) -> CommandResult<T> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| gatehouse_app::CommandError::new(gatehouse_app::Code::Internal, e.to_string()))?
}
