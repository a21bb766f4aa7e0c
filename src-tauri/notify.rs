//! Desktop notifications of what waits for the user. In quiet hours nothing is announced:
//! prompts are counted and one digest follows when they end (`gatehouse_app::quiet`
//! decides). A click on a prompt's notification opens the window on that prompt.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_app::serve::ArrivalEvent;
use tauri::{AppHandle, Runtime};
use tauri_specta::Event;

use crate::events::OpenPrompt;
use crate::shell::Shell;

/// Notifications whose click is waited for at once (each holds a blocking thread until it
/// is clicked or closed); past this, notifications still show but a click only dismisses.
const MAX_CLICKABLE: usize = 8;
static CLICKABLE: AtomicUsize = AtomicUsize::new(0);

/// How long a notification stays up (daemons may keep it shorter).
const SHOWN_MS: u32 = 60_000;

/// How often, while prompts are collected, the end of quiet hours is looked for (no timer
/// runs while nothing is collected). Polled rather than slept until the end: the clock
/// can change under a sleep (suspend, a time zone, a test's clock).
const DIGEST_EVERY: Duration = Duration::from_secs(5);
static WATCHING: AtomicBool = AtomicBool::new(false);

/// What the notification says. Notification servers read a little HTML in a body, so what
/// a sender chose (an agent's name) goes in escaped.
fn words(ev: &ArrivalEvent) -> String {
    let about = ev.scope.as_deref().map(|s| format!(" about “{s}”")).unwrap_or_default();
    let text = match (&ev.code, ev.transport.as_str()) {
        _ if ev.key_change => format!(
            "{} signed with a key you did not trust it with: its keys may have changed. Click to check them.",
            ev.sender.as_deref().unwrap_or("A trusted agent")
        ),
        (_, "asop") => format!("{} is waiting for your decision before it acts. Click to answer.", ev.sender.as_deref().unwrap_or("An agent")),
        (Some(_), _) => format!("An unknown sender wants to reach your AI{about}. Click to decide."),
        (None, _) => format!("A message{about} is waiting for your consent. Click to decide."),
    };
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A prompt arrived: announced, unless quiet hours collect it.
pub fn prompt<R: Runtime>(app: &AppHandle<R>, shell: &Arc<Shell>, ev: &ArrivalEvent) {
    let (app, shell, body) = (app.clone(), shell.clone(), words(ev));
    let open = OpenPrompt { sender: ev.sender.clone() };
    tauri::async_runtime::spawn_blocking(move || {
        match gatehouse_app::quiet::on_prompt(&shell, gatehouse_app::clock::now()) {
            Ok(false) => digest_when_quiet_ends(app, shell),
            // Better announced in quiet hours than not at all.
            Ok(true) | Err(_) => show(&app, &body, open),
        }
    });
}

/// At start: prompts collected before a restart still get their digest.
pub fn digests<R: Runtime>(app: AppHandle<R>, shell: Arc<Shell>) {
    if gatehouse_app::quiet::digest(&shell).is_ok_and(|d| d.count > 0) {
        digest_when_quiet_ends(app, shell);
    }
}

/// Gives the digest once quiet hours are over (one watcher at a time).
fn digest_when_quiet_ends<R: Runtime>(app: AppHandle<R>, shell: Arc<Shell>) {
    if WATCHING.swap(true, Ordering::SeqCst) {
        return;
    }
    tauri::async_runtime::spawn(async move {
        loop {
            tokio::time::sleep(DIGEST_EVERY).await;
            let (app, shell) = (app.clone(), shell.clone());
            // Some(digest to give, if any): the watch is over; None: keep watching.
            let over = tauri::async_runtime::spawn_blocking(move || match gatehouse_app::quiet::due_digest(&shell, gatehouse_app::clock::now()) {
                Ok(Some(body)) => Some(Some(body)),
                Ok(None) if gatehouse_app::quiet::digest(&shell).is_ok_and(|d| d.count > 0) => None,
                _ => Some(None),
            })
            .await
            .unwrap_or(Some(None));
            if let Some(body) = over {
                // Not watching before the click is waited for: a prompt collected meanwhile
                // starts a watcher of its own.
                WATCHING.store(false, Ordering::SeqCst);
                if let Some(body) = body {
                    tauri::async_runtime::spawn_blocking(move || show(&app, &body, OpenPrompt { sender: None }));
                }
                break;
            }
        }
    });
}

/// Shows a notification; clicked, the window opens on the prompt. Blocking.
fn show<R: Runtime>(app: &AppHandle<R>, body: &str, open: OpenPrompt) {
    #[cfg(target_os = "linux")]
    {
        let clickable = CLICKABLE.fetch_add(1, Ordering::SeqCst) < MAX_CLICKABLE;
        let mut n = notify_rust::Notification::new();
        n.summary("Gatehouse").body(body).appname("Gatehouse").timeout(notify_rust::Timeout::Milliseconds(SHOWN_MS));
        if clickable {
            n.action("default", "Open");
        }
        match n.show() {
            Ok(handle) if clickable => handle.wait_for_action(|action| {
                if action == "default" {
                    crate::tray::show_window(app);
                    let _ = open.emit(app);
                }
            }),
            Ok(_) => {}
            // No notification daemon (a headless session) is not an error worth more than
            // a log line: the prompt is in the window either way.
            Err(e) => tracing::debug!(error = %e, "no desktop notification"),
        }
        CLICKABLE.fetch_sub(1, Ordering::SeqCst);
    }
    #[cfg(not(target_os = "linux"))]
    {
        use tauri_plugin_notification::NotificationExt;
        let _ = open;
        if let Err(e) = app.notification().builder().title("Gatehouse").body(body).show() {
            tracing::debug!(error = %e, "no desktop notification");
        }
    }
}
