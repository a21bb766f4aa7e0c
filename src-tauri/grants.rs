//! Paths the webview may name. A page in the window is as trusted as the messages it
//! renders, so if one ever ran script it could call any command: a command that took any
//! path would let it read or write anywhere the user can. So a path is only accepted if
//! the native side handed it out in this session — a dialog Gatehouse itself opened, or a
//! file the user dropped on the window (the OS tells Rust, not the page) — and only for
//! the purpose it was handed out for.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::shell::CommandResult as Result;
use gatehouse_app::{Code, CommandError};

/// What a path is for: a grant for one purpose does not serve another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A file to write an export to.
    Export,
    /// A MAIL task log to read.
    MailLog,
    /// The folder to watch.
    WatchFolder,
}

#[derive(Default)]
pub struct Grants(Mutex<HashSet<(Purpose, PathBuf)>>);

impl Grants {
    pub fn grant(&self, purpose: Purpose, path: &Path) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert((purpose, path.to_path_buf()));
    }

    /// Refuses a path the native side did not hand out for `purpose`.
    pub fn check(&self, purpose: Purpose, path: &Path) -> Result<()> {
        if self.0.lock().unwrap_or_else(|p| p.into_inner()).contains(&(purpose, path.to_path_buf())) {
            Ok(())
        } else {
            Err(CommandError::new(Code::ForbiddenPath, format!("{} was not chosen in a Gatehouse dialog; choose it with the button", path.display())))
        }
    }
}

/// Opens the native dialog for `purpose` and grants what the user chose (None: cancelled).
#[tauri::command]
#[specta::specta]
pub async fn pick_path<R: Runtime>(app: AppHandle<R>, grants: State<'_, Grants>, purpose: Purpose, suggested_name: Option<String>) -> Result<Option<String>> {
    let dialog = app.dialog().file();
    let (tx, rx) = tokio::sync::oneshot::channel();
    match purpose {
        Purpose::Export => {
            let name = suggested_name.filter(|n| !n.contains(['/', '\\'])).unwrap_or_else(|| "gatehouse-export.json".into());
            dialog.set_file_name(name).add_filter("JSON", &["json"]).save_file(move |p| {
                let _ = tx.send(p);
            });
        }
        Purpose::MailLog => dialog.add_filter("MAIL task log", &["json", "jsonl"]).pick_file(move |p| {
            let _ = tx.send(p);
        }),
        Purpose::WatchFolder => dialog.pick_folder(move |p| {
            let _ = tx.send(p);
        }),
    }
    let chosen = rx.await.ok().flatten().and_then(|p| p.into_path().ok());
    Ok(chosen.map(|p| {
        grants.grant(purpose, &p);
        p.display().to_string()
    }))
}

/// Files the user dropped on the window may be imported as task logs.
pub fn grant_dropped<R: Runtime>(app: &AppHandle<R>, paths: &[PathBuf]) {
    if let Some(g) = app.try_state::<Grants>() {
        for p in paths {
            g.grant(Purpose::MailLog, p);
        }
    }
}

/// Asks the user, in a native dialog, to confirm `what`; false unless they say yes.
pub async fn confirm<R: Runtime>(app: &AppHandle<R>, what: &[String]) -> bool {
    use tauri_plugin_dialog::{MessageDialogButtons, MessageDialogKind};
    let text = format!("Allow Gatehouse to {}?\n\nSenders you trust for these scopes will make this happen.", what.join(", and to "));
    let (tx, rx) = tokio::sync::oneshot::channel();
    app.dialog()
        .message(text)
        .title("Gatehouse: confirm what runs")
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom("Allow".into(), "Cancel".into()))
        .show(move |ok| {
            let _ = tx.send(ok);
        });
    rx.await.unwrap_or(false)
}
