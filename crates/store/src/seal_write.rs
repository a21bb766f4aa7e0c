//! Writing the deciding state: every change is sealed in the transaction that makes it
//! (`seal.rs` says what a seal is). A change made while the seals cannot be trusted is
//! refused: signing a new head then would sign what someone else put there.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::open::Tx;
use crate::seal::*;
use crate::sql::{args, Optional};
use crate::*;

/// The advisory lock (PostgreSQL) every sealing transaction holds: heads are written one
/// after another across nodes ("gatehouse" + "seal" in ASCII, any fixed number).
const SEAL_LOCK: i64 = 0x6761_7465_7365_616c;

impl Store {
    /// Seals what this store's deciding tables hold with `sealer` from now on. A database
    /// nobody has sealed yet (new, or written by a Gatehouse before sealing) is sealed as
    /// it is, once, unless this machine has seen it sealed: then its seals were taken
    /// out, and that is reported, not covered over.
    pub fn with_sealer(mut self, sealer: Arc<dyn Sealer>) -> Result<Store> {
        self.sealer = Some(sealer.clone());
        if sealer.kept().is_none() {
            self.seal_everything(true)?;
        }
        self.seal_new_tables()?;
        self.move_entry_facts()?;
        Ok(self)
    }

    /// Accepts the deciding state as the database holds it now and seals it (an
    /// operator's decision after reading [`Store::state_check`]: rows changed outside
    /// Gatehouse become the gate's own). The new head's version is above both the
    /// database's and the one this machine kept.
    pub fn state_accept(&self) -> Result<StateReport> {
        if self.sealer.is_none() {
            return Err(StoreError::Invalid("this store was opened without the gate's key".into()));
        }
        self.seal_everything(false)?;
        self.move_entry_facts()?;
        self.state_check()
    }

    fn seal_everything(&self, only_if_never_sealed: bool) -> Result<()> {
        let Some(sealer) = self.sealer.as_deref() else { return Ok(()) };
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        lock(&tx)?;
        let head: Option<i64> = tx.db().query_map("SELECT version FROM seal_head", args![], |r| r.get(0))?.collect::<Result<Vec<i64>>>()?.into_iter().max();
        if only_if_never_sealed && head.is_some() {
            return Ok(());
        }
        let version = head.unwrap_or(0).max(sealer.kept().unwrap_or(0)) + 1;
        list_sealed_tables(&tx)?;
        let rows = all_rows(&tx.db())?;
        tx.execute("DELETE FROM seals", args![])?;
        let mut seals = BTreeMap::new();
        for (key, hash) in rows {
            let seal = sign(sealer, &key, version, hash);
            put(&tx, &key, &seal)?;
            seals.insert(key, seal);
        }
        put_head(&tx, sealer, version, &seals)?;
        // What each node read per sender may have been refused for want of a seal: the
        // admission version moves, so every node reads its views again.
        if tx.db().is_pg() {
            tx.query_row(&format!("SELECT pg_advisory_xact_lock({})", crate::pg::ADMISSION_LOCK), args![], |_| Ok(()))?;
        }
        tx.execute("UPDATE admission_version SET n = n + 1", args![])?;
        tx.commit()?;
        self.sealed_now(sealer, version);
        Ok(())
    }

    /// Seals, as they are, the rows of every table the seals did not cover when the database
    /// was last sealed (a Gatehouse before them sealed the rest), once: the [`SEALED_TABLES`]
    /// setting, sealed too, says which those were. Nothing is sealed while the seals cannot
    /// be trusted, or when that setting was changed or taken out outside Gatehouse: a
    /// table someone made look new is reported, not covered over ([`Store::state_accept`]
    /// seals everything, on the operator's word).
    fn seal_new_tables(&self) -> Result<()> {
        let Some(sealer) = self.sealer.as_deref() else { return Ok(()) };
        // Most opens find every table listed: they read that, and take no write lock (a
        // list changed beside the gate to name them all only leaves them unsealed, reported).
        let listed: Option<String> = self.read(|c| {
            c.snapshot(|db| db.prepare_cached("SELECT value FROM settings WHERE key = ?1")?.query_row(args![SEALED_TABLES], |r| r.get(0)).optional())
        })?;
        if listed.and_then(|l| serde_json::from_str::<Vec<String>>(&l).ok()).is_some_and(|l| TABLES.iter().all(|t| l.iter().any(|n| n == t.name))) {
            return Ok(());
        }
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        lock(&tx)?;
        let view = load(&tx.db(), sealer, &self.seals_verified, false)?;
        if view.broken.is_some() {
            return Ok(());
        }
        let listed: Vec<String> = match judge_in(&tx.db(), Some(&view), SETTINGS, SEALED_TABLES)? {
            (Judged::Absent, _) => FIRST_SEALED.iter().map(|t| t.to_string()).collect(),
            (Judged::Sealed, Some(cols)) => match serde_json::from_str(cols.first().cloned().flatten().as_deref().unwrap_or("")) {
                Ok(listed) => listed,
                Err(_) => return Ok(()),
            },
            _ => return Ok(()),
        };
        let new: Vec<&Table> = TABLES.iter().copied().filter(|t| !listed.iter().any(|l| l == t.name)).collect();
        // A table some seal already covers was sealed by a Gatehouse that knew it.
        if new.is_empty() || view.seals.keys().any(|(t, _)| new.iter().any(|n| n.name == t)) {
            return Ok(());
        }
        let version = view.version() + 1;
        let mut seals = view.seals;
        let before = all_rows(&tx.db())?;
        list_sealed_tables(&tx)?;
        for (key, hash) in all_rows(&tx.db())? {
            // The new tables' rows as they are, and the list that now names them.
            if new.iter().any(|n| n.name == key.0) || before.get(&key) != Some(&hash) {
                let seal = sign(sealer, &key, version, hash);
                put(&tx, &key, &seal)?;
                seals.insert(key, seal);
            }
        }
        put_head(&tx, sealer, version, &seals)?;
        tx.commit()?;
        self.sealed_now(sealer, version);
        Ok(())
    }

    /// Runs `f` in a write transaction and seals the deciding rows it changed, in the
    /// same transaction. Refused (`StateChanged`) when the seals in the database are not
    /// to be trusted; rows changed outside Gatehouse that `f` does not touch stay unsealed
    /// (and reported).
    pub(crate) fn sealed_write<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let Some(sealer) = self.sealer.as_deref() else {
            let out = f(&tx)?;
            tx.commit()?;
            return Ok(out);
        };
        lock(&tx)?;
        let view = load(&tx.db(), sealer, &self.seals_verified, false)?;
        if let Some(why) = view.broken {
            return Err(StoreError::StateChanged(why));
        }
        let before = all_rows(&tx.db())?;
        let out = f(&tx)?;
        let after = all_rows(&tx.db())?;
        let version = view.head.as_ref().map_or(0, |h| h.0) + 1;
        let mut seals = view.seals;
        let mut changed = false;
        for (key, hash) in &after {
            if before.get(key) != Some(hash) {
                let seal = sign(sealer, key, version, hash.clone());
                put(&tx, key, &seal)?;
                seals.insert(key.clone(), seal);
                changed = true;
            }
        }
        for key in before.keys().filter(|k| !after.contains_key(*k)) {
            if seals.remove(key).is_some() {
                tx.execute("DELETE FROM seals WHERE tbl = ?1 AND id = ?2", args![key.0, key.1])?;
            }
            changed = true;
        }
        if changed {
            put_head(&tx, sealer, version, &seals)?;
        }
        tx.commit()?;
        if changed {
            self.sealed_now(sealer, version);
        }
        Ok(out)
    }

    fn sealed_now(&self, sealer: &dyn Sealer, version: i64) {
        sealer.keep(version);
        // The next read verifies the new head (and only the new seals).
        *self.sealed.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.admissions.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// Records that the seals cover every table in [`TABLES`] (sealed with them).
fn list_sealed_tables(tx: &Tx<'_>) -> Result<()> {
    let names = serde_json::to_string(&TABLES.iter().map(|t| t.name).collect::<Vec<_>>())?;
    tx.execute("INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2", args![SEALED_TABLES, names])?;
    Ok(())
}

fn lock(tx: &Tx<'_>) -> Result<()> {
    // SQLite's write transaction already holds the database's one write lock.
    if tx.db().is_pg() {
        tx.query_row(&format!("SELECT pg_advisory_xact_lock({SEAL_LOCK})"), args![], |_| Ok(()))?;
    }
    Ok(())
}

fn sign(sealer: &dyn Sealer, key: &Key, version: i64, hash: String) -> Seal {
    let signature = sealer.sign(&seal_message(key, version, &hash));
    Seal { version, hash, signer: sealer.signer(), signature }
}

fn put(tx: &Tx<'_>, key: &Key, s: &Seal) -> Result<()> {
    tx.execute(
        "INSERT INTO seals (tbl, id, version, hash, signer, signature) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (tbl, id) DO UPDATE SET version = ?3, hash = ?4, signer = ?5, signature = ?6",
        args![key.0, key.1, s.version, s.hash, s.signer, s.signature],
    )?;
    Ok(())
}

fn put_head(tx: &Tx<'_>, sealer: &dyn Sealer, version: i64, seals: &BTreeMap<Key, Seal>) -> Result<()> {
    let rows = seals.len() as i64;
    let d = digest(seals);
    let signature = sealer.sign(&head_message(version, rows, &d));
    tx.execute("DELETE FROM seal_head", args![])?;
    tx.execute(
        "INSERT INTO seal_head (version, rows, digest, signer, signature) VALUES (?1, ?2, ?3, ?4, ?5)",
        args![version, rows, d, sealer.signer(), signature],
    )?;
    Ok(())
}
