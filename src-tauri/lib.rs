//! The Gatehouse desktop shell: a thin layer over the core crates. This first version
//! opens the window and shows the inbox identity; the inbox UI arrives with issue 3.

use std::path::PathBuf;

use serde::Serialize;
use tauri::{Manager, Runtime};

/// Errors cross the IPC boundary as `{code, message}`, never as bare strings.
#[derive(Debug, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AppInfo {
    pub version: String,
    pub data_dir: String,
    pub public_key: Option<String>,
    pub keystore: String,
}

struct AppState {
    data_dir: PathBuf,
}

fn data_dir() -> PathBuf {
    std::env::var_os("GATEHOUSE_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("gatehouse"))
}

#[tauri::command]
fn app_info(state: tauri::State<'_, AppState>) -> Result<AppInfo, CommandError> {
    let keystore = match std::env::var("GATEHOUSE_KEYSTORE").as_deref() {
        Ok("file") => gatehouse_keys::KeystoreKind::File,
        _ => gatehouse_keys::KeystoreKind::Os,
    };
    // First run creates the identity in the keychain; later runs read it.
    let public_key = match gatehouse_keys::load_or_create(&state.data_dir, keystore) {
        Ok((id, _)) => Some(id.public_key),
        Err(e) => return Err(CommandError { code: "IDENTITY", message: e.to_string() }),
    };
    Ok(AppInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        data_dir: state.data_dir.display().to_string(),
        public_key,
        keystore: keystore.to_string(),
    })
}

/// Builds the app on any runtime, so tests can pass `tauri::test::mock_builder()`.
pub fn run_app<R: Runtime>(builder: tauri::Builder<R>) -> tauri::App<R> {
    builder
        .setup(|app| {
            app.manage(AppState { data_dir: data_dir() });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![app_info])
        .build(tauri::generate_context!())
        .expect("error while building the Gatehouse app")
}

pub fn run() {
    run_app(tauri::Builder::default()).run(|_, _| {});
}
