//! Approver devices in the window: the owner invites a phone or a member (the page's
//! address with a one-time code, and its QR code to scan), sees the devices, renames and removes
//! one. One call each into gatehouse_app::approvers, which the CLI calls too.

use gatehouse_app::approvers::{self, Approver, Invitation};
use serde::Serialize;

use crate::commands::{blocking, CommandError, ShellState};
use crate::shell::DesktopSettings;

type Result<T> = std::result::Result<T, CommandError>;

/// An invitation as the window shows it.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct InvitationView {
    pub invitation: Invitation,
    /// The page's address with the code, as a QR code (SVG).
    pub qr_svg: String,
}

/// Invites a device called `name` to the gate at `url` (by default this inbox's own
/// address, which only a browser on this computer reaches: a phone needs the gate's
/// https:// name).
#[tauri::command]
#[specta::specta]
pub async fn approver_invite(shell: ShellState<'_>, name: String, url: Option<String>) -> Result<InvitationView> {
    let c = shell.inner().clone();
    blocking(move || {
        let url = url.filter(|u| !u.trim().is_empty()).unwrap_or_else(|| format!("http://127.0.0.1:{}", DesktopSettings::load(&c).port));
        let invitation = approvers::invite(&c, &name, url.trim(), gatehouse_app::clock::now())?;
        let qr = qrcode::QrCode::new(invitation.url.as_bytes()).map_err(|e| CommandError::new(gatehouse_app::Code::Internal, e.to_string()))?;
        Ok(InvitationView { qr_svg: qr.render::<qrcode::render::svg::Color>().min_dimensions(200, 200).build(), invitation })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn approvers_list(shell: ShellState<'_>) -> Result<Vec<Approver>> {
    let c = shell.inner().clone();
    blocking(move || approvers::list(&c)).await
}

/// Removes a device: its next request is refused.
#[tauri::command]
#[specta::specta]
pub async fn approver_remove(shell: ShellState<'_>, id: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || approvers::remove(&c, &id)).await
}

/// Names a device anew (as its list and the activity log show it).
#[tauri::command]
#[specta::specta]
pub async fn approver_rename(shell: ShellState<'_>, id: String, name: String) -> Result<()> {
    let c = shell.inner().clone();
    blocking(move || approvers::rename(&c, &id, &name)).await
}
