//! Contacts in the window: each a person or organisation with its keys, verified with a
//! safety code or the other side's shared code; a knock's new key added to a contact only
//! when the user says so; the user's own key, address and QR to share. One call each into
//! gatehouse_app::contacts, which the CLI calls too.

use gatehouse_app::contacts::{self, ContactView};
use serde::Serialize;

use crate::shell::{blocking, DesktopSettings, Shell, ShellState};
use gatehouse_app::CommandError;

type Result<T> = std::result::Result<T, CommandError>;

/// What the user shares so others can reach them and check it is them.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Share {
    pub public_key: String,
    pub address: String,
    /// The text the QR code holds (others paste it to verify this key).
    pub text: String,
    /// The QR code, as SVG.
    pub qr_svg: String,
}

pub fn share_of(c: &Shell) -> Result<Share> {
    let port = DesktopSettings::load(c).port;
    let address = c.status().listening.unwrap_or_else(|| format!("http://127.0.0.1:{port}/epp/v1/submit"));
    let text = contacts::share_text(&c.public_key, &address);
    let qr = qrcode::QrCode::new(text.as_bytes()).map_err(|e| CommandError::new(gatehouse_app::Code::Internal, e.to_string()))?;
    Ok(Share { qr_svg: qr.render::<qrcode::render::svg::Color>().min_dimensions(200, 200).build(), public_key: c.public_key.clone(), address, text })
}

#[tauri::command]
#[specta::specta]
pub async fn identity_share(shell: ShellState<'_>) -> Result<Share> {
    let c = shell.inner().clone();
    blocking(move || share_of(&c)).await
}

#[tauri::command]
#[specta::specta]
pub async fn contacts_list(shell: ShellState<'_>) -> Result<Vec<ContactView>> {
    let c = shell.inner().clone();
    blocking(move || contacts::list(&c)).await
}

/// Marks a key verified: `pasted` is what the other side shared; without it, the user
/// compared safety codes and they matched.
#[tauri::command]
#[specta::specta]
pub async fn contact_verify(shell: ShellState<'_>, key: String, pasted: Option<String>) -> Result<ContactView> {
    let c = shell.inner().clone();
    blocking(move || contacts::verify(&c, &key, pasted.as_deref(), gatehouse_app::clock::now())).await
}

/// A key that knocked is a new key of this contact (the user's word).
#[tauri::command]
#[specta::specta]
pub async fn contact_add_key(shell: ShellState<'_>, contact_id: i64, key: String) -> Result<String> {
    let inbox = shell.gate();
    blocking(move || Ok(contacts::adopt(&inbox, contact_id, &key, gatehouse_app::clock::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn contact_rename(shell: ShellState<'_>, contact_id: i64, name: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || contacts::rename(&c, contact_id, &name, gatehouse_app::clock::now())).await
}

/// The user says two contacts are the same person: `from`'s keys join `into`.
#[tauri::command]
#[specta::specta]
pub async fn contact_merge(shell: ShellState<'_>, from: i64, into: i64) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || contacts::merge(&c, from, into, gatehouse_app::clock::now())).await
}

/// A did:web contact's DID document fetched again: its keys now replace those kept (a
/// verified contact is blocked until verified again). Answers a key change prompt.
#[tauri::command]
#[specta::specta]
pub async fn contact_check_keys(shell: ShellState<'_>, sender: String) -> Result<gatehouse_app::did_change::KeysChecked> {
    gatehouse_app::did_change::check(shell.inner(), sender).await
}

/// The Gatehouse contact text in a picture of a QR code (its bytes, base64), to verify
/// with like a pasted code.
#[tauri::command]
#[specta::specta]
pub async fn contact_read_qr(picture: String) -> Result<String> {
    blocking(move || gatehouse_app::qr::read_base64(&picture)).await
}
