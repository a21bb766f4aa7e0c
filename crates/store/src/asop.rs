//! The ASOP guardian's rules, its audit of steps, and agents' ping timeouts. Plain rows:
//! the asop crate reads and decides, this keeps what it decided.

use crate::sql::{args, Optional, Row};
use serde::{Deserialize, Serialize};

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AsopRuleRow {
    pub id: i64,
    pub agent: String,
    pub method: String,
    pub tool: String,
    /// `{argument, op, value}` or none.
    pub condition: Option<serde_json::Value>,
    pub action: String,
    pub redact: Option<String>,
    pub note: Option<String>,
    /// "user" (written in the app) or "always" (an answer the user made a rule).
    pub source: String,
    pub created_at: String,
    /// When the rule ends (UTC); none: it lasts until removed.
    #[serde(default)]
    pub until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AsopStepRow {
    pub row: i64,
    pub session_id: Option<String>,
    pub turn_id: Option<String>,
    pub step_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub method: String,
    /// The step in plain words.
    pub summary: String,
    pub reasoning: Option<String>,
    pub request: serde_json::Value,
    /// allow, deny, modify, pending (waiting for the user), or error.
    pub decision: String,
    pub message: Option<String>,
    pub rule_id: Option<i64>,
    /// rule, user, timeout, default, unregistered, blocked, invalid
    pub decided_by: Option<String>,
    pub created_at: String,
    pub decided_at: Option<String>,
    /// What answered it once it went on (an MCP call's result: its size, whether it
    /// failed, its first words, its risk flags), as the door that relayed it read it.
    #[serde(default)]
    pub answer: Option<serde_json::Value>,
}

/// A step as first recorded.
#[derive(Debug, Clone)]
pub struct NewAsopStep {
    pub session_id: Option<String>,
    pub turn_id: Option<String>,
    pub step_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub method: String,
    pub summary: String,
    pub reasoning: Option<String>,
    pub request: serde_json::Value,
    pub decision: String,
    pub message: Option<String>,
    pub rule_id: Option<i64>,
    pub decided_by: Option<String>,
    pub at: String,
}

fn rule_row(r: &Row<'_>) -> Result<AsopRuleRow> {
    let c: Option<String> = r.get(4)?;
    Ok(AsopRuleRow {
        id: r.get(0)?,
        agent: r.get(1)?,
        method: r.get(2)?,
        tool: r.get(3)?,
        condition: c.and_then(|c| serde_json::from_str(&c).ok()),
        action: r.get(5)?,
        redact: r.get(6)?,
        note: r.get(7)?,
        source: r.get(8)?,
        created_at: r.get(9)?,
        until: r.get(10)?,
    })
}

fn step_row(r: &Row<'_>) -> Result<AsopStepRow> {
    let req: String = r.get(9)?;
    Ok(AsopStepRow {
        row: r.get(0)?,
        session_id: r.get(1)?,
        turn_id: r.get(2)?,
        step_id: r.get(3)?,
        agent_id: r.get(4)?,
        agent_name: r.get(5)?,
        method: r.get(6)?,
        summary: r.get(7)?,
        reasoning: r.get(8)?,
        request: serde_json::from_str(&req).unwrap_or_default(),
        decision: r.get(10)?,
        message: r.get(11)?,
        rule_id: r.get(12)?,
        decided_by: r.get(13)?,
        created_at: r.get(14)?,
        decided_at: r.get(15)?,
        answer: r.get::<Option<String>>(16)?.and_then(|a| serde_json::from_str(&a).ok()),
    })
}

const STEP: &str = "SELECT row, session_id, turn_id, step_id, agent_id, agent_name, method, summary, reasoning, request, decision, message, rule_id, decided_by, created_at, decided_at, answer FROM asop_steps";

/// A guardian session in the list: its id, its agent, how many steps, the last step's time.
pub type SessionSummary = (String, Option<String>, i64, String);

impl Store {
    pub fn asop_rule_add(&self, r: &AsopRuleRow) -> Result<i64> {
        self.sealed_write(|tx| {
            tx.query_row(
                "INSERT INTO asop_rules (agent, method, tool, condition, action, redact, note, source, created_at, until) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
                args![r.agent, r.method, r.tool, r.condition.as_ref().map(|c| c.to_string()), r.action, r.redact, r.note, r.source, r.created_at, r.until],
                |r| r.get::<i64>(0),
            )
        })
    }

    /// The guardian's rules as the gate sealed them (one added or changed outside
    /// Gatehouse is left out: the agent is asked about, as without a rule).
    pub fn asop_rules(&self) -> Result<Vec<AsopRuleRow>> {
        // Read on every step an agent takes, between its writes: `read_warm`.
        self.read_warm(|c| {
            c.snapshot(|db| {
                let sealed = self.sealed_ids(db, crate::seal::ASOP_RULES)?;
                db.prepare_cached("SELECT id, agent, method, tool, condition, action, redact, note, source, created_at, until FROM asop_rules ORDER BY id")?
                    .query_map(args![], rule_row)?
                    .filter(|r| r.as_ref().map_or(true, |r| sealed.contains(&r.id.to_string())))
                    .collect::<Result<Vec<_>>>()
            })
        })
    }

    pub fn asop_rule_remove(&self, id: i64) -> Result<bool> {
        self.sealed_write(|tx| Ok(tx.execute("DELETE FROM asop_rules WHERE id = ?1", args![id])? > 0))
    }

    pub fn asop_step_add(&self, s: &NewAsopStep) -> Result<i64> {
        step_insert(&self.conn()?.db(), s)
    }

    /// [`Store::asop_step_add`] whose commit does not wait for the disk: the step's row,
    /// and when it is durable (at once on PostgreSQL and in memory, whose commits are).
    /// For a record that must be on disk before what it allowed is acknowledged, not
    /// before it starts: the caller waits for the [`Durable`] in between.
    pub fn asop_step_add_flushed_later(&self, s: &NewAsopStep) -> Result<(i64, crate::Durable)> {
        let Some(flusher) = self.flusher() else { return Ok((self.asop_step_add(s)?, crate::Durable::now())) };
        let row = self.conn()?.unsynced(|conn| step_insert(&conn.db(), s))?;
        Ok((row, flusher.ask()))
    }

    /// [`Store::asop_step_add_flushed_later`] of a step its door let in without counting
    /// it yet: counted against its sender's rate in the same transaction (one write a step
    /// instead of two), or, when the registry changed since it was let in or it is over
    /// the rate, neither counted nor kept (the door judges it again).
    pub fn asop_step_add_counted(&self, s: &NewAsopStep, count: &crate::RateCount) -> Result<std::result::Result<(i64, crate::Durable), crate::AcceptRefusal>> {
        let kept = self.conn()?.unsynced(|conn| {
            let tx = conn.transaction()?;
            if let Err(refused) = crate::replay::count_in(&tx.db(), &count.sender, count.received_ms, &count.limits, Some(count.version))? {
                return Ok(Err(refused));
            }
            let row = step_insert(&tx.db(), s)?;
            tx.commit()?;
            Ok(Ok(row))
        })?;
        // On disk now where the store has no flushing thread (PostgreSQL, memory).
        Ok(kept.map(|row| (row, self.flusher().map_or_else(crate::Durable::now, |f| f.ask()))))
    }

    /// Settles a pending step: what was decided, by whom.
    pub fn asop_step_decide(&self, row: i64, decision: &str, message: Option<&str>, rule_id: Option<i64>, decided_by: &str, at: &str) -> Result<bool> {
        Ok(self.conn()?.execute(
            "UPDATE asop_steps SET decision = ?2, message = ?3, rule_id = coalesce(?4, rule_id), decided_by = ?5, decided_at = ?6 WHERE row = ?1 AND decision = 'pending'",
            args![row, decision, message, rule_id, decided_by, at],
        )? > 0)
    }

    /// Keeps what answered steps of `agent_id` (by step id), in one transaction, each
    /// once: only a step that went on (allowed or changed) has an answer, and the first one
    /// told is kept. The rows of the steps it was kept for.
    ///
    /// On SQLite its commit does not wait for the disk: an answer is what the user reads of
    /// a result the app already has (nothing acts on it), and a wait for the disk here
    /// would hold up the calls made meanwhile; the next durable write syncs it. (Written a
    /// few answers a transaction instead, the calls' p99 was no better: one commit is
    /// cheaper than many.)
    pub fn asop_steps_answered(&self, agent_id: &str, answers: &[(String, serde_json::Value)]) -> Result<Vec<i64>> {
        self.conn()?.unsynced(|conn| {
            let tx = conn.transaction()?;
            let mut rows = Vec::new();
            for (step_id, answer) in answers {
                let row = tx
                    .query_row(
                        "UPDATE asop_steps SET answer = ?3 WHERE agent_id = ?1 AND step_id = ?2 AND answer IS NULL AND decision IN ('allow', 'modify') RETURNING row",
                        args![agent_id, step_id, answer.to_string()],
                        |r| r.get::<i64>(0),
                    )
                    .optional()?;
                rows.extend(row);
            }
            tx.commit()?;
            Ok(rows)
        })
    }

    pub fn asop_step(&self, row: i64) -> Result<Option<AsopStepRow>> {
        self.read(|c| c.query_row(&format!("{STEP} WHERE row = ?1"), args![row], step_row).optional())
    }

    /// Steps waiting for the user, oldest first.
    pub fn asop_pending(&self) -> Result<Vec<AsopStepRow>> {
        self.read(|c| c.prepare_cached(&format!("{STEP} WHERE decision = 'pending' ORDER BY row"))?.query_map(args![], step_row)?.collect::<Result<Vec<_>>>())
    }

    /// A session's steps in order (its timeline).
    pub fn asop_session(&self, session_id: &str) -> Result<Vec<AsopStepRow>> {
        self.read(|c| {
            c.prepare_cached(&format!("{STEP} WHERE session_id = ?1 ORDER BY row"))?.query_map(args![session_id], step_row)?.collect::<Result<Vec<_>>>()
        })
    }

    /// An agent's last `limit` steps, newest first (an MCP server's calls).
    pub fn asop_agent_steps(&self, agent_id: &str, limit: usize) -> Result<Vec<AsopStepRow>> {
        self.read(|c| {
            c.prepare_cached(&format!("{STEP} WHERE agent_id = ?1 ORDER BY row DESC LIMIT ?2"))?
                .query_map(args![agent_id, limit as i64], step_row)?
                .collect::<Result<Vec<_>>>()
        })
    }

    /// Sessions, newest activity first: (session id, agent name, steps, last step time).
    pub fn asop_sessions(&self, limit: usize) -> Result<Vec<SessionSummary>> {
        self.read(|c| {
            c.prepare_cached(
                "SELECT session_id, max(agent_name), count(*), max(created_at) FROM asop_steps WHERE session_id IS NOT NULL GROUP BY session_id ORDER BY max(row) DESC LIMIT ?1",
            )?
            .query_map(args![limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<Vec<_>>>()
        })
    }

    /// Steps left waiting by a guardian that stopped (its agents' requests are gone with
    /// it): marked as never answered.
    pub fn asop_abandon_pending(&self, at: &str) -> Result<usize> {
        self.conn()?.execute(
            "UPDATE asop_steps SET decision = 'error', message = 'The guardian stopped before the user answered', decided_by = 'abandoned', decided_at = ?1 WHERE decision = 'pending'",
            args![at],
        )
    }

    pub fn asop_agent_ping(&self, agent_id: &str, timeout_ms: Option<u64>, at: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO asop_agents (agent_id, timeout_ms, last_ping) VALUES (?1, ?2, ?3) ON CONFLICT(agent_id) DO UPDATE SET timeout_ms = coalesce(?2, asop_agents.timeout_ms), last_ping = ?3",
            args![agent_id, timeout_ms.map(|t| t as i64), at],
        )?;
        Ok(())
    }

    pub fn asop_agent_timeout(&self, agent_id: &str) -> Result<Option<u64>> {
        self.read(|c| {
            Ok(c.query_row("SELECT timeout_ms FROM asop_agents WHERE agent_id = ?1", args![agent_id], |r| r.get::<Option<i64>>(0))
                .optional()?
                .flatten()
                .map(|t| t as u64))
        })
    }
}

fn step_insert(conn: &crate::sql::Db<'_>, s: &NewAsopStep) -> Result<i64> {
    conn.query_row(
        "INSERT INTO asop_steps (session_id, turn_id, step_id, agent_id, agent_name, method, summary, reasoning, request, decision, message, rule_id, decided_by, created_at, decided_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, CASE WHEN ?10 = 'pending' THEN NULL ELSE ?14 END) RETURNING row",
        args![s.session_id, s.turn_id, s.step_id, s.agent_id, s.agent_name, s.method, s.summary, s.reasoning, s.request.to_string(), s.decision, s.message, s.rule_id, s.decided_by, s.at],
        |r| r.get::<i64>(0),
    )
}
