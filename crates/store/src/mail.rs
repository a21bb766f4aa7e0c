//! MAIL swarms, tasks, their messages and events. Plain rows: the MAIL crate reads and
//! validates, this keeps what it read.

use crate::sql::{args, Db, Optional, Row};
use serde::Serialize;

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MailSwarmRow {
    /// The user's name for the connection (unique).
    pub name: String,
    pub base_url: String,
    pub added_at: String,
    /// What the swarm said last time (metadata, health, identity, status, registry).
    pub info: Option<serde_json::Value>,
}

/// A task as first seen.
#[derive(Debug, Clone)]
pub struct NewMailTask {
    pub task_id: String,
    /// The connection it runs on; None when imported.
    pub swarm: Option<String>,
    /// "live", or the imported file's name.
    pub source: String,
    pub subject: String,
    pub state: String,
    pub at: String,
}

/// A message of a task, as the MAIL crate read it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MailMessageRow {
    pub id: String,
    pub task_id: String,
    pub ts: String,
    pub msg_type: String,
    pub tier: u8,
    /// `type:address`, e.g. `agent:weather@swarm-b`.
    pub sender: String,
    pub recipients: Vec<String>,
    pub subject: String,
    pub body: String,
    pub system_error: bool,
    pub raw: String,
    /// Where the message departs from MAIL's schema (`/message/sender_swarm: null is not
    /// of type string`): it was kept as the swarm sent it, and this says what was odd.
    pub odd: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MailEventRow {
    pub event: String,
    pub at: Option<String>,
    pub description: String,
    pub data: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MailTaskRow {
    pub task_id: String,
    pub swarm: Option<String>,
    pub source: String,
    pub subject: String,
    /// running, completed, failed, interrupted, imported
    pub state: String,
    pub response: Option<String>,
    pub task_owner: Option<String>,
    pub contributors: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    pub messages: i64,
    /// Agents and users that sent or received a message, in order of appearance.
    pub participants: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MailTaskDetail {
    pub task: MailTaskRow,
    pub messages: Vec<MailMessageRow>,
    pub events: Vec<MailEventRow>,
}

const TASK_COLUMNS: &str = "t.task_id, t.swarm, t.source, t.subject, t.state, t.response, t.task_owner, t.contributors, t.created_at, t.updated_at,
    (SELECT count(*) FROM mail_messages m WHERE m.task_id = t.task_id)";

fn task_row(r: &Row<'_>) -> Result<MailTaskRow> {
    let contributors: String = r.get(7)?;
    Ok(MailTaskRow {
        task_id: r.get(0)?,
        swarm: r.get(1)?,
        source: r.get(2)?,
        subject: r.get(3)?,
        state: r.get(4)?,
        response: r.get(5)?,
        task_owner: r.get(6)?,
        contributors: serde_json::from_str(&contributors).unwrap_or_default(),
        created_at: r.get(8)?,
        updated_at: r.get(9)?,
        messages: r.get(10)?,
        participants: Vec::new(),
    })
}

fn message_row(r: &Row<'_>) -> Result<MailMessageRow> {
    let recipients: String = r.get(6)?;
    Ok(MailMessageRow {
        id: r.get(0)?,
        task_id: r.get(1)?,
        ts: r.get(2)?,
        msg_type: r.get(3)?,
        tier: r.get::<i64>(4)? as u8,
        sender: r.get(5)?,
        recipients: serde_json::from_str(&recipients).unwrap_or_default(),
        subject: r.get(7)?,
        body: r.get(8)?,
        system_error: r.get(9)?,
        raw: r.get(10)?,
        odd: r.get(11)?,
    })
}

fn participants(conn: &Db<'_>, task_id: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let stmt = conn.prepare_cached("SELECT sender, recipients FROM mail_messages WHERE task_id = ?1 ORDER BY row")?;
    let rows = stmt.query_map(args![task_id], |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)))?;
    for row in rows {
        let (s, rs) = row?;
        for p in std::iter::once(s).chain(serde_json::from_str::<Vec<String>>(&rs).unwrap_or_default()) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

impl Store {
    // ---- swarms ----------------------------------------------------------------------

    /// Adds a connection, or updates its address.
    pub fn mail_swarm_put(&self, name: &str, base_url: &str, at: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO mail_swarms (name, base_url, added_at) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO UPDATE SET base_url = ?2",
            args![name, base_url, at],
        )?;
        Ok(())
    }

    pub fn mail_swarm_set_info(&self, name: &str, info: &serde_json::Value) -> Result<()> {
        self.conn()?.execute("UPDATE mail_swarms SET info = ?2 WHERE name = ?1", args![name, info.to_string()])?;
        Ok(())
    }

    pub fn mail_swarms(&self) -> Result<Vec<MailSwarmRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached("SELECT name, base_url, added_at, info FROM mail_swarms ORDER BY name")?;
            let rows = stmt.query_map(args![], swarm_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub fn mail_swarm(&self, name: &str) -> Result<Option<MailSwarmRow>> {
        self.read(|c| c.query_row("SELECT name, base_url, added_at, info FROM mail_swarms WHERE name = ?1", args![name], swarm_row).optional())
    }

    /// Removes a connection; its tasks stay (history is the user's).
    pub fn mail_swarm_remove(&self, name: &str) -> Result<bool> {
        Ok(self.conn()?.execute("DELETE FROM mail_swarms WHERE name = ?1", args![name])? > 0)
    }

    // ---- tasks -----------------------------------------------------------------------

    /// Records a task the first time it is seen; a known task (a new turn, a re-import)
    /// is marked running again when live.
    pub fn mail_task_open(&self, t: &NewMailTask) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO mail_tasks (task_id, swarm, source, subject, state, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
             ON CONFLICT(task_id) DO UPDATE SET state = CASE WHEN ?5 = 'running' THEN 'running' ELSE mail_tasks.state END, updated_at = ?6,
                swarm = coalesce(mail_tasks.swarm, ?2), subject = CASE WHEN mail_tasks.subject = '' THEN ?4 ELSE mail_tasks.subject END",
            args![t.task_id, t.swarm, t.source, t.subject, t.state, t.at],
        )?;
        Ok(())
    }

    /// Keeps a message of a task; a message already kept (same task and id) is not
    /// repeated. Returns whether it was new.
    pub fn mail_message_add(&self, m: &MailMessageRow, at: &str) -> Result<bool> {
        let conn = self.conn()?;
        let n = conn.execute(
            "INSERT INTO mail_messages (id, task_id, ts, msg_type, tier, sender, recipients, subject, body, system_error, raw, odd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT DO NOTHING",
            args![
                m.id,
                m.task_id,
                m.ts,
                m.msg_type,
                m.tier as i64,
                m.sender,
                serde_json::to_string(&m.recipients)?,
                m.subject,
                m.body,
                m.system_error,
                m.raw,
                m.odd
            ],
        )?;
        conn.execute("UPDATE mail_tasks SET updated_at = ?2 WHERE task_id = ?1", args![m.task_id, at])?;
        Ok(n > 0)
    }

    pub fn mail_event_add(&self, task_id: &str, e: &MailEventRow) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO mail_events (task_id, event, at, description, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            args![task_id, e.event, e.at, e.description, e.data.as_ref().map(|d| d.to_string())],
        )?;
        Ok(())
    }

    /// The task a kept message belongs to.
    pub fn mail_message_task(&self, id: &str) -> Result<Option<String>> {
        self.read(|c| c.query_row("SELECT task_id FROM mail_messages WHERE id = ?1 ORDER BY row LIMIT 1", args![id], |r| r.get(0)).optional())
    }

    /// The newest task on `swarm` with this subject: where a MAIL 2.0 answer without a
    /// `reply_to` belongs.
    pub fn mail_task_by_subject(&self, swarm: &str, subject: &str) -> Result<Option<String>> {
        self.read(|c| {
            c.query_row(
                "SELECT task_id FROM mail_tasks WHERE swarm = ?1 AND subject = ?2 ORDER BY created_at DESC, rowid DESC LIMIT 1",
                args![swarm, subject],
                |r| r.get(0),
            )
            .optional()
        })
    }

    /// Records a task's owner and adds contributors (interswarm wrappers name them).
    pub fn mail_task_contributors(&self, task_id: &str, owner: &str, contributors: &[String]) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let known: Option<String> = tx.query_row("SELECT contributors FROM mail_tasks WHERE task_id = ?1", args![task_id], |r| r.get(0)).optional()?;
        let mut all: Vec<String> = known.and_then(|k| serde_json::from_str(&k).ok()).unwrap_or_default();
        for c in contributors {
            if !all.contains(c) {
                all.push(c.clone());
            }
        }
        tx.execute(
            "UPDATE mail_tasks SET task_owner = coalesce(task_owner, ?2), contributors = ?3 WHERE task_id = ?1",
            args![task_id, owner, serde_json::to_string(&all)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Ends a turn of a task: completed, failed or interrupted, with the swarm's answer.
    pub fn mail_task_finish(&self, task_id: &str, state: &str, response: Option<&str>, at: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE mail_tasks SET state = ?2, response = coalesce(?3, response), updated_at = ?4 WHERE task_id = ?1",
            args![task_id, state, response, at],
        )?;
        Ok(())
    }

    /// Tasks, newest first; with `query`, those whose subject, or any message's subject,
    /// body, sender or recipients, contains it (case-insensitive).
    pub fn mail_tasks(&self, query: Option<&str>, limit: usize) -> Result<Vec<MailTaskRow>> {
        self.read(|c| {
            let q = query.map(str::trim).filter(|q| !q.is_empty());
            let mut rows = match q {
                None => {
                    let stmt = c.prepare_cached(&format!("SELECT {TASK_COLUMNS} FROM mail_tasks t ORDER BY t.updated_at DESC, t.task_id LIMIT ?1"))?;

                    stmt.query_map(args![limit as i64], task_row)?.collect::<Result<Vec<_>>>()?
                }
                Some(q) => {
                    let like = format!("%{}%", q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
                    let stmt = c.prepare_cached(&format!(
                        "SELECT {TASK_COLUMNS} FROM mail_tasks t WHERE t.subject LIKE ?1 ESCAPE '\\' OR t.task_id IN (
                            SELECT task_id FROM mail_messages WHERE subject LIKE ?1 ESCAPE '\\' OR body LIKE ?1 ESCAPE '\\'
                                OR sender LIKE ?1 ESCAPE '\\' OR recipients LIKE ?1 ESCAPE '\\')
                         ORDER BY t.updated_at DESC, t.task_id LIMIT ?2"
                    ))?;

                    stmt.query_map(args![like, limit as i64], task_row)?.collect::<Result<Vec<_>>>()?
                }
            };
            for r in &mut rows {
                r.participants = participants(c, &r.task_id)?;
            }
            Ok(rows)
        })
    }

    /// A task with its messages in arrival order and the other events it reported.
    pub fn mail_task(&self, task_id: &str) -> Result<Option<MailTaskDetail>> {
        self.read(|c| {
            let Some(mut task) = c.query_row(&format!("SELECT {TASK_COLUMNS} FROM mail_tasks t WHERE t.task_id = ?1"), args![task_id], task_row).optional()? else {
                return Ok(None);
            };
            task.participants = participants(c, task_id)?;
            let stmt = c.prepare_cached(
                "SELECT id, task_id, ts, msg_type, tier, sender, recipients, subject, body, system_error, raw, odd FROM mail_messages WHERE task_id = ?1 ORDER BY row",
            )?;
            let messages = stmt.query_map(args![task_id], message_row)?.collect::<Result<Vec<_>>>()?;
            let stmt = c.prepare_cached("SELECT event, at, description, data FROM mail_events WHERE task_id = ?1 ORDER BY row")?;
            let events = stmt
                .query_map(args![task_id], |r| {
                    let data: Option<String> = r.get(3)?;
                    Ok(MailEventRow { event: r.get(0)?, at: r.get(1)?, description: r.get(2)?, data: data.and_then(|d| serde_json::from_str(&d).ok()) })
                })?
                .collect::<Result<Vec<_>>>()?;
            Ok(Some(MailTaskDetail { task, messages, events }))
        })
    }
}

fn swarm_row(r: &Row<'_>) -> Result<MailSwarmRow> {
    let info: Option<String> = r.get(3)?;
    Ok(MailSwarmRow { name: r.get(0)?, base_url: r.get(1)?, added_at: r.get(2)?, info: info.and_then(|i| serde_json::from_str(&i).ok()) })
}
