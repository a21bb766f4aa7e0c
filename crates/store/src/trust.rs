//! Who may reach the user: the trust registry, blocked senders, the queue of unknown
//! senders waiting for consent, and the admission view the pipeline reads per sender.

use crate::seal::{judge_in, Judged, BLOCKED, REVOKED, TRUST};
use crate::sql::{args, Db, Optional};
use crate::*;

/// Senders whose admission view is kept between envelopes.
pub(crate) const MAX_CACHED_ADMISSIONS: usize = 4096;

/// What the pipeline must know about a sender before deciding, read in one snapshot
/// (one read transaction instead of one per question on the hot path).
#[derive(Debug, Clone)]
pub struct Admission {
    pub blocked: bool,
    /// Why the user revoked this key, if they did (EPP v1.1 SENDER_REVOKED).
    pub revoked: Option<String>,
    pub trust: Option<TrustEntry>,
    /// The raw JSON of the setting the caller asked for alongside.
    pub setting: Option<String>,
    /// Counts every change to trust, blocks and settings (in any process).
    pub version: i64,
}

/// An unknown sender's correctly signed knock, recorded with its rejection receipt so
/// the user can be asked.
#[derive(Debug, Clone)]
pub struct Knock {
    /// The door it knocked at (its name as the composition registered it).
    pub door: &'static str,
    pub sender: String,
    pub scope: String,
    pub envelope_id: String,
    pub at: String,
}

/// Unknown senders waiting for the user at once; past this the oldest request goes.
pub const MAX_PENDING: usize = 256;

/// Scopes remembered per waiting sender.
pub const MAX_SCOPES_TRIED: usize = 16;

pub(crate) fn upsert_pending(conn: &Db<'_>, k: &Knock) -> Result<()> {
    let key = sender_key(&k.sender);
    let scopes: Option<String> =
        conn.prepare_cached("SELECT scopes FROM pending_senders WHERE public_key = ?1")?.query_row(args![&key], |r| r.get(0)).optional()?;
    let new_key = scopes.is_none();
    let mut scopes: Vec<String> = match scopes {
        Some(s) => serde_json::from_str(&s)?,
        None => Vec::new(),
    };
    if !scopes.contains(&k.scope) && scopes.len() < MAX_SCOPES_TRIED {
        scopes.push(k.scope.clone());
    }
    if new_key {
        // The queue is bounded: a fresh signing key costs a stranger nothing, so past the
        // bound the request that waited longest without a word is dropped.
        conn.prepare_cached(
            "DELETE FROM pending_senders WHERE public_key IN
               (SELECT public_key FROM pending_senders ORDER BY last_seen ASC, public_key
                LIMIT (SELECT CASE WHEN count(*) >= ?1 THEN count(*) - ?1 + 1 ELSE 0 END FROM pending_senders))",
        )?
        .execute(args![MAX_PENDING as i64])?;
    }
    conn.prepare_cached(
        "INSERT INTO pending_senders (public_key, first_seen, last_seen, count, scopes, last_envelope_id, door)
         VALUES (?1, ?2, ?2, 1, ?3, ?4, ?5)
         ON CONFLICT(public_key) DO UPDATE SET last_seen = ?2, count = pending_senders.count + 1, scopes = ?3, last_envelope_id = ?4, door = ?5",
    )?
    .execute(args![key, k.at, serde_json::to_string(&scopes)?, k.envelope_id, k.door])?;
    Ok(())
}

/// A trust entry from its sealed row (`seal::TRUST`'s columns) and what its door keeps
/// about it, as of `db`'s snapshot, in one query: `None` when any of them is not as the
/// gate sealed it.
pub(crate) fn entry_in(db: &Db<'_>, view: Option<&crate::seal::View>, key: &str) -> Result<Option<TrustEntry>> {
    let Some(rows) = crate::entry_facts::rows(db, key)? else {
        // No row: an entry whose seal says it should be here is not one either.
        return Ok(None);
    };
    let judged = |table: &crate::seal::Table, row: Option<&[Option<String>]>| crate::seal::judge_row(view, table, key, row);
    if judged(TRUST, Some(&rows.trust)) != Judged::Sealed {
        return Ok(None);
    }
    let Some(facts) = crate::entry_facts::judged(&rows, judged)? else { return Ok(None) };
    let mut cols = rows.trust;
    let mut take = |i: usize| cols.get_mut(i).and_then(Option::take);
    let (name, added_at, policy, door) = (take(0).unwrap_or_default(), take(1).unwrap_or_default(), take(2).unwrap_or_default(), take(3));
    let door = match door {
        Some(d) => d,
        // Sealed before entries recorded their door and not moved yet (a store that seals
        // nothing): read as it would be moved.
        None => crate::entry_facts::door_before_doors(key, &serde_json::from_str(&policy)?).to_string(),
    };
    Ok(Some(TrustEntry { public_key: key.to_string(), name, added_at, door, policy: serde_json::from_str(&policy)?, facts }))
}

/// What a revocation says: its reason, or that its row was taken out.
fn revocation(judged: Judged, row: Option<Vec<Option<String>>>) -> Option<String> {
    match judged {
        Judged::Absent => None,
        Judged::Removed => Some("its revocation was taken out of the gate's database outside Gatehouse".into()),
        // A row that keeps a key out is kept even unsealed: refusing is the safe side.
        Judged::Sealed | Judged::Unsealed => Some(row.and_then(|mut c| c.get_mut(1).and_then(Option::take)).unwrap_or_default()),
    }
}

/// The name the user gave the entry of `key`, where its row is as the gate sealed it, in
/// the snapshot `db` is in (`view`: its seals).
pub(crate) fn sealed_name_in(db: &crate::sql::Db<'_>, view: Option<&crate::seal::View>, key: &str) -> Result<Option<String>> {
    Ok(match judge_in(db, view, TRUST, &sender_key(key))? {
        (Judged::Sealed, Some(cols)) => cols.into_iter().next().flatten(),
        _ => None,
    })
}

impl Store {
    pub fn trust_add(&self, entry: &TrustEntry) -> Result<()> {
        let key = sender_key(&entry.public_key);
        self.sealed_write(|tx| {
            // A row the gate never sealed was never its own: the user's entry replaces it.
            if self.judge(&tx.db(), TRUST, &key)?.0 == Judged::Unsealed {
                tx.execute("DELETE FROM trust WHERE public_key = ?1", args![&key])?;
            }
            let n = tx.execute(
                "INSERT INTO trust (public_key, name, added_at, policy, door) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                args![key, entry.name, entry.added_at, serde_json::to_string(&entry.policy)?, entry.door],
            )?;
            if n == 0 {
                return Err(StoreError::AlreadyTrusted(key.clone()));
            }
            crate::entry_facts::write(tx, &key, &entry.facts)?;
            crate::contacts::ensure_contact(&tx.db(), &key, &entry.name, &entry.added_at)?;
            tx.execute("DELETE FROM pending_senders WHERE public_key = ?1", args![&key])?;
            Ok(())
        })
    }

    /// Changes an entry's policy (and name, and what its door keeps, when given).
    pub fn trust_update(&self, key: &str, name: Option<&str>, policy: &Policy, facts: Option<&crate::entry_facts::Facts>) -> Result<()> {
        let key = sender_key(key);
        self.sealed_write(|tx| {
            // Only the gate's own entry is changed (and sealed): never one put there outside it.
            let view = self.view(&tx.db())?;
            if entry_in(&tx.db(), view.as_deref(), &key)?.is_none() {
                return Err(StoreError::NotTrusted(key.clone()));
            }
            tx.execute("UPDATE trust SET policy = ?2, name = COALESCE(?3, name) WHERE public_key = ?1", args![key, serde_json::to_string(policy)?, name])?;
            if let Some(facts) = facts {
                crate::entry_facts::write(tx, &key, facts)?;
            }
            Ok(())
        })
    }

    /// The sender's trust entry, if the gate sealed it (a row added or changed outside
    /// Gatehouse is no entry).
    pub fn trust_get(&self, key: &str) -> Result<Option<TrustEntry>> {
        let key = sender_key(key);
        self.read(|c| {
            c.snapshot(|db| {
                let view = self.view(db)?;
                entry_in(db, view.as_deref(), &key)
            })
        })
    }

    /// The name the user gave `key`'s entry, if its row is as the gate sealed it: what the
    /// runner tells a program it runs for, one small read per envelope run (the entry's
    /// door facts are not read: nothing is decided on a name).
    pub fn trust_name(&self, key: &str) -> Result<Option<String>> {
        Ok(self.trust_names([key])?.remove(key))
    }

    /// The names the user gave the entries of `keys` (each once), where the entry's row is
    /// as the gate sealed it, in one snapshot: what a list shows beside what each key sent.
    /// A name put into the database beside the gate is not shown (it would show a
    /// stranger's message as a friend's).
    pub fn trust_names<'k>(&self, keys: impl IntoIterator<Item = &'k str>) -> Result<std::collections::HashMap<String, String>> {
        let keys: std::collections::BTreeSet<&str> = keys.into_iter().collect();
        if keys.is_empty() {
            return Ok(Default::default());
        }
        self.read(|c| {
            c.snapshot(|db| {
                let view = self.view(db)?;
                let mut names = std::collections::HashMap::new();
                for key in keys {
                    if let Some(name) = sealed_name_in(db, view.as_deref(), key)? {
                        names.insert(key.to_string(), name);
                    }
                }
                Ok(names)
            })
        })
    }

    /// Every sealed trust entry.
    pub fn trust_list(&self) -> Result<Vec<TrustEntry>> {
        self.read(|c| {
            c.snapshot(|db| {
                let view = self.view(db)?;
                let keys: Vec<String> =
                    db.query_map("SELECT public_key FROM trust ORDER BY name, public_key", args![], |r| r.get(0))?.collect::<Result<_>>()?;
                let mut out = Vec::with_capacity(keys.len());
                for key in keys {
                    out.extend(entry_in(db, view.as_deref(), &key)?);
                }
                Ok(out)
            })
        })
    }

    /// Removes a sender and, in the same transaction, every bearer token issued to it: a
    /// token is for the trust it was issued under, and re-adding the sender later must
    /// not bring old tokens back to life.
    pub fn trust_remove(&self, key: &str) -> Result<bool> {
        let key = sender_key(key);
        self.sealed_write(|tx| {
            let removed = tx.execute("DELETE FROM trust WHERE public_key = ?1", args![&key])? > 0;
            crate::entry_facts::forget(tx, &key)?;
            tx.execute("DELETE FROM uamp_tokens WHERE sender = ?1", args![&key])?;
            tx.execute("DELETE FROM key_changes WHERE sender = ?1", args![&key])?;
            crate::contacts::forget_key(&tx.db(), &key)?;
            Ok(removed)
        })
    }

    /// Records that an unknown (but correctly signing) sender knocked.
    pub fn pending_record(&self, door: &'static str, key: &str, scope: &str, envelope_id: &str, now: &str) -> Result<()> {
        upsert_pending(
            &self.conn()?.db(),
            &Knock { door, sender: key.to_string(), scope: scope.to_string(), envelope_id: envelope_id.to_string(), at: now.to_string() },
        )
    }

    pub fn pending_list(&self) -> Result<Vec<PendingSender>> {
        self.read(|conn| {
            let stmt =
                conn.prepare("SELECT public_key, first_seen, last_seen, count, scopes, last_envelope_id, door FROM pending_senders ORDER BY last_seen DESC")?;
            let rows = stmt.query_map(args![], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<String>(4)?, r.get(5)?, r.get(6)?)))?;
            rows.map(|row| {
                let (public_key, first_seen, last_seen, count, scopes, last_envelope_id, door) = row?;
                Ok(PendingSender { public_key, first_seen, last_seen, count, scopes_tried: serde_json::from_str(&scopes)?, last_envelope_id, door })
            })
            .collect()
        })
    }

    pub fn pending_remove(&self, key: &str) -> Result<bool> {
        Ok(self.conn()?.execute("DELETE FROM pending_senders WHERE public_key = ?1", args![sender_key(key)])? > 0)
    }

    /// [`Store::admission`] as last read, without reading: the envelope's commit checks
    /// its version ([`NewEnvelope::admission_version`]), so a view that has gone stale costs
    /// a retry instead of every envelope costing a read. A refusal should not rest on it.
    pub fn admission_cached(&self, sender: &str, setting: &str) -> Result<Admission> {
        match self.cached_admission(sender, setting) {
            Some(a) => Ok(a),
            None => self.admission(sender, setting),
        }
    }

    /// [`Store::admission_cached`] when a view is cached, else `None`: never asks the
    /// database (a caller that must not wait on it decides where the read happens).
    pub fn cached_admission(&self, sender: &str, setting: &str) -> Option<Admission> {
        let cache = self.admissions.lock().unwrap_or_else(|p| p.into_inner());
        cache.get(&(sender_key(sender), setting.to_string())).cloned()
    }

    /// Whether `sender` is blocked, its trust entry, and one setting, as of one snapshot.
    pub fn admission(&self, sender: &str, setting: &str) -> Result<Admission> {
        let key = sender_key(sender);
        self.read(|c| {
            // One small read per envelope while nothing changed; the whole view again,
            // in one snapshot, once anything that decides admission did.
            let cache_key = (key.clone(), setting.to_string());
            let version: i64 = c.prepare_cached("SELECT n FROM admission_version")?.query_row(args![], |r| r.get(0))?;
            {
                let cache = self.admissions.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(a) = cache.get(&cache_key).filter(|a| a.version == version) {
                    return Ok(a.clone());
                }
            }
            let (version, blocked, revoked, trust, setting) = c.snapshot(|tx| {
                let version: i64 = tx.prepare_cached("SELECT n FROM admission_version")?.query_row(args![], |r| r.get(0))?;
                // Each row is taken as the gate sealed it (`seal`): an entry added outside
                // Gatehouse lets nobody in, a block or revocation taken out still holds.
                let view = self.view(tx)?;
                let view = view.as_deref();
                let blocked = judge_in(tx, view, BLOCKED, &key)?.0 != Judged::Absent;
                let (judged, row) = judge_in(tx, view, REVOKED, &key)?;
                let revoked = revocation(judged, row);
                let trust = entry_in(tx, view, &key)?;
                let setting = self.setting_in(tx, view, setting)?;
                Ok((version, blocked, revoked, trust, setting))
            })?;
            let admission = Admission { blocked, revoked, trust, setting, version };
            let mut cache = self.admissions.lock().unwrap_or_else(|p| p.into_inner());
            // Unknown senders can be many (each knock is a new key): stay small.
            if cache.len() >= MAX_CACHED_ADMISSIONS {
                cache.clear();
            }
            cache.insert(cache_key, admission.clone());
            Ok(admission)
        })
    }

    /// Blocks a sender: its trust entry and pending request go, in one transaction.
    pub fn block(&self, key: &str, reason: &str, now: &str) -> Result<()> {
        let key = sender_key(key);
        self.sealed_write(|tx| {
            tx.execute("DELETE FROM trust WHERE public_key = ?1", args![&key])?;
            crate::entry_facts::forget(tx, &key)?;
            tx.execute("DELETE FROM pending_senders WHERE public_key = ?1", args![&key])?;
            tx.execute("DELETE FROM uamp_tokens WHERE sender = ?1", args![&key])?;
            tx.execute(
                "INSERT INTO blocked (public_key, blocked_at, reason) VALUES (?1, ?2, ?3)
                 ON CONFLICT(public_key) DO UPDATE SET blocked_at = ?2, reason = ?3",
                args![key, now, reason],
            )?;
            Ok(())
        })
    }

    pub fn unblock(&self, key: &str) -> Result<bool> {
        let key = sender_key(key);
        self.sealed_write(|tx| Ok(tx.execute("DELETE FROM blocked WHERE public_key = ?1", args![key])? > 0))
    }

    /// Whether the sender is kept out: blocked as the gate sealed it, blocked by a row
    /// added outside Gatehouse, or once blocked with that row taken out.
    pub fn is_blocked(&self, key: &str) -> Result<bool> {
        let key = sender_key(key);
        self.read(|c| c.snapshot(|db| Ok(self.judge(db, BLOCKED, &key)?.0 != Judged::Absent)))
    }

    /// Revokes a key (EPP v1.1): its envelopes are refused with SENDER_REVOKED; its trust
    /// entry and history stay. Returns whether it was not revoked before.
    pub fn revoke(&self, key: &str, reason: &str, now: &str) -> Result<bool> {
        let key = sender_key(key);
        self.sealed_write(|tx| {
            Ok(tx.execute(
                "INSERT INTO revoked (public_key, revoked_at, reason) VALUES (?1, ?2, ?3) ON CONFLICT(public_key) DO NOTHING",
                args![key, now, reason],
            )? > 0)
        })
    }

    pub fn unrevoke(&self, key: &str) -> Result<bool> {
        let key = sender_key(key);
        self.sealed_write(|tx| Ok(tx.execute("DELETE FROM revoked WHERE public_key = ?1", args![key])? > 0))
    }

    pub fn revoked_list(&self) -> Result<Vec<RevokedKey>> {
        self.read(|conn| {
            let stmt = conn.prepare("SELECT public_key, revoked_at, reason FROM revoked ORDER BY revoked_at DESC")?;
            let rows = stmt.query_map(args![], |r| Ok(RevokedKey { public_key: r.get(0)?, revoked_at: r.get(1)?, reason: r.get(2)? }))?;
            rows.collect::<Result<_>>()
        })
    }

    pub fn blocked_list(&self) -> Result<Vec<BlockedSender>> {
        self.read(|conn| {
            let stmt = conn.prepare("SELECT public_key, blocked_at, reason FROM blocked ORDER BY blocked_at DESC")?;
            let rows = stmt.query_map(args![], |r| Ok(BlockedSender { public_key: r.get(0)?, blocked_at: r.get(1)?, reason: r.get(2)? }))?;
            rows.collect::<Result<_>>()
        })
    }
}
