//! Desktop notifications of what waits for the user. In quiet hours nothing is announced:
//! prompts are counted and one digest follows when they end (`gatehouse_app::quiet`
//! decides). A click on a prompt's notification opens the window on that prompt.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

/// Notifications on screen for an item that waits, by the item's key ([`key_of`]): a
/// decision made anywhere (this window, the CLI, a phone) withdraws them.
#[cfg(target_os = "linux")]
const MAX_KEPT: usize = 64;
#[cfg(target_os = "linux")]
static SHOWN: Mutex<Vec<(String, Arc<notify_rust::NotificationHandle>)>> = Mutex::new(Vec::new());

/// Which waiting item an event announces: a step by its row, anything else by its sender.
fn key_of(ev: &ArrivalEvent) -> Option<String> {
    match ev.transport.as_str() {
        "asop" => Some(ev.receipt_id.clone()),
        _ => ev.sender.as_ref().map(|s| s.to_ascii_lowercase()),
    }
}

/// The keys of what waits now, as [`key_of`] names them.
fn waiting_keys(items: &[gatehouse_app::consent::ConsentItem]) -> HashSet<String> {
    use gatehouse_app::consent::ConsentItem as I;
    items
        .iter()
        .map(|i| match i {
            I::UnknownSender { public_key, .. } => public_key.to_ascii_lowercase(),
            I::Held { sender, .. } | I::HeldAsk { sender, .. } | I::KeyChange { sender, .. } => sender.to_ascii_lowercase(),
            I::GuardianStep { step, .. } => format!("asop-step:{}", step.row),
            I::ToolChange { server, .. } => server.to_ascii_lowercase(),
        })
        .collect()
}

/// Withdraws the notifications of items no longer waiting (decided anywhere, or
/// withdrawn). Blocking; cheap when nothing is shown.
pub fn withdraw_decided(shell: &Arc<Shell>) {
    #[cfg(target_os = "linux")]
    {
        if SHOWN.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            return;
        }
        let Ok(items) = gatehouse_app::consent::pending(shell) else { return };
        let waiting = waiting_keys(&items);
        let gone: Vec<Arc<notify_rust::NotificationHandle>> = {
            let mut shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
            let (keep, gone): (Vec<_>, Vec<_>) = shown.drain(..).partition(|(k, _)| waiting.contains(k));
            *shown = keep;
            gone.into_iter().map(|(_, h)| h).collect()
        };
        for h in gone {
            tauri::async_runtime::block_on(h.close_async());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = shell;
}

/// A prompt arrived: announced, unless quiet hours collect it.
pub fn prompt<R: Runtime>(app: &AppHandle<R>, shell: &Arc<Shell>, ev: &ArrivalEvent) {
    let (app, shell, ev, key) = (app.clone(), shell.clone(), ev.clone(), key_of(ev));
    let open = OpenPrompt { sender: ev.sender.clone() };
    tauri::async_runtime::spawn_blocking(move || {
        let known = ev.sender.as_deref().and_then(|k| gatehouse_app::names::known_as(&shell, k).ok().flatten());
        let who = ev.sender.as_deref().map(|k| gatehouse_app::names::shown(known.as_deref(), k));
        let body = gatehouse_app::notify::desktop_words(&ev, who.as_deref(), known.is_some());
        match gatehouse_app::quiet::on_prompt(&shell, gatehouse_app::clock::now()) {
            Ok(false) => digest_when_quiet_ends(app, shell),
            // Better announced in quiet hours than not at all.
            Ok(true) | Err(_) => show(&app, &body, open, key),
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
                    tauri::async_runtime::spawn_blocking(move || show(&app, &body, OpenPrompt { sender: None }, None));
                }
                break;
            }
        }
    });
}

/// Shows a notification (kept under `key` until its item is decided); clicked, the window
/// opens on the prompt. Blocking.
fn show<R: Runtime>(app: &AppHandle<R>, body: &str, open: OpenPrompt, key: Option<String>) {
    #[cfg(target_os = "linux")]
    {
        let clickable = CLICKABLE.fetch_add(1, Ordering::SeqCst) < MAX_CLICKABLE;
        let mut n = notify_rust::Notification::new();
        n.summary("Gatehouse").body(body).appname("Gatehouse").timeout(notify_rust::Timeout::Milliseconds(SHOWN_MS));
        if clickable {
            n.action("default", "Open");
        }
        match n.show() {
            Ok(handle) => {
                let handle = Arc::new(handle);
                if let Some(k) = key {
                    let mut shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
                    // Bounded: the oldest is no longer withdrawn (it times out on its own).
                    if shown.len() >= MAX_KEPT {
                        shown.remove(0);
                    }
                    shown.push((k, handle.clone()));
                }
                if clickable {
                    tauri::async_runtime::block_on(handle.wait_for_action_async(|r| {
                        let opened = matches!(r, notify_rust::NotificationResponse::Default)
                            || matches!(r, notify_rust::NotificationResponse::Action(a) if a == "default");
                        if opened {
                            crate::tray::show_window(app);
                            let _ = open.emit(app);
                        }
                    }));
                    SHOWN.lock().unwrap_or_else(|p| p.into_inner()).retain(|(_, h)| !Arc::ptr_eq(h, &handle));
                }
            }
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
