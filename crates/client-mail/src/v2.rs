//! MAIL 2.0 servers in the same Tasks view as 1.3 swarms: a conversation (a message and
//! the answers to it) is kept as a task, each message of it as a task message. The server
//! pushes nothing to users, so what arrives is picked up by [`sync`] (the window calls it
//! while the Tasks view is open, `gatehouse mail sync` from a shell) and by [`send`],
//! which waits for the answers to what it sent.
//!
//! Where an answer belongs: the message its `reply_to` names; without one (the released
//! 2.0.1 server drops the field) the newest conversation on that server with the same
//! subject once `Re:`/`Fwd:` are taken off — only for a subject that had such a prefix,
//! so two separate messages that happen to share a subject stay two conversations. Either
//! way only when its sender already takes part in that conversation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_mail::client::{Outcome, SendMessage};
use gatehouse_mail::v2::{thread_subject, Box as MailBox, Client, Message};
use gatehouse_mail::ClientError;
use gatehouse_store::mail::{MailMessageRow, NewMailTask};
use gatehouse_store::Store;
use serde_json::{json, Value};

use super::{now, LiveEvent, MailTaskError};

/// How many pages of a box one sync reads at most (100 messages each); the rest waits
/// for the next sync.
const MAX_PAGES: usize = 20;
/// After the first answer to a send, how long without another before the send returns.
const QUIET: Duration = Duration::from_secs(2);
/// How often a send looks for answers.
const POLL: Duration = Duration::from_millis(500);

/// Everything a 2.0 server says about itself (its `GET /` as the caller fetched it, its
/// health) and about the logged-in user, in the shape the window and the CLI read for 1.3
/// (`server`, `root`, `health`, `whoami`, `swarms`). The login must succeed: a password
/// the server refuses is not kept.
pub async fn survey(c: &Client, root: Value) -> Result<Value, ClientError> {
    c.login().await?;
    let whoami = c.whoami().await?;
    let part = |r: Result<Value, ClientError>| r.unwrap_or_else(|e| json!({"error": {"code": e.code(), "message": e.to_string()}}));
    let swarms = part(c.swarms().await);
    let health = part(c.health().await);
    Ok(json!({
        "server": gatehouse_mail::client::ServerInfo::read(&root),
        "root": root,
        "health": health,
        "whoami": {"id": c.address(), "role": whoami["user_agent"]["user_agent"]["ua_type"], "user_agent": whoami["user_agent"]},
        "swarms": swarms,
        "address": c.address(),
    }))
}

fn row(task_id: &str, m: &Message) -> MailMessageRow {
    MailMessageRow {
        id: m.message_id.clone(),
        task_id: task_id.to_string(),
        ts: m.sent_at.clone(),
        msg_type: if m.reply_to.is_some() || thread_subject(&m.subject) != m.subject.trim() { "reply" } else { "message" }.into(),
        tier: if m.sender.contains(':') { 2 } else { 5 },
        sender: m.sender.clone(),
        recipients: m.recipients.clone(),
        subject: m.subject.clone(),
        body: m.body.clone(),
        system_error: false,
        raw: m.raw.to_string(),
        odd: None,
    }
}

/// The conversation `m` belongs to on `swarm` (see the module's note). Anyone with an
/// account on the server can write "Re:" or name a message in `reply_to`: a message joins
/// a conversation only when its sender already takes part in it (wrote in it, or was
/// written to), so a stranger cannot slot an answer into the user's conversation, nor
/// complete it.
fn conversation(store: &Store, swarm: &str, m: &Message) -> Result<String, gatehouse_store::StoreError> {
    let takes_part = |task: &str| -> Result<bool, gatehouse_store::StoreError> {
        Ok(store.mail_task(task)?.is_some_and(|t| t.messages.iter().any(|x| x.sender == m.sender || x.recipients.contains(&m.sender))))
    };
    if let Some(parent) = &m.reply_to {
        return Ok(match store.mail_message_task(parent)? {
            Some(t) if takes_part(&t)? => t,
            _ => m.message_id.clone(),
        });
    }
    let base = thread_subject(&m.subject);
    if base != m.subject.trim() {
        if let Some(t) = store.mail_task_by_subject(swarm, &base)? {
            if takes_part(&t)? {
                return Ok(t);
            }
        }
    }
    Ok(m.message_id.clone())
}

/// Keeps a message in `task` (or the conversation it belongs to): one the user sent leaves
/// the conversation waiting; an answer completes it with that answer.
fn keep(store: &Store, swarm: &str, m: &Message, mine: bool, task: Option<&str>) -> Result<LiveEvent, gatehouse_store::StoreError> {
    let at = now();
    let task_id = match task {
        Some(t) => t.to_string(),
        None => conversation(store, swarm, m)?,
    };
    store.mail_task_open(&NewMailTask {
        task_id: task_id.clone(),
        swarm: Some(swarm.into()),
        source: "live".into(),
        subject: thread_subject(&m.subject),
        state: if mine { "running" } else { "completed" }.into(),
        at: at.clone(),
    })?;
    let r = row(&task_id, m);
    store.mail_message_add(&r, &at)?;
    if !mine {
        store.mail_task_finish(&task_id, "completed", Some(&m.body), &at)?;
    }
    Ok(LiveEvent::Message { task_id, message: r })
}

/// Picks up what is new in the outbox and the inbox (sent elsewhere, or answered), oldest
/// first so a conversation starts with its first message; each kept message is handed to
/// `on_event`. Returns how many were new.
pub async fn sync(store: &Arc<Store>, c: &Client, swarm: &str, on_event: &mut (impl FnMut(&LiveEvent) + Send)) -> Result<usize, MailTaskError> {
    let mut new: Vec<(Message, bool)> = Vec::new();
    for which in [MailBox::Outbox, MailBox::Inbox] {
        let mut unknown = Vec::new();
        for page in 0..MAX_PAGES {
            let ids = c.list(which, page * gatehouse_mail::v2::PAGE).await?;
            let before = unknown.len();
            for id in &ids {
                if store.mail_message_task(id)?.is_none() {
                    unknown.push(id.clone());
                }
            }
            // Newest first: a page with nothing new means the rest is known too.
            if ids.len() < gatehouse_mail::v2::PAGE || unknown.len() == before {
                break;
            }
        }
        for id in unknown {
            new.push((c.open(which, &id).await?, which == MailBox::Outbox));
        }
    }
    new.sort_by(|a, b| a.0.sent_at.cmp(&b.0.sent_at));
    // A message to oneself is in both boxes: kept once, as sent.
    let mut seen = std::collections::HashSet::new();
    new.retain(|(m, _)| seen.insert(m.message_id.clone()));
    let mut kept = 0;
    for (m, mine) in new {
        let ev = keep(store, swarm, &m, mine, None)?;
        on_event(&ev);
        kept += 1;
    }
    Ok(kept)
}

/// Who a message goes to: `to` as given when it is a full address, an agent's name made
/// into one (`sage` → `sage@chorus@host`), or, when the server hosts one swarm with one
/// agent, that agent.
pub async fn recipient(c: &Client, to: Option<&str>) -> Result<String, ClientError> {
    let to = to.map(str::trim).filter(|t| !t.is_empty());
    if let Some(t) = to.filter(|t| t.contains('@')) {
        return Ok(t.to_string());
    }
    let host = c.address().rsplit('@').next().unwrap_or_default().to_string();
    let swarms = c.swarms().await?;
    let names: Vec<String> = swarms["swarms"].as_array().into_iter().flatten().filter_map(|s| s["name"].as_str().map(str::to_string)).collect();
    let [swarm] = names.as_slice() else {
        return Err(ClientError::Protocol(format!("name the recipient as agent@swarm@host: this server hosts {} swarms ({})", names.len(), names.join(", "))));
    };
    let agents: Vec<String> =
        c.swarm(swarm).await?["swarm"]["agents"].as_array().into_iter().flatten().filter_map(|a| a.as_str().map(str::to_string)).collect();
    let agent = match to {
        Some(name) if agents.iter().any(|a| a == name) => name.to_string(),
        Some(name) => return Err(ClientError::Protocol(format!("swarm {swarm} has no agent {name:?} (it has: {})", agents.join(", ")))),
        None => match agents.as_slice() {
            [one] => one.clone(),
            _ => return Err(ClientError::Protocol(format!("name the agent to write to: swarm {swarm} has {}", agents.join(", ")))),
        },
    };
    Ok(format!("{agent}@{swarm}@{host}"))
}

/// Sends `m` (a new conversation, or with `task_id` an answer in that conversation) and
/// waits for the answers: it returns once one has arrived and nothing more came for a
/// moment, or when `deadline` passes (the conversation stays open; later answers are
/// picked up by the next sync).
pub async fn send(
    store: Arc<Store>,
    c: &Client,
    swarm: &str,
    m: &SendMessage,
    deadline: Duration,
    mut on_event: impl FnMut(&LiveEvent) + Send,
) -> Result<Outcome, MailTaskError> {
    let to = recipient(c, m.entrypoint.as_deref()).await?;
    let (subject, reply_to) = match &m.task_id {
        Some(t) => {
            let task = store.mail_task(t)?.ok_or_else(|| ClientError::Protocol(format!("no conversation {t} is kept here")))?;
            let last = task.messages.iter().rev().find(|x| !x.sender.starts_with("user:")).or(task.messages.last());
            (format!("Re: {}", task.task.subject), last.map(|x| x.id.clone()))
        }
        None => (m.subject.clone().unwrap_or_else(|| "New Message".into()), None),
    };
    let sent = c.send(&subject, &m.body, reply_to.as_deref(), std::slice::from_ref(&to)).await?;
    let task_id = m.task_id.clone().unwrap_or_else(|| sent.message_id.clone());
    on_event(&keep(&store, swarm, &sent, true, Some(&task_id))?);

    let start = Instant::now();
    let mut answer: Option<(String, Instant)> = None;
    loop {
        tokio::time::sleep(POLL).await;
        let mut got = None;
        sync(&store, c, swarm, &mut |ev: &LiveEvent| {
            if let LiveEvent::Message { task_id: t, message } = ev {
                if *t == task_id && message.sender != c.address() {
                    got = Some(message.body.clone());
                }
            }
            on_event(ev);
        })
        .await?;
        if let Some(body) = got {
            answer = Some((body, Instant::now()));
        }
        match &answer {
            Some((body, at)) if at.elapsed() >= QUIET => return Ok(Outcome { task_id, completed: true, response: body.clone() }),
            _ if start.elapsed() >= deadline => {
                if let Some((body, _)) = answer {
                    return Ok(Outcome { task_id, completed: true, response: body });
                }
                let within = match deadline.as_secs() {
                    s if s < 120 => format!("{s} s"),
                    s => format!("{} minutes", s.div_ceil(60)),
                };
                return Err(ClientError::Interrupted(format!(
                    "no answer within {within}; the conversation stays open and a later answer is picked up when the Tasks view or `gatehouse mail sync` looks"
                ))
                .into());
            }
            _ => {}
        }
    }
}
