//! The Gatehouse desktop shell: thin by design. The inbox, the store and every protocol
//! rule live in the library crates; this file wires them to a window, a tray and events.

mod a2a;
mod approvers;
mod commands;
mod contacts;
mod email;
mod events;
mod grants;
mod guardian;
mod intent;
mod mail;
mod mcp;
mod notify;
mod shell;
mod team;
mod tray;
mod uamp;

use std::path::PathBuf;
use std::sync::Arc;

use tauri::{Manager, Runtime};
use tauri_specta::Event as _;

pub use commands::CommandError;
pub use shell::{DesktopSettings, Shell};

fn data_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("gatehouse"))
}

fn keystore() -> gatehouse_app::context::KeystoreKind {
    match std::env::var("GATEHOUSE_KEYSTORE").as_deref() {
        Ok("file") => gatehouse_app::context::KeystoreKind::File,
        _ => gatehouse_app::context::KeystoreKind::Os,
    }
}

/// How often the tray's count is taken again while events keep coming: a burst of
/// thousands of arrivals a second costs four counts, not one per arrival.
const TRAY_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Forwards inbox events to the window, the tray and (for consent) a notification.
fn forward_events<R: Runtime>(app: tauri::AppHandle<R>, shell: Arc<Shell>) {
    let mut rx = shell.events.events.subscribe();
    // Set while a count of the tray is due: events meanwhile do not ask for another.
    let due = Arc::new(std::sync::atomic::AtomicBool::new(false));
    tauri::async_runtime::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    let _ = events::InboxReceived(ev.clone()).emit(&app);
                    if ev.needs_consent {
                        let _ = events::ConsentRequested(ev.clone()).emit(&app);
                        notify::prompt(&app, &shell, &ev);
                    }
                    if !due.swap(true, std::sync::atomic::Ordering::AcqRel) {
                        let (app, due) = (app.clone(), due.clone());
                        // No timer runs while nothing arrives: one is made per burst.
                        tauri::async_runtime::spawn(async move {
                            tokio::time::sleep(TRAY_EVERY).await;
                            due.store(false, std::sync::atomic::Ordering::Release);
                            tray::refresh(&app);
                        });
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
    });
}

/// Follows what waits: each change (a decision made anywhere, an arrival) redraws the
/// window's list and withdraws the notifications of what no longer waits.
fn forward_waiting<R: Runtime>(app: tauri::AppHandle<R>, shell: Arc<Shell>) {
    let mut changes = gatehouse_app::consent::follow(&shell);
    tauri::async_runtime::spawn(async move {
        while changes.next().await {
            let _ = events::WaitingChanged.emit(&app);
            let shell = shell.clone();
            let _ = tauri::async_runtime::spawn_blocking(move || notify::withdraw_decided(&shell)).await;
        }
    });
}

/// Passes executors' progress to the window (a model's answer as it is written).
fn forward_progress<R: Runtime>(app: tauri::AppHandle<R>, shell: Arc<Shell>) {
    let mut rx = shell.events.progress.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(p) => {
                    let _ = events::ExecutorProgress(p).emit(&app);
                }
                // Each partial carries the whole answer so far, so a skipped one loses nothing.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
    });
}

/// The window's commands (from `command_list.rs`) with their types, for the invoke
/// handler and for the generated TypeScript bindings.
pub fn bindings<R: Runtime>() -> tauri_specta::Builder<R> {
    macro_rules! app_commands {
        ($($cmd:tt)*) => { tauri_specta::collect_commands![$($cmd)*] };
    }
    tauri_specta::Builder::<R>::new()
        .commands(include!("command_list.rs"))
        .events(tauri_specta::collect_events![
            events::InboxReceived,
            events::ConsentRequested,
            events::StatusChanged,
            events::ExecutorProgress,
            events::MailLive,
            events::UampProgress,
            events::OpenPrompt,
            events::TeamChanged,
            events::WaitingChanged
        ])
        // Kept by the store as checked JSON; the window reads them in these shapes.
        .typ::<gatehouse_intentweb::manifest::Manifest>()
        .typ::<gatehouse_intentweb::attribution::Verdict>()
        // A swarm survey is free-form JSON but for `server`, which the window reads.
        .typ::<gatehouse_mail::client::ServerInfo>()
        .error_handling(tauri_specta::ErrorHandlingMode::Throw)
}

/// Where the generated bindings live, and how they are written: numbers the window gets
/// are row ids and counts, far below 2^53, so 64-bit integers are plain numbers.
pub const BINDINGS_FILE: &str = "ui/src/bindings.ts";

pub fn export_bindings(path: &std::path::Path) -> Result<(), String> {
    let ts = specta_typescript::Typescript::default().header("// Generated from the Rust commands and types by `cargo test --test bindings`; do not edit.\n");
    bindings::<tauri::Wry>().dangerously_cast_bigints_to_number().export(ts, path).map_err(|e| e.to_string())?;
    // A type that reads differently than it is written (serde defaults) is exported in
    // both shapes, and its plain name is their union, where every defaulted field looks
    // optional. The window reads what Rust sends, so the plain name is the sent shape;
    // commands still take the `_Deserialize` shape as their arguments.
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let text: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix("export type ").and_then(|r| r.split_once(" = ")) {
            Some((name, rhs)) if rhs == format!("{name}_Serialize | {name}_Deserialize;") => format!("export type {name} = {name}_Serialize;"),
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(path, text.join("\n") + "\n").map_err(|e| e.to_string())
}

/// Builds the app on any runtime, so tests can pass `tauri::test::mock_builder()`.
pub fn run_app<R: Runtime>(builder: tauri::Builder<R>) -> tauri::App<R> {
    let specta = bindings::<R>();
    let handler = specta.invoke_handler();
    builder
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| tray::show_window(app)))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_opener::init())
        .setup(move |app| {
            specta.mount_events(app);
            let shell = Arc::new(Shell::open(data_dir(), keystore()).map_err(|e| format!("Gatehouse cannot start: {e}"))?);
            app.manage(shell.clone());
            app.manage(grants::Grants::default());
            app.manage(team::Followers::default());
            tauri::async_runtime::block_on(shell.start());
            forward_progress(app.handle().clone(), shell.clone());
            notify::digests(app.handle().clone(), shell.clone());
            team::follow_all(app.handle(), shell.clone());
            forward_waiting(app.handle().clone(), shell.clone());
            forward_events(app.handle().clone(), shell);
            if let Err(e) = tray::create(app.handle()) {
                tracing::warn!(error = %e, "no tray icon; closing the window will quit");
            }
            tray::refresh(app.handle());
            Ok(())
        })
        .on_window_event(|window, event| {
            // Dropped files reach Rust from the OS; only those may be imported by path.
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                grants::grant_dropped(window.app_handle(), paths);
            }
            // Closing the window keeps the inbox running in the tray.
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                if window.app_handle().tray_by_id("gatehouse").is_some() {
                    api.prevent_close();
                    let _ = window.hide();
                }
            }
        })
        // Every command the window calls, named at debug level (RUST_LOG=gatehouse::window=debug):
        // what the window asked for, and how often, is then visible without a debugger.
        .invoke_handler(move |invoke| {
            tracing::debug!(target: "gatehouse::window", command = invoke.message.command(), "window command");
            handler(invoke)
        })
        .build(tauri::generate_context!())
        .expect("error while building the Gatehouse app")
}

pub fn run() {
    tracing_init();
    // The window draws with the CPU, not through WebKit's GPU compositor: for a page of
    // lists and forms the compositor costs ~75 MB (Mesa and its threads, llvmpipe where
    // there is no GPU) and buys nothing (docs/performance.md). Set before any thread
    // starts and before WebKit reads it; a user's own setting (=0) is kept.
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
    run_app(tauri::Builder::default()).run(|_, _| {});
}

fn tracing_init() {
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into())).finish(),
    );
}
