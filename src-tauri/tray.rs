//! The tray: the inbox keeps running when the window is closed, and the tray says how
//! many things wait for the user. Desktop notifications cannot carry buttons, so every
//! decision is made in the window; the tray only opens it.

use std::sync::Arc;

use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::shell::Shell;

const TRAY_ID: &str = "gatehouse";

pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let open = MenuItem::with_id(app, "open", "Open Gatehouse", true, None::<&str>)?;
    let pause = MenuItem::with_id(app, "pause", "Pause inbox", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit Gatehouse", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&open, &pause, &quit])?;
    let mut builder = TrayIconBuilder::with_id(TRAY_ID).menu(&menu).tooltip("Gatehouse");
    if let Some(icon) = app.default_window_icon() {
        builder = builder.icon(icon.clone());
    }
    builder
        .on_menu_event(move |app, event| match event.id.as_ref() {
            "open" => show_window(app),
            "pause" => {
                let app = app.clone();
                tauri::async_runtime::spawn(async move {
                    let shell = app.state::<Arc<Shell>>().inner().clone();
                    if shell.status().running {
                        shell.pause().await;
                    } else {
                        shell.start().await;
                    }
                    refresh(&app);
                    let _ = tauri_specta::Event::emit(&crate::events::StatusChanged(shell.status()), &app);
                });
            }
            "quit" => app.exit(0),
            _ => {}
        })
        .build(app)?;
    // Keep the pause item so its label can follow the state.
    app.manage(PauseItem(pause));
    Ok(())
}

struct PauseItem<R: Runtime>(MenuItem<R>);

pub fn show_window<R: Runtime>(app: &AppHandle<R>) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}

/// Updates the tooltip and title with the number of items waiting, and the pause label.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let Some(shell) = app.try_state::<Arc<Shell>>() else { return };
    let waiting = gatehouse_app::consent::waiting_count(&shell).unwrap_or(0);
    let status = shell.status();
    let text = match (waiting, status.running) {
        (_, false) => format!("Gatehouse — inbox paused — {waiting} waiting"),
        (0, true) => "Gatehouse — nothing waiting".to_string(),
        (n, true) => format!("Gatehouse — {n} waiting for you"),
    };
    if let Some(tray) = app.tray_by_id(TRAY_ID) {
        let _ = tray.set_tooltip(Some(&text));
        let _ = tray.set_title(Some(if waiting > 0 { waiting.to_string() } else { String::new() }));
    }
    if let Some(item) = app.try_state::<PauseItem<R>>() {
        let _ = item.0.set_text(if status.running { "Pause inbox" } else { "Resume inbox" });
    }
}
