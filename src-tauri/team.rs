//! This desktop as an approver of team gates: join one from an invitation's link, see
//! what waits there live (each gate's stream followed; every change read again and sent
//! to the window), decide, leave. One call each into gatehouse_app::membership.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_app::consent::{ConsentTarget, Decision, DecisionOutcome, Lasting};
use gatehouse_app::membership::{self, Heard, Membership, TeamWaiting};
use tauri::{AppHandle, Manager, Runtime};
use tauri_specta::Event as _;

use crate::commands::{blocking, CommandError, ShellState};
use crate::events::TeamChanged;
use crate::shell::Shell;

type Result<T> = std::result::Result<T, CommandError>;

/// The live streams followed, one per team gate.
#[derive(Default)]
pub struct Followers(Mutex<HashMap<String, tauri::async_runtime::JoinHandle<()>>>);

/// Longest pause before a gate that did not answer is asked again.
const MOST_PAUSE: Duration = Duration::from_secs(30);

/// Follows every team gate this desktop approves for (at start).
pub fn follow_all<R: Runtime>(app: &AppHandle<R>, shell: Arc<Shell>) {
    for m in membership::list(&shell).unwrap_or_default().into_iter().filter(|m| !m.removed) {
        follow(app, shell.clone(), m.id);
    }
}

fn follow<R: Runtime>(app: &AppHandle<R>, shell: Arc<Shell>, id: String) {
    let handle = app.clone();
    let task = tauri::async_runtime::spawn(follow_one(handle, shell, id.clone()));
    if let Some(old) = app.state::<Followers>().0.lock().unwrap_or_else(|p| p.into_inner()).insert(id, task) {
        old.abort();
    }
}

/// What waits at gate `id` now, sent to the window.
async fn tell<R: Runtime>(app: &AppHandle<R>, shell: &Shell, id: &str, error: Option<CommandError>) {
    let Ok(Some(m)) = membership::list(shell).map(|all| all.into_iter().find(|m| m.id == id)) else { return };
    let _ = TeamChanged(membership::waiting_there(shell, m, error).await).emit(app);
}

async fn follow_one<R: Runtime>(app: AppHandle<R>, shell: Arc<Shell>, id: String) {
    let mut pause = Duration::from_secs(1);
    loop {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        // Each change is read again from the gate; changes heard meanwhile are one read.
        let reader = {
            let (app, shell, id) = (app.clone(), shell.clone(), id.clone());
            tauri::async_runtime::spawn(async move {
                while let Some(heard) = rx.recv().await {
                    let mut removed = heard == Heard::Removed;
                    while let Ok(more) = rx.try_recv() {
                        removed |= more == Heard::Removed;
                    }
                    if removed {
                        tell(&app, &shell, &id, Some(CommandError::new(gatehouse_app::Code::Unauthorized, "this desktop was removed from the team's gate")))
                            .await;
                        return;
                    }
                    tell(&app, &shell, &id, None).await;
                }
            })
        };
        let _ = tx.send(Heard::Changed);
        let ended = membership::follow(&shell, &id, |h| {
            let _ = tx.send(h);
        })
        .await;
        drop(tx);
        let _ = reader.await;
        let gone = match membership::list(&shell) {
            Ok(all) => all.iter().find(|m| m.id == id).is_none_or(|m| m.removed),
            Err(_) => false,
        };
        if gone {
            return;
        }
        match ended {
            // The stream ended cleanly (the gate restarted): open it again at once.
            Ok(()) => pause = Duration::from_secs(1),
            Err(e) => {
                tell(&app, &shell, &id, Some(e)).await;
                pause = (pause * 2).min(MOST_PAUSE);
            }
        }
        tokio::time::sleep(pause).await;
    }
}

/// Joins the team gate an invitation's link names, as a device called `name`; its items
/// are followed from then on.
#[tauri::command]
#[specta::specta]
pub async fn team_join<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, link: String, name: String) -> Result<Membership> {
    let c = shell.inner().clone();
    let m = membership::join(&c, &link, &name).await?;
    follow(&app, c, m.id.clone());
    Ok(m)
}

#[tauri::command]
#[specta::specta]
pub async fn team_list(shell: ShellState<'_>) -> Result<Vec<Membership>> {
    let c = shell.inner().clone();
    blocking(move || membership::list(&c)).await
}

/// What waits at every team gate, read from each now.
#[tauri::command]
#[specta::specta]
pub async fn team_waiting(shell: ShellState<'_>) -> Result<Vec<TeamWaiting>> {
    membership::waiting(&shell.inner().clone()).await
}

/// Decides an item at team gate `id`, as it was shown (`digest`).
#[tauri::command]
#[specta::specta]
pub async fn team_decide(
    shell: ShellState<'_>,
    id: String,
    target: ConsentTarget,
    digest: String,
    decision: Decision,
    lasting: Option<Lasting>,
) -> Result<DecisionOutcome> {
    membership::decide(&shell.inner().clone(), &id, target, digest, decision, lasting.unwrap_or_default()).await
}

/// Forgets a team gate here (and this device's key for it).
#[tauri::command]
#[specta::specta]
pub async fn team_leave<R: Runtime>(app: AppHandle<R>, shell: ShellState<'_>, id: String) -> Result<()> {
    if let Some(task) = app.state::<Followers>().0.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
        task.abort();
    }
    let c = shell.inner().clone();
    blocking(move || membership::leave(&c, &id)).await
}
