//! What only one door knows about a trust entry, kept in that door's own table beside the
//! entry (keyed by its key) and sealed like it: an EPP sender's reply endpoint, mail
//! address and v1.1 capability limit (`epp_entries`), a UAMP agent's keys
//! (`uamp_entries`). The entry itself keeps what every door's arrivals are judged by, and
//! the door it came by. Stores written before the doors kept their own carried these in
//! the entry's policy (`x-uamp-keys`, `x-reply-endpoint`, `x-mail-address`,
//! `x-capabilities`); [`Store::move_entry_facts`] moves them out and seals the move.

use serde::{Deserialize, Serialize};

use crate::open::Tx;
use crate::seal::{Judged, EPP_ENTRIES, LEGACY_TRUST, TRUST, UAMP_ENTRIES};
use crate::sql::{args, Db, Optional};
use crate::*;

/// What the entry's door keeps about it (at most one door's, the one it came by).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Facts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epp: Option<EppFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uamp: Option<UampFacts>,
}

/// What the EPP door keeps about a sender.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EppFacts {
    /// Where this sender takes EPP envelopes (its submit URL, or `mailto:`): answers go
    /// back there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_endpoint: Option<String>,
    /// The mail address this sender's receipts go to: the From of the mail the user let
    /// its key in from (or one the user wrote). Receipt mails go only here or to a
    /// `mailto:` reply endpoint, never to whatever a later mail's headers name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_address: Option<String>,
    /// EPP v1.1: what this sender may ask to use; absent, anything declared is shown only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<CapabilityLimit>,
}

/// What the UAMP door keeps about an agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UampFacts {
    /// For an agent named by a DID that does not carry its key (did:web): the keys read
    /// from its DID document when the user added it, by `kid`.
    #[serde(default)]
    pub keys: Vec<UampKey>,
}

/// One key of a UAMP sender: the `kid` its signatures name and the key as a JWK.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UampKey {
    pub kid: String,
    pub jwk: serde_json::Value,
}

/// What an EPP v1.1 sender may ask to use (`capabilities`), as the user set it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CapabilityLimit {
    /// Envelopes that declare no capabilities are refused.
    #[serde(default)]
    pub require: bool,
    /// The most it may ask for, in the envelope's own `capabilities` shape
    /// (`{filesystem: {read, write}, network: {domains}, actions, data_access}`).
    #[serde(default)]
    pub allowed: serde_json::Value,
}

impl Facts {
    pub fn epp(facts: EppFacts) -> Facts {
        Facts { epp: Some(facts), uamp: None }
    }

    pub fn uamp(keys: Vec<UampKey>) -> Facts {
        Facts { epp: None, uamp: Some(UampFacts { keys }) }
    }

    pub fn uamp_keys(&self) -> &[UampKey] {
        self.uamp.as_ref().map_or(&[], |u| &u.keys[..])
    }

    pub fn reply_endpoint(&self) -> Option<&str> {
        self.epp.as_ref()?.reply_endpoint.as_deref()
    }

    pub fn capabilities(&self) -> Option<&CapabilityLimit> {
        self.epp.as_ref()?.capabilities.as_ref()
    }

    /// Where this sender's receipts may be mailed: the address the user let it in from,
    /// else its `mailto:` reply endpoint.
    pub fn mail_to(&self) -> Option<String> {
        let e = self.epp.as_ref()?;
        // As the reply sender reads it: the whole rest is the address (a trust entry's
        // endpoint is checked to be one plain address when it is set).
        let endpoint = e.reply_endpoint.as_deref().and_then(|e| e.strip_prefix("mailto:")).map(str::to_string);
        e.mail_address.clone().or(endpoint).filter(|a| !a.trim().is_empty())
    }
}

/// One entry's rows as the database holds them: the trust row's sealed columns, and each
/// door's row (its sealed columns) where there is one.
pub(crate) struct Rows {
    pub(crate) trust: Vec<Option<String>>,
    epp: Option<Vec<Option<String>>>,
    uamp: Option<Vec<Option<String>>>,
}

/// The entry `key` and what the doors keep about it, in one query (the admission view and
/// every read of an entry): `None` when there is no trust row.
pub(crate) fn rows(db: &Db<'_>, key: &str) -> Result<Option<Rows>> {
    // The columns as the seals hash them (`seal::Table`: each as text).
    let sql = "SELECT CAST(t.name AS TEXT), CAST(t.added_at AS TEXT), CAST(t.policy AS TEXT), CAST(t.door AS TEXT),
            CAST(e.public_key AS TEXT), CAST(e.reply_endpoint AS TEXT), CAST(e.mail_address AS TEXT), CAST(e.capabilities AS TEXT),
            CAST(u.public_key AS TEXT), CAST(u.keys AS TEXT)
        FROM trust t LEFT JOIN epp_entries e ON e.public_key = t.public_key LEFT JOIN uamp_entries u ON u.public_key = t.public_key
        WHERE t.public_key = ?1";
    db.prepare_cached(sql)?
        .query_row(args![key], |r| {
            let col = |i: usize| r.get::<Option<String>>(i);
            let trust = vec![col(0)?, col(1)?, col(2)?, col(3)?];
            let epp = col(4)?.map(|_| Ok::<_, StoreError>(vec![col(5)?, col(6)?, col(7)?])).transpose()?;
            let uamp = col(8)?.map(|_| Ok::<_, StoreError>(vec![col(9)?])).transpose()?;
            Ok(Rows { trust, epp, uamp })
        })
        .optional()
}

/// What the doors keep about the entry, each row as the gate sealed it (`judge` says);
/// `None` when one is not (added, changed or taken out outside Gatehouse: its entry then
/// lets nobody in, as a limit taken out must not open what it closed).
pub(crate) fn judged(rows: &Rows, judge: impl Fn(&crate::seal::Table, Option<&[Option<String>]>) -> Judged) -> Result<Option<Facts>> {
    let mut facts = Facts::default();
    match (judge(EPP_ENTRIES, rows.epp.as_deref()), &rows.epp) {
        (Judged::Absent, _) => {}
        (Judged::Sealed, Some(c)) => {
            let at = |i: usize| c.get(i).cloned().flatten();
            let capabilities = at(2).map(|j| serde_json::from_str(&j)).transpose()?;
            facts.epp = Some(EppFacts { reply_endpoint: at(0), mail_address: at(1), capabilities });
        }
        _ => return Ok(None),
    }
    match (judge(UAMP_ENTRIES, rows.uamp.as_deref()), &rows.uamp) {
        (Judged::Absent, _) => {}
        (Judged::Sealed, Some(c)) => {
            let keys = c.first().cloned().flatten().unwrap_or_default();
            facts.uamp = Some(UampFacts { keys: serde_json::from_str(&keys)? });
        }
        _ => return Ok(None),
    }
    Ok(Some(facts))
}

/// Keeps `facts` for `key` (replacing what was kept), in the caller's sealed write.
pub(crate) fn write(tx: &Tx<'_>, key: &str, facts: &Facts) -> Result<()> {
    forget(tx, key)?;
    if let Some(e) = &facts.epp {
        let capabilities = e.capabilities.as_ref().map(serde_json::to_string).transpose()?;
        tx.execute(
            "INSERT INTO epp_entries (public_key, reply_endpoint, mail_address, capabilities) VALUES (?1, ?2, ?3, ?4)",
            args![key, e.reply_endpoint, e.mail_address, capabilities],
        )?;
    }
    if let Some(u) = &facts.uamp {
        tx.execute("INSERT INTO uamp_entries (public_key, keys) VALUES (?1, ?2)", args![key, serde_json::to_string(&u.keys)?])?;
    }
    Ok(())
}

/// Forgets what the doors kept for `key` (its entry went), in the caller's sealed write.
pub(crate) fn forget(tx: &Tx<'_>, key: &str) -> Result<()> {
    tx.execute("DELETE FROM epp_entries WHERE public_key = ?1", args![key])?;
    tx.execute("DELETE FROM uamp_entries WHERE public_key = ?1", args![key])?;
    Ok(())
}

/// The door of an entry written before entries recorded theirs, as Gatehouse made them
/// then: only the guardian named agents `asop:…`, only the A2A door `a2a:token:`/`a2a:key:`,
/// only IntentWeb kept keys for its scope, a DID was a UAMP agent's, the rest EPP senders.
/// Read once, when the entry is moved; never for an entry made since.
pub(crate) fn door_before_doors(key: &str, policy: &serde_json::Value) -> &'static str {
    let scopes = policy.get("allowed_scopes").and_then(|s| s.as_array());
    if key.starts_with("asop:") {
        "guardian"
    } else if key.starts_with("a2a:token:") || key.starts_with("a2a:key:") {
        "a2a"
    } else if scopes.is_some_and(|s| s.first().and_then(|v| v.as_str()) == Some("intentweb")) {
        "intentweb"
    } else if key.starts_with("did:") {
        "uamp"
    } else {
        "epp"
    }
}

/// The legacy policy fields each door's facts came from.
const MOVED: [&str; 4] = ["x-uamp-keys", "x-reply-endpoint", "x-mail-address", "x-capabilities"];

/// One entry's row as the store held it before doors kept their own: what the policy
/// carried split out, the door read once.
fn split(key: &str, policy: &str) -> Result<(String, &'static str, Facts)> {
    let mut p: serde_json::Value = serde_json::from_str(policy)?;
    let door = door_before_doors(key, &p);
    let obj = p.as_object_mut().ok_or_else(|| StoreError::Invalid(format!("the trust entry of {key} holds a policy that is not an object")))?;
    let mut moved: Vec<Option<serde_json::Value>> = MOVED.iter().map(|f| obj.remove(*f)).collect();
    let mut take = |i: usize| moved.get_mut(i).and_then(Option::take).filter(|v| !v.is_null());
    let uamp_keys: Option<Vec<UampKey>> = take(0).map(serde_json::from_value).transpose()?;
    let reply_endpoint: Option<String> = take(1).map(serde_json::from_value).transpose()?;
    let mail_address: Option<String> = take(2).map(serde_json::from_value).transpose()?;
    let capabilities: Option<CapabilityLimit> = take(3).map(serde_json::from_value).transpose()?;
    let mut facts = Facts::default();
    if reply_endpoint.is_some() || mail_address.is_some() || capabilities.is_some() {
        facts.epp = Some(EppFacts { reply_endpoint, mail_address, capabilities });
    }
    if let Some(keys) = uamp_keys.filter(|k| !k.is_empty()) {
        facts.uamp = Some(UampFacts { keys });
    }
    // Written as the store writes every policy (the same shape a new entry gets).
    let policy: Policy = serde_json::from_value(p)?;
    Ok((serde_json::to_string(&policy)?, door, facts))
}

impl Store {
    /// [`Store::move_entry_facts`] on a store no gate has sealed yet (there is no seal to
    /// keep): opened with the gate's key, it is then sealed as it was moved.
    pub(crate) fn move_if_never_sealed(&self) -> Result<()> {
        let heads: i64 = self.read(|db| db.query_row("SELECT count(*) FROM seal_head", args![], |r| r.get(0)))?;
        if heads == 0 {
            self.move_entry_facts()?;
        }
        Ok(())
    }

    /// Moves what entries written before doors kept their own carried in their policies
    /// to their doors' tables, records each one's door, and seals what it moved in the
    /// same transaction. Only an entry the gate sealed is moved (under the seal it was
    /// written with): one changed outside Gatehouse stays as it is, reported and letting
    /// nobody in, so moving it cannot make it the gate's. Does nothing when the seals
    /// cannot be trusted (an operator accepts the state first, then it moves).
    pub fn move_entry_facts(&self) -> Result<usize> {
        let legacy = |db: &Db<'_>| -> Result<Vec<(String, Vec<Option<String>>)>> {
            let rows = db.query_map("SELECT public_key, name, added_at, policy FROM trust WHERE door IS NULL", args![], |r| {
                Ok((r.get::<String>(0)?, vec![r.get::<Option<String>>(1)?, r.get::<Option<String>>(2)?, r.get::<Option<String>>(3)?]))
            })?;
            rows.collect()
        };
        if self.read(|c| c.snapshot(|db| legacy(db)))?.is_empty() {
            return Ok(0);
        }
        let moved = self.sealed_write(|tx| {
            let db = tx.db();
            let view = self.view(&db)?;
            let mut n = 0;
            for (key, cols) in legacy(&db)? {
                if let Some(view) = &view {
                    let mut now = cols.clone();
                    now.push(None);
                    let as_written = view.judge(LEGACY_TRUST, &key, Some(&cols)) == Judged::Sealed;
                    let accepted_since = view.judge(TRUST, &key, Some(&now)) == Judged::Sealed;
                    if !as_written && !accepted_since {
                        continue;
                    }
                }
                // A row that does not read (it never let anyone in either) is left as it
                // is: one broken entry must not keep the store from opening.
                let (policy, door, facts) = match split(&key, cols.get(2).cloned().flatten().as_deref().unwrap_or("{}")) {
                    Ok(moved) => moved,
                    Err(e) => {
                        tracing::warn!(key = %key, error = %e, "a trust entry kept before doors kept their own does not read; left as it is");
                        continue;
                    }
                };
                tx.execute("UPDATE trust SET policy = ?2, door = ?3 WHERE public_key = ?1", args![&key, policy, door])?;
                write(tx, &key, &facts)?;
                n += 1;
            }
            Ok(n)
        });
        match moved {
            // The seals cannot be trusted: nothing is moved (nothing sealed is acted on
            // either) until the operator accepts the state, which moves it then.
            Err(StoreError::StateChanged(_)) => Ok(0),
            other => other,
        }
    }
}
