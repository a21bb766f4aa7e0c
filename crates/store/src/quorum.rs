//! Quorum: what several approvers must decide together. A rule names approver devices
//! and how many of them must agree ("any one", "n of them", "all"), for a scope, a sender,
//! or everything. Each device votes once on an item as it saw it (its digest); the vote
//! that reaches the quorum decides, and only one can: the item's row is locked while a
//! vote is counted, so two votes on two nodes at once cannot both decide.

use crate::seal::{Judged, APPROVERS, QUORUM_RULES};
use crate::sql::{args, Optional};
use crate::*;

/// A rule: which items it covers and who must agree.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct QuorumRule {
    pub id: i64,
    /// The scope it covers (none: any scope).
    pub scope: Option<String>,
    /// The sender it covers (none: any sender).
    pub sender: Option<String>,
    /// How many of `approvers` must agree (0: all of them).
    pub need: u32,
    /// The approver devices whose votes count (their ids).
    pub approvers: Vec<String>,
    /// A deny (or block) by any one of them ends it at once.
    pub deny_ends: bool,
    pub created_at: String,
}

/// What a vote did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vote {
    /// Counted; `agreeing` votes so far for the same decision.
    Counted { agreeing: u32 },
    /// This vote reached the quorum: its decision is carried out, once.
    Decides,
    /// The item was decided already (by an earlier quorum).
    AlreadyDecided,
    /// This device voted on this item before.
    AlreadyVoted,
}

/// One device's vote on an item as it saw it.
#[derive(Debug, Clone, Copy)]
pub struct Ballot<'a> {
    pub item: &'a str,
    pub digest: &'a str,
    pub approver: &'a str,
    /// The decision (and how long it lasts), as the approver sent it: votes agree when
    /// these are equal.
    pub decision: &'a str,
    /// How many agreeing votes decide.
    pub needed: u32,
    /// This vote ends it at once (a deny, under a rule where one deny does).
    pub ends: bool,
    /// The device's signed request that cast it, kept so every count checks it again: a
    /// vote row written into the database by anyone else proves nothing.
    pub proof: &'a str,
}

/// A stored vote, for the caller's check of its proof (the device's signature over the
/// request that cast it, for this item, digest and decision).
pub struct Kept<'a> {
    pub item: &'a str,
    pub digest: &'a str,
    /// The device's key, as the gate enrolled it.
    pub device_key: &'a str,
    pub decision: &'a str,
    pub proof: Option<&'a str>,
}

/// Checks a stored vote's proof.
pub type Proven<'p> = &'p dyn Fn(&Kept<'_>) -> bool;

/// A vote as the prompt shows who decided so far.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CastVote {
    pub approver_id: String,
    /// The decision (and how long it lasts), as the approver sent it.
    pub decision: String,
    pub at: String,
}

fn rule(r: &crate::sql::Row<'_>) -> Result<QuorumRule> {
    let approvers: String = r.get(4)?;
    Ok(QuorumRule {
        id: r.get(0)?,
        scope: r.get(1)?,
        sender: r.get(2)?,
        need: u32::try_from(r.get::<i64>(3)?).unwrap_or(0),
        approvers: serde_json::from_str(&approvers).unwrap_or_default(),
        deny_ends: r.get::<i64>(5)? != 0,
        created_at: r.get(6)?,
    })
}

impl Store {
    pub fn quorum_rule_add(&self, r: &QuorumRule) -> Result<i64> {
        let approvers = serde_json::to_string(&r.approvers)?;
        self.sealed_write(|tx| {
            tx.query_row(
                "INSERT INTO quorum_rules (scope, sender, need, approvers, deny_ends, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                args![r.scope, r.sender, i64::from(r.need), approvers, i64::from(r.deny_ends), r.created_at],
                |row| row.get(0),
            )
        })
    }

    /// The rules, as the gate sealed them. A rule changed or taken out outside Gatehouse
    /// is an error, not a rule less (without it one approver could decide what it asked
    /// several to: `StateChanged`); a rule added outside Gatehouse is left out.
    pub fn quorum_rules(&self) -> Result<Vec<QuorumRule>> {
        self.read(|c| {
            c.snapshot(|db| {
                let rows = QUORUM_RULES.rows(db)?;
                let view = self.view(db)?;
                let mut sealed = std::collections::HashSet::new();
                if let Some(view) = &view {
                    if let Some(why) = &view.broken {
                        return Err(StoreError::StateChanged(why.clone()));
                    }
                    let changed = || StoreError::StateChanged("a quorum rule was changed or taken out of the gate's database outside Gatehouse".into());
                    if view.seals.keys().any(|k| k.0 == QUORUM_RULES.name && !rows.contains_key(&k.1)) {
                        return Err(changed());
                    }
                    for (id, cols) in &rows {
                        match view.judge(QUORUM_RULES, id, Some(cols)) {
                            Judged::Sealed => {
                                sealed.insert(id.clone());
                            }
                            _ if view.seals.contains_key(&(QUORUM_RULES.name.to_string(), id.clone())) => return Err(changed()),
                            _ => {}
                        }
                    }
                } else {
                    sealed.extend(rows.into_keys());
                }
                db.query_map("SELECT id, scope, sender, need, approvers, deny_ends, created_at FROM quorum_rules ORDER BY id", args![], rule)?
                    .filter(|r| r.as_ref().map_or(true, |r| sealed.contains(&r.id.to_string())))
                    .collect()
            })
        })
    }

    /// Whether it was there.
    pub fn quorum_rule_remove(&self, id: i64) -> Result<bool> {
        self.sealed_write(|tx| Ok(tx.execute("DELETE FROM quorum_rules WHERE id = ?1", args![id])? > 0))
    }

    /// The votes cast on `item` as `digest` names it, oldest first: only an enrolled
    /// device's, whose proof `proven` accepts.
    pub fn quorum_votes(&self, item: &str, digest: &str, proven: Proven<'_>) -> Result<Vec<CastVote>> {
        self.read(|c| c.snapshot(|db| self.counted_votes(db, item, digest, None, proven)))
    }

    /// The votes on `item`/`digest` (for `decision`, or all) that count: their device is
    /// enrolled as the gate sealed it and their proof checks.
    fn counted_votes(&self, db: &crate::sql::Db<'_>, item: &str, digest: &str, decision: Option<&str>, proven: Proven<'_>) -> Result<Vec<CastVote>> {
        let enrolled = self.sealed_ids(db, APPROVERS)?;
        let rows: Vec<(String, String, String, String, Option<String>)> = db
            .query_map(
                "SELECT v.approver_id, v.decision, v.at, a.public_key, v.proof FROM quorum_votes v JOIN approvers a ON a.id = v.approver_id
                 WHERE v.item = ?1 AND v.digest = ?2 ORDER BY v.n",
                args![item, digest],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?
            .collect::<Result<_>>()?;
        Ok(rows
            .into_iter()
            .filter(|(id, d, _, key, proof)| {
                decision.is_none_or(|want| want == d)
                    && enrolled.contains(id)
                    && proven(&Kept { item, digest, device_key: key, decision: d, proof: proof.as_deref() })
            })
            .map(|(approver_id, decision, at, _, _)| CastVote { approver_id, decision, at })
            .collect())
    }

    /// Counts a ballot: it decides when `needed` votes agree, or at once when it `ends`.
    /// In one transaction holding the item's row, so one vote decides, once.
    pub fn quorum_vote(&self, b: &Ballot<'_>, at: &str, proven: Proven<'_>) -> Result<Vote> {
        let Ballot { item, digest, approver, decision, needed, ends, proof } = *b;
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute("INSERT INTO quorum_items (item, digest) VALUES (?1, ?2) ON CONFLICT (item, digest) DO NOTHING", args![item, digest])?;
        // Taking the row: a second vote on another node waits here until this one commits.
        let decided: Option<String> =
            tx.query_row("UPDATE quorum_items SET item = item WHERE item = ?1 AND digest = ?2 RETURNING decided", args![item, digest], |r| r.get(0))?;
        if decided.is_some() {
            return Ok(Vote::AlreadyDecided);
        }
        let cast = tx.execute(
            // n: the order votes were cast in (counted under the item's row lock).
            "INSERT INTO quorum_votes (item, digest, approver_id, n, decision, at, proof)
             VALUES (?1, ?2, ?3, (SELECT count(*) + 1 FROM quorum_votes WHERE item = ?1 AND digest = ?2), ?4, ?5, ?6)
             ON CONFLICT (item, digest, approver_id) DO NOTHING",
            args![item, digest, approver, decision, at, proof],
        )?;
        if cast == 0 {
            return Ok(Vote::AlreadyVoted);
        }
        // Only enrolled devices' votes count (a removed device's are withdrawn with it;
        // this holds even for a vote cast while it was being removed), each as its device
        // signed it: a vote row put in outside Gatehouse counts for nothing.
        let agreeing = self.counted_votes(&tx.db(), item, digest, Some(decision), proven)?.len();
        let agreeing = u32::try_from(agreeing).unwrap_or(u32::MAX);
        let out = if ends || agreeing >= needed {
            tx.execute("UPDATE quorum_items SET decided = ?3, decided_at = ?4 WHERE item = ?1 AND digest = ?2", args![item, digest, decision, at])?;
            Vote::Decides
        } else {
            Vote::Counted { agreeing }
        };
        tx.commit()?;
        Ok(out)
    }

    /// Takes back `approver`'s deciding vote on `item` as `digest` names it, and the
    /// decision it made, when that decision could not be carried out: the item waits as
    /// before the vote.
    pub fn quorum_withdraw(&self, item: &str, digest: &str, approver: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute("UPDATE quorum_items SET decided = NULL, decided_at = NULL WHERE item = ?1 AND digest = ?2", args![item, digest])?;
        tx.execute("DELETE FROM quorum_votes WHERE item = ?1 AND digest = ?2 AND approver_id = ?3", args![item, digest, approver])?;
        tx.commit()?;
        Ok(())
    }

    /// Whether `item` as `digest` names it was decided by a quorum.
    pub fn quorum_decided(&self, item: &str, digest: &str) -> Result<Option<String>> {
        Ok(self
            .read(|c| {
                c.query_row("SELECT decided FROM quorum_items WHERE item = ?1 AND digest = ?2", args![item, digest], |r| r.get::<Option<String>>(0)).optional()
            })?
            .flatten())
    }
}
