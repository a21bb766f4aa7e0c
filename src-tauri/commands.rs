//! The commands the window may call. Each is a thin call into the core crates; errors
//! cross the boundary as `{code, message}`.

use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_inbox::consent::{self, ConsentItem, ConsentTarget, Decision, DecisionOutcome};
use gatehouse_inbox::{ExecutorConfig, ExecutorSpec};
use gatehouse_store::{AuditEntry, BlockedSender, EnvelopeRow, InboxFilter, InboxItem, Policy, ReceiptRow, TrustEntry};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime, State};

pub use crate::error::{Code, CommandError};
use crate::service::{Core, DesktopSettings, InboxStatus};

pub type CoreState<'a> = State<'a, Arc<Core>>;
pub(crate) type Result<T> = std::result::Result<T, CommandError>;

/// Runs blocking store work off the async runtime's threads.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| CommandError::new(Code::Internal, e.to_string()))?
}

#[derive(Serialize, specta::Type)]
pub struct AppInfo {
    pub version: String,
    pub data_dir: String,
    pub public_key: String,
    pub fingerprint: String,
    pub keystore: String,
    pub status: InboxStatus,
    pub settings: DesktopSettings,
    pub waiting: usize,
    /// Refusals and knocks a flood brought beyond what is kept per minute: only counted.
    pub unkept: gatehouse_inbox::flood::Unkept,
}

pub fn fingerprint(key: &str) -> String {
    if key.starts_with("did:") {
        // A DID is read by its method and its last characters.
        let method = key.splitn(3, ':').take(2).collect::<Vec<_>>().join(":");
        let tail: String = key.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        return format!("{method}:…{tail}");
    }
    key.get(..16).unwrap_or(key).as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(" ")
}

#[tauri::command]
#[specta::specta]
pub async fn app_info(core: CoreState<'_>) -> Result<AppInfo> {
    let c = core.inner().clone();
    blocking(move || {
        Ok(AppInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            data_dir: c.data_dir.display().to_string(),
            fingerprint: fingerprint(&c.public_key),
            public_key: c.public_key.clone(),
            keystore: c.keystore.to_string(),
            status: c.status(),
            settings: DesktopSettings::load(&c.store),
            waiting: consent::waiting_count(&c.store)?,
            unkept: c.inbox().unkept(),
        })
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn inbox_list(core: CoreState<'_>, filter: InboxFilter) -> Result<Vec<InboxItem>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.inbox(&filter)?)).await
}

#[derive(Serialize, specta::Type)]
pub struct Step {
    pub name: &'static str,
    pub state: &'static str,
}

#[derive(Serialize, specta::Type)]
pub struct Detail {
    pub receipt: ReceiptRow,
    pub envelope: Option<EnvelopeRow>,
    pub steps: Vec<Step>,
    pub sender_name: Option<String>,
    pub on_behalf_of_name: Option<String>,
    /// What arrived, pretty-printed when it is JSON.
    pub raw: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn inbox_detail(core: CoreState<'_>, receipt_id: String) -> Result<Detail> {
    let c = core.inner().clone();
    blocking(move || {
        let receipt = c.store.receipt(&receipt_id)?.ok_or_else(|| CommandError::new(Code::NotFound, "no such receipt"))?;
        let envelope = match receipt.envelope_row {
            Some(id) => c.store.envelope(id)?,
            None => None,
        };
        let code = receipt.code.as_deref().and_then(gatehouse_epp::ErrorCode::parse);
        let steps = gatehouse_inbox::verification_steps(code, receipt.sender.is_some()).into_iter().map(|(name, state)| Step { name, state }).collect();
        let name_of = |k: Option<&str>| -> Result<Option<String>> {
            Ok(match k {
                Some(k) => c.store.trust_get(k)?.map(|t| t.name),
                None => None,
            })
        };
        let sender_name = name_of(receipt.sender.as_deref())?;
        let on_behalf_of_name = name_of(envelope.as_ref().and_then(|e| e.on_behalf_of.as_deref()))?;
        let raw_text = envelope.as_ref().map(|e| e.raw.clone()).or_else(|| receipt.body.clone());
        let raw = raw_text.map(|t| match serde_json::from_str::<serde_json::Value>(&t) {
            Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(t),
            Err(_) => t,
        });
        Ok(Detail { receipt, envelope, steps, sender_name, on_behalf_of_name, raw })
    })
    .await
}

#[derive(Serialize, specta::Type)]
pub struct ConversationMessage {
    pub envelope: EnvelopeRow,
    pub sender_name: Option<String>,
    pub on_behalf_of_name: Option<String>,
    /// Depth in the reply chain (0 for a message that answers nothing in the conversation).
    pub depth: usize,
}

#[tauri::command]
#[specta::specta]
pub async fn conversation(core: CoreState<'_>, conversation_id: String) -> Result<Vec<ConversationMessage>> {
    let c = core.inner().clone();
    blocking(move || {
        let mut rows = c.store.conversation(&conversation_id)?;
        // Answers this inbox sent back join the thread, under what they answer.
        for r in c.store.replies_for_conversation(&conversation_id)?.into_iter().filter(|r| r.state == "sent") {
            let sent = r.sent_envelope.clone().unwrap_or_default();
            let s = |k: &str| sent[k].as_str().unwrap_or_default().to_string();
            rows.push(EnvelopeRow {
                id: -r.id,
                envelope_id: s("envelope_id"),
                sender: c.public_key.clone(),
                recipient: r.recipient.clone(),
                scope: r.scope.clone(),
                payload_type: None,
                conversation_id: Some(r.conversation_id.clone()),
                in_reply_to: Some(r.in_reply_to.clone()),
                on_behalf_of: None,
                prompt: r.text.clone(),
                timestamp: s("timestamp"),
                expires_at: s("expires_at"),
                received_at: r.updated_at.clone(),
                transport: "reply".into(),
                signed_form: "reference".into(),
                raw: sent.to_string(),
                receipt_id: r.receipt.as_ref().and_then(|x| x["receipt_id"].as_str()).unwrap_or_default().to_string(),
                executor: "reply".into(),
                exec_status: gatehouse_store::ExecStatus::Succeeded,
                exec_result: r.receipt.clone(),
                exec_updated_at: Some(r.updated_at.clone()),
            });
        }
        let ordered = order_by_replies(rows);
        let mut out = Vec::new();
        for (envelope, depth) in ordered {
            let sender_name =
                if envelope.transport == "reply" { Some("You (answer sent back)".to_string()) } else { c.store.trust_get(&envelope.sender)?.map(|t| t.name) };
            let on_behalf_of_name = match &envelope.on_behalf_of {
                Some(k) => c.store.trust_get(k)?.map(|t| t.name),
                None => None,
            };
            out.push(ConversationMessage { envelope, sender_name, on_behalf_of_name, depth });
        }
        Ok(out)
    })
    .await
}

/// Orders a conversation by its reply chains: each reply right after what it answers,
/// siblings by arrival; messages answering something absent start a chain of their own.
pub fn order_by_replies(rows: Vec<EnvelopeRow>) -> Vec<(EnvelopeRow, usize)> {
    let ids: std::collections::HashSet<String> = rows.iter().map(|r| r.envelope_id.clone()).collect();
    let mut out = Vec::new();
    fn visit(
        parent: Option<&str>,
        rows: &[EnvelopeRow],
        ids: &std::collections::HashSet<String>,
        depth: usize,
        out: &mut Vec<(EnvelopeRow, usize)>,
        seen: &mut std::collections::HashSet<i64>,
    ) {
        for r in rows {
            let is_root = r.in_reply_to.as_deref().is_none_or(|p| !ids.contains(p));
            let matches = match parent {
                None => is_root,
                Some(p) => r.in_reply_to.as_deref() == Some(p),
            };
            if matches && seen.insert(r.id) {
                out.push((r.clone(), depth));
                visit(Some(&r.envelope_id), rows, ids, depth + 1, out, seen);
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    visit(None, &rows, &ids, 0, &mut out, &mut seen);
    // Cycles (a replies to b replies to a) have no root; show them in arrival order.
    for r in &rows {
        if seen.insert(r.id) {
            out.push((r.clone(), 0));
        }
    }
    out
}

#[derive(Serialize, specta::Type)]
pub struct TrustRow {
    #[serde(flatten)]
    pub entry: TrustEntry,
    pub fingerprint: String,
    pub used_today: i64,
}

#[tauri::command]
#[specta::specta]
pub async fn trust_list(core: CoreState<'_>) -> Result<Vec<TrustRow>> {
    let c = core.inner().clone();
    blocking(move || {
        let midnight = chrono::Utc::now().date_naive().and_hms_opt(0, 0, 0).expect("midnight").and_utc().timestamp_millis();
        c.store
            .trust_list()?
            .into_iter()
            .map(|entry| {
                let used_today = c.store.accepted_since(&entry.public_key, midnight)?;
                Ok(TrustRow { fingerprint: fingerprint(&entry.public_key), entry, used_today })
            })
            .collect()
    })
    .await
}

#[derive(Deserialize, specta::Type)]
pub struct TrustInput {
    pub public_key: String,
    pub name: String,
    pub policy: Policy,
}

#[tauri::command]
#[specta::specta]
pub async fn trust_add(core: CoreState<'_>, input: TrustInput) -> Result<()> {
    let c = core.inner().clone();
    let mut policy = input.policy.clone();
    if input.public_key.trim().starts_with("did:web:") {
        policy.uamp_keys = gatehouse_inbox::uamp::peer::keys_for(input.public_key.trim()).await.map_err(|e| CommandError::new(Code::DidFetch, e))?;
    }
    blocking(move || {
        let entry = TrustEntry {
            public_key: gatehouse_store::sender_key(input.public_key.trim()),
            name: input.name.trim().to_string(),
            added_at: gatehouse_epp::utc_string(chrono::Utc::now()),
            policy,
        };
        Ok(consent::trust::add(&c.store, &entry, chrono::Utc::now())?)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_update(core: CoreState<'_>, input: TrustInput) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || Ok(consent::trust::update(&c.store, &input.public_key, &input.name, &input.policy, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_remove(core: CoreState<'_>, public_key: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || Ok(consent::trust::remove(&c.store, &public_key, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_block(core: CoreState<'_>, public_key: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || Ok(consent::trust::block(&c.store, &public_key, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn trust_unblock(core: CoreState<'_>, public_key: String) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || Ok(consent::trust::unblock(&c.store, &public_key, chrono::Utc::now())?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn blocked_list(core: CoreState<'_>) -> Result<Vec<BlockedSender>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.blocked_list()?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn consent_list(core: CoreState<'_>) -> Result<Vec<ConsentItem>> {
    let c = core.inner().clone();
    blocking(move || Ok(consent::pending(&c.store)?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn consent_decide<R: Runtime>(app: AppHandle<R>, core: CoreState<'_>, target: ConsentTarget, decision: Decision) -> Result<DecisionOutcome> {
    let c = core.inner().clone();
    // A did:web agent's keys are fetched now, when the user lets it in, never on arrival.
    let keys = match (&target, decision) {
        (ConsentTarget::UnknownSender { public_key }, Decision::AlwaysAllowScope) if public_key.starts_with("did:web:") => {
            gatehouse_inbox::uamp::peer::keys_for(public_key).await.map_err(|e| CommandError::new(Code::DidFetch, e))?
        }
        _ => Vec::new(),
    };
    let out = blocking(move || Ok(consent::decide_with_keys(&c.inbox(), &target, decision, chrono::Utc::now(), &keys)?)).await?;
    crate::tray::refresh(&app);
    Ok(out)
}

#[tauri::command]
#[specta::specta]
pub async fn audit_list(core: CoreState<'_>) -> Result<Vec<AuditEntry>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.audit_list(500)?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn settings_set(core: CoreState<'_>, grants: tauri::State<'_, crate::grants::Grants>, settings: DesktopSettings) -> Result<InboxStatus> {
    if settings.port == 0 || settings.uamp_port == 0 {
        return Err(CommandError::new(Code::Invalid, "choose ports between 1 and 65535"));
    }
    if settings.port == settings.uamp_port {
        return Err(CommandError::new(Code::Invalid, "EPP and UAMP need two different ports"));
    }
    if !settings.watch_dir.is_absolute() {
        return Err(CommandError::new(Code::Invalid, "the watched folder must be an absolute path"));
    }
    let c = core.inner().clone();
    let before = DesktopSettings::load(&c.store);
    // Files dropped there are read and moved: the folder is one the user chose here.
    if settings.watch_dir != before.watch_dir {
        grants.check(crate::grants::Purpose::WatchFolder, &settings.watch_dir)?;
    }
    {
        let c = c.clone();
        let s = settings.clone();
        blocking(move || {
            s.save(&c.store)?;
            c.store.audit("settings.update", None, &serde_json::json!({"before": before, "after": s}), &gatehouse_epp::utc_string(chrono::Utc::now()))?;
            Ok(())
        })
        .await?;
    }
    c.start().await;
    Ok(c.status())
}

#[tauri::command]
#[specta::specta]
pub async fn retention_get(core: CoreState<'_>) -> Result<gatehouse_store::Retention> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.retention())).await
}

/// Applied by the inbox's next clean-up (every 10 minutes), not at once.
#[tauri::command]
#[specta::specta]
pub async fn retention_set(core: CoreState<'_>, retention: gatehouse_store::Retention) -> Result<gatehouse_store::Retention> {
    let c = core.inner().clone();
    blocking(move || {
        c.store.set_retention(&retention, &gatehouse_epp::utc_string(chrono::Utc::now()))?;
        Ok(c.store.retention())
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn inbox_pause<R: Runtime>(app: AppHandle<R>, core: CoreState<'_>, paused: bool) -> Result<InboxStatus> {
    let c = core.inner().clone();
    if paused {
        c.pause().await;
    } else {
        c.start().await;
    }
    crate::tray::refresh(&app);
    Ok(c.status())
}

#[tauri::command]
#[specta::specta]
pub async fn executors_get(core: CoreState<'_>) -> Result<ExecutorConfig> {
    let c = core.inner().clone();
    blocking(move || Ok(ExecutorConfig::load(&c.store)?)).await
}

#[tauri::command]
#[specta::specta]
pub async fn executors_set<R: Runtime>(app: AppHandle<R>, core: CoreState<'_>, config: ExecutorConfig) -> Result<()> {
    for (scope, spec) in config.scopes.iter().map(|(s, v)| (s.as_str(), v)).chain([("default", &config.default)]) {
        if scope != "default" && !gatehouse_epp::envelope::is_scope_like(scope) {
            return Err(CommandError::new(Code::Invalid, format!("scope {scope:?} may contain only letters, digits and hyphens")));
        }
        if let ExecutorSpec::Command { program, .. } = spec {
            if program.trim().is_empty() {
                return Err(CommandError::new(Code::Invalid, format!("the command for {scope} needs a program")));
            }
        }
        if let ExecutorSpec::Swarm { swarm, .. } = spec {
            let c = core.inner().clone();
            let name = swarm.clone();
            if blocking(move || Ok(c.store.mail_swarm(&name)?)).await?.is_none() {
                return Err(CommandError::new(Code::Invalid, format!("no MAIL swarm named {swarm:?}: connect it under Tasks (MAIL) first")));
            }
        }
        if let ExecutorSpec::Peer { peer, .. } = spec {
            let c = core.inner().clone();
            let name = peer.clone();
            if blocking(move || Ok(c.store.uamp_peer(&name)?)).await?.is_none() {
                return Err(CommandError::new(Code::Invalid, format!("no UAMP peer named {peer:?}: add it under Agents (UAMP) first")));
            }
        }
        if let ExecutorSpec::Model { model, endpoint, .. } = spec {
            if model.trim().is_empty() {
                return Err(CommandError::new(Code::Invalid, format!("the model for {scope} needs a name (e.g. llama3.2)")));
            }
            let u = url::Url::parse(endpoint).map_err(|e| CommandError::new(Code::Invalid, format!("{endpoint}: {e}")))?;
            if !matches!(u.scheme(), "http" | "https") {
                return Err(CommandError::new(Code::Invalid, format!("{endpoint}: the model's address is http(s)")));
            }
        }
    }
    // A program to run, or a folder to write into, is confirmed by the user in a native
    // dialog the page cannot answer: the page may only propose it.
    let before = {
        let c = core.inner().clone();
        blocking(move || Ok(ExecutorConfig::load(&c.store)?)).await?
    };
    let asks = crate::grants::new_programs_and_folders(&before, &config);
    if !asks.is_empty() && !crate::grants::confirm(&app, &asks).await {
        return Err(CommandError::new(Code::NotConfirmed, "not saved: the new program or folder was not confirmed"));
    }
    let c = core.inner().clone();
    blocking(move || {
        config.save(&c.store)?;
        c.store.audit("executors.update", None, &serde_json::to_value(&config).unwrap_or_default(), &gatehouse_epp::utc_string(chrono::Utc::now()))?;
        Ok(())
    })
    .await
}

/// The public key as a QR code (SVG text; rendered as an image, never as markup).
#[tauri::command]
#[specta::specta]
pub async fn identity_qr(core: CoreState<'_>) -> Result<String> {
    let code = qrcode::QrCode::new(core.public_key.as_bytes()).map_err(|e| CommandError::new(Code::Internal, e.to_string()))?;
    Ok(code.render::<qrcode::render::svg::Color>().min_dimensions(200, 200).build())
}

#[derive(Deserialize, Clone, Copy, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum ExportKind {
    Receipts,
    Audit,
    /// Every IntentWeb conversation with all its messages.
    Conversations,
    /// Every step the ASOP guardian decided, by session.
    Guardian,
}

/// Writes every receipt or the whole audit log as JSON to a path the user chose.
#[tauri::command]
#[specta::specta]
pub async fn export_json(core: CoreState<'_>, grants: tauri::State<'_, crate::grants::Grants>, kind: ExportKind, path: PathBuf) -> Result<usize> {
    grants.check(crate::grants::Purpose::Export, &path)?;
    let c = core.inner().clone();
    blocking(move || {
        let (value, n) = match kind {
            ExportKind::Receipts => {
                let rows = c.store.receipts(u32::MAX, 0)?;
                let n = rows.len();
                (serde_json::to_value(rows.into_iter().map(|r| r.receipt).collect::<Vec<_>>()).unwrap_or_default(), n)
            }
            ExportKind::Audit => {
                let rows = c.store.audit_list(u32::MAX)?;
                let n = rows.len();
                (serde_json::to_value(rows).unwrap_or_default(), n)
            }
            ExportKind::Conversations => {
                let mut all = Vec::new();
                for conv in c.store.iw_conversations(usize::MAX >> 1)? {
                    if let Some(v) = gatehouse_inbox::intent::view(&c.store, &conv.interaction_id)? {
                        all.push(v);
                    }
                }
                let n = all.len();
                (serde_json::to_value(all).unwrap_or_default(), n)
            }
            ExportKind::Guardian => {
                let mut sessions = Vec::new();
                for (id, agent, _, _) in c.store.asop_sessions(usize::MAX >> 1)? {
                    let steps = c.store.asop_session(&id)?;
                    sessions.push(serde_json::json!({"session_id": id, "agent": agent, "steps": steps}));
                }
                let n = sessions.len();
                (serde_json::Value::Array(sessions), n)
            }
        };
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        std::fs::write(&path, text).map_err(|e| CommandError::new(Code::Io, format!("{}: {e}", path.display())))?;
        Ok(n)
    })
    .await
}

/// Answers to the sender of an envelope: drafts, sent and failed.
#[tauri::command]
#[specta::specta]
pub async fn replies_for(core: CoreState<'_>, envelope_row: i64) -> Result<Vec<gatehouse_store::ReplyRow>> {
    let c = core.inner().clone();
    blocking(move || Ok(c.store.replies_for_envelope(envelope_row)?)).await
}

/// Sends a reply with the text the user approved (edited or not), signed by this inbox.
#[tauri::command]
#[specta::specta]
pub async fn reply_send(core: CoreState<'_>, id: i64, text: String) -> Result<gatehouse_store::ReplyRow> {
    let c = core.inner().clone();
    if text.trim().is_empty() {
        return Err(CommandError::new(Code::Invalid, "the answer is empty"));
    }
    let s = c.clone();
    blocking(move || {
        s.store.reply_edit(id, text.trim(), &gatehouse_epp::utc_string(chrono::Utc::now()))?;
        s.store.audit("reply.send", None, &serde_json::json!({"reply": id}), &gatehouse_epp::utc_string(chrono::Utc::now()))?;
        Ok(())
    })
    .await?;
    gatehouse_inbox::reply::send(&c.store, &c.key, id).await.map_err(|e| CommandError::coded(e.code(), e.to_string()))
}

/// Runs a failed executor again (the model was unreachable, the swarm refused its token…).
#[tauri::command]
#[specta::specta]
pub async fn executor_retry(core: CoreState<'_>, envelope_row: i64) -> Result<()> {
    let c = core.inner().clone();
    blocking(move || {
        let queued = gatehouse_inbox::runner::retry(&c.inbox(), envelope_row).map_err(|e| CommandError::new(Code::NotAllowed, e.to_string()))?;
        if !queued {
            return Err(CommandError::new(Code::NotRunning, "queued; it runs when the inbox is resumed"));
        }
        c.store.audit("executor.retry", None, &serde_json::json!({"envelope_row": envelope_row}), &gatehouse_epp::utc_string(chrono::Utc::now()))?;
        Ok(())
    })
    .await
}
