//! What Rust tells the window without being asked. Each event's name and payload type
//! are exported to the window's bindings with the commands (`bindings` in lib.rs).

use serde::Serialize;
use tauri_specta::Event;

/// A submission was answered (accepted or refused); the window redraws what it shows.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "inbox://received")]
pub struct InboxReceived(pub gatehouse_app::serve::ArrivalEvent);

/// The same submission, when it needs the user's decision.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "consent://requested")]
pub struct ConsentRequested(pub gatehouse_app::serve::ArrivalEvent);

/// The inbox started, paused or failed to listen.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "inbox://status")]
pub struct StatusChanged(pub crate::shell::InboxStatus);

/// An executor at work: the answer so far, a note, or its stored end.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "executor://progress")]
pub struct ExecutorProgress(pub gatehouse_app::serve::ExecProgress);

/// One event of a MAIL task followed live.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "mail://event")]
pub struct MailLive(pub gatehouse_app::swarms::LiveEvent);

/// Where an ask to a UAMP peer stands.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "uamp://progress")]
pub struct UampProgress(pub ProgressEvent);

/// The user clicked a prompt's notification: the window shows what waits, that sender's
/// prompt first (`None`: the digest of quiet hours, all of them).
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "consent://open")]
pub struct OpenPrompt {
    pub sender: Option<String>,
}

/// What waits for the user changed (a decision made anywhere: this window, the CLI, a
/// phone; or an arrival): the window draws what waits again.
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "consent://changed")]
pub struct WaitingChanged;

/// What waits at one team gate this desktop approves for, read again after the gate said
/// it changed (or why it could not be read).
#[derive(Debug, Clone, Serialize, specta::Type, Event)]
#[tauri_specta(event_name = "team://changed")]
pub struct TeamChanged(pub gatehouse_app::membership::TeamWaiting);

/// How a UAMP ask to a peer is going (the payload of [`UampProgress`]).
#[derive(Debug, Serialize, Clone, specta::Type)]
pub struct ProgressEvent {
    pub peer: String,
    #[serde(flatten)]
    pub progress: gatehouse_app::peers::AskProgress,
    /// Set when the ask failed before or while streaming.
    pub error: Option<gatehouse_app::CommandError>,
}
