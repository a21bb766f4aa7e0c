//! The Gatehouse desktop shell: thin by design. The inbox, the store and every protocol
//! rule live in the core crates; this file wires them to a window, a tray and events.

mod commands;
mod grants;
mod guardian;
mod intent;
mod mail;
mod service;
mod tray;
mod uamp;

use std::path::PathBuf;
use std::sync::Arc;

use tauri::{Emitter, Manager, Runtime};
use tauri_plugin_notification::NotificationExt;

pub use commands::{fingerprint, order_by_replies, CommandError};
pub use grants::new_programs_and_folders;
pub use service::{Core, DesktopSettings};

fn data_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("gatehouse"))
}

fn keystore() -> gatehouse_keys::KeystoreKind {
    match std::env::var("GATEHOUSE_KEYSTORE").as_deref() {
        Ok("file") => gatehouse_keys::KeystoreKind::File,
        _ => gatehouse_keys::KeystoreKind::Os,
    }
}

/// Forwards inbox events to the window, the tray and (for consent) a notification.
fn forward_events<R: Runtime>(app: tauri::AppHandle<R>, core: Arc<Core>) {
    let mut rx = core.events.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    let _ = app.emit("inbox://received", &ev);
                    if ev.needs_consent {
                        let _ = app.emit("consent://requested", &ev);
                        let body = match (&ev.code, ev.transport.as_str()) {
                            (_, "asop") => {
                                format!("{} is waiting for your decision before it acts. Open Gatehouse to answer.", ev.sender.as_deref().unwrap_or("An agent"))
                            }
                            (Some(_), _) => "An unknown sender wants to reach your AI. Open Gatehouse to decide.".to_string(),
                            (None, _) => "A message is waiting for your consent. Open Gatehouse to decide.".to_string(),
                        };
                        // No notification daemon (a headless session) is not an error worth
                        // more than a log line: the prompt is in the window either way.
                        if let Err(e) = app.notification().builder().title("Gatehouse").body(&body).show() {
                            tracing::debug!(error = %e, "no desktop notification");
                        }
                    }
                    tray::refresh(&app);
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
    });
}

/// Passes executors' progress to the window (a model's answer as it is written).
fn forward_progress<R: Runtime>(app: tauri::AppHandle<R>, core: Arc<Core>) {
    let mut rx = core.progress.subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(p) => {
                    let _ = app.emit("executor://progress", &p);
                }
                // Each partial carries the whole answer so far, so a skipped one loses nothing.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
    });
}

/// Builds the app on any runtime, so tests can pass `tauri::test::mock_builder()`.
pub fn run_app<R: Runtime>(builder: tauri::Builder<R>) -> tauri::App<R> {
    builder
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| tray::show_window(app)))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_opener::init())
        .setup(|app| {
            let core = Arc::new(Core::open(data_dir(), keystore()).map_err(|e| format!("Gatehouse cannot start: {e}"))?);
            app.manage(core.clone());
            app.manage(grants::Grants::default());
            tauri::async_runtime::block_on(core.start());
            forward_progress(app.handle().clone(), core.clone());
            forward_events(app.handle().clone(), core);
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
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::inbox_list,
            commands::inbox_detail,
            commands::conversation,
            commands::trust_list,
            commands::trust_add,
            commands::trust_update,
            commands::trust_remove,
            commands::trust_block,
            commands::trust_unblock,
            commands::blocked_list,
            commands::consent_list,
            commands::consent_decide,
            commands::audit_list,
            commands::settings_set,
            commands::retention_get,
            commands::retention_set,
            commands::inbox_pause,
            commands::executors_get,
            commands::executors_set,
            commands::identity_qr,
            commands::export_json,
            grants::pick_path,
            uamp::uamp_info,
            uamp::uamp_token_issue,
            uamp::uamp_token_revoke,
            uamp::uamp_discover,
            uamp::uamp_peer_add,
            uamp::uamp_peers,
            uamp::uamp_peer_remove,
            uamp::uamp_ask,
            uamp::uamp_cancel,
            uamp::uamp_streams,
            uamp::uamp_stream_detail,
            mail::mail_swarms,
            mail::mail_swarm_add,
            mail::mail_swarm_refresh,
            mail::mail_swarm_remove,
            mail::mail_send,
            mail::mail_interswarm,
            mail::mail_tasks,
            mail::mail_task,
            mail::mail_import,
            intent::iw_sites,
            intent::iw_site_add,
            intent::iw_site_remove,
            intent::iw_start,
            intent::iw_reply,
            intent::iw_pin,
            intent::iw_conversations,
            intent::iw_conversation,
            intent::iw_open_link,
            guardian::asop_pending,
            guardian::asop_answer,
            guardian::asop_rules,
            guardian::asop_rule_add,
            guardian::asop_rule_remove,
            guardian::asop_sessions,
            guardian::asop_session,
            commands::replies_for,
            commands::reply_send,
            commands::executor_retry,
        ])
        .build(tauri::generate_context!())
        .expect("error while building the Gatehouse app")
}

pub fn run() {
    tracing_init();
    run_app(tauri::Builder::default()).run(|_, _| {});
}

fn tracing_init() {
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into())).finish(),
    );
}
