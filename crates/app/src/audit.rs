//! The audit log as evidence: the gate signs checkpoints of its hash chain (periodically,
//! and on every export), an export carries the entries with their hashes and the
//! checkpoints, and [`verify_live`] / [`verify_export`] check either against the gate's
//! key and name the first entry that does not fit.
//!
//! The chain (`gatehouse_store::audit`) catches an entry changed, deleted or moved by
//! someone who did not recompute the hashes after it; a checkpoint catches the one who did
//! (they cannot sign the rewritten chain), and entries removed from the end.

use crate::Context;
use std::collections::HashMap;

pub use gatehouse_store::{ChangeKind, StateChange, StateReport};

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier as _, VerifyingKey};
use gatehouse_store::{audit_entry_hash, AuditCheckpoint, AuditEntry, Store, AUDIT_GENESIS, AUDIT_PRUNED};
use serde::{Deserialize, Serialize};

use crate::{Code, CommandError, Result};

/// What an audit export declares itself as.
pub const EXPORT_FORMAT: &str = "gatehouse-audit/1";

/// The entries read at a time when checking the live log (the log is as long as its
/// retention allows; memory stays bounded).
const PAGE: u32 = 5000;

/// An exported audit log: every entry, oldest first, and every checkpoint.
#[derive(Debug, Serialize, Deserialize)]
pub struct AuditExport {
    pub format: String,
    /// The key of the gate that exported it (hex). A check is made against the key its
    /// reader trusts, never against this one alone.
    pub gate_key: String,
    pub exported_at: String,
    pub entries: Vec<AuditEntry>,
    pub checkpoints: Vec<AuditCheckpoint>,
}

/// What a check of the audit log found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditVerdict {
    /// Every entry fits and every checkpoint is the gate's.
    pub intact: bool,
    pub entries: u32,
    pub first_id: Option<i64>,
    pub last_id: Option<i64>,
    /// Checkpoints whose entry was there to be compared.
    pub checkpoints_checked: u32,
    /// The last entry a valid checkpoint covers: entries after it are chained but not
    /// yet signed.
    pub signed_through: Option<i64>,
    /// The first entry that does not fit (or the checkpoint that is not the gate's), in
    /// words.
    pub problem: Option<AuditProblem>,
    /// The key the checkpoints were checked against (hex).
    pub key: String,
    /// The gate's deciding state (trust, blocks, revocations, settings, approvers, quorum
    /// rules) against its seals, when a live gate was checked: `intact` is false when
    /// it is not.
    #[serde(default)]
    pub state: Option<gatehouse_store::StateReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AuditProblem {
    /// The entry's id.
    pub entry: i64,
    pub reason: String,
}

/// What a checkpoint's signature covers.
fn checkpoint_message(through_id: i64, hash: &str, at: &str) -> Vec<u8> {
    format!("gatehouse-audit-checkpoint/1\n{through_id}\n{hash}\n{at}").into_bytes()
}

/// Signs the chain's head with the gate's key, unless the last checkpoint already covers
/// it (or the log is empty). Returns the checkpoint made. Only a head that extends every
/// valid checkpoint — those in the store and `witness`, the newest this machine saw — is
/// signed: a log rewound, rewritten or emptied is refused, not signed as it is.
pub fn checkpoint(store: &Store, key: &SigningKey, witness: Option<&AuditCheckpoint>) -> Result<Option<AuditCheckpoint>> {
    Ok(checked_checkpoint(store, key, witness)?.0)
}

/// [`checkpoint`], with the check of the log it was made after.
fn checked_checkpoint(store: &Store, key: &SigningKey, witness: Option<&AuditCheckpoint>) -> Result<(Option<AuditCheckpoint>, AuditVerdict)> {
    let v = verify_live(store, &hex::encode(key.verifying_key().as_bytes()), witness)?;
    if let Some(p) = &v.problem {
        return Err(CommandError::new(
            Code::Changed,
            format!("the audit log does not extend what the gate signed before, so it is not signed again: {}", p.reason),
        ));
    }
    let (through_id, hash) = store.audit_head()?;
    if through_id == 0 || v.signed_through == Some(through_id) {
        return Ok((None, v));
    }
    let at = crate::now();
    let signature = key.sign(&checkpoint_message(through_id, &hash, &at));
    let c = AuditCheckpoint { at, through_id, hash, public_key: hex::encode(key.verifying_key().as_bytes()), signature: hex::encode(signature.to_bytes()) };
    store.audit_checkpoint_add(&c)?;
    Ok((Some(c), v))
}

/// The whole log for export, signed up to its last entry first (when it extends what was
/// signed before; otherwise exported as it is, for the reader's check to name the fault).
pub fn export(store: &Store, key: &SigningKey) -> Result<AuditExport> {
    match checkpoint(store, key, None) {
        Ok(_) => {}
        Err(e) if e.code == Code::Changed => {}
        Err(e) => return Err(e),
    }
    let mut entries = Vec::new();
    loop {
        let page = store.audit_chain(entries.last().map_or(0, |e: &AuditEntry| e.id), PAGE)?;
        let done = (page.len() as u32) < PAGE;
        entries.extend(page);
        if done {
            break;
        }
    }
    Ok(AuditExport {
        format: EXPORT_FORMAT.into(),
        gate_key: hex::encode(key.verifying_key().as_bytes()),
        exported_at: crate::now(),
        entries,
        checkpoints: store.audit_checkpoints()?,
    })
}

/// Checks the live log against `key` (hex), page by page, and against `witness` (the
/// newest checkpoint this machine kept): a log cut, rewound or emptied together with its
/// checkpoints still fails to reach it.
pub fn verify_live(store: &Store, key: &str, witness: Option<&AuditCheckpoint>) -> Result<AuditVerdict> {
    let mut checkpoints = store.audit_checkpoints()?;
    // The checkpoints approver devices last handed in count as the gate's own: a device
    // hands its own in again at its next contact, so taking them out here hides nothing.
    for w in witness.into_iter().cloned().chain(store.audit_witnessed()?) {
        if !checkpoints.contains(&w) {
            checkpoints.push(w);
        }
    }
    let mut v = Verifier::new(key, checkpoints)?;
    // The head is read before the chain: an entry the gate appends while the chain is
    // read comes after it. Read after the chain, that entry would look like entries cut
    // from the end.
    let head = store.audit_head()?.0;
    let mut after = 0;
    loop {
        let page = store.audit_chain(after, PAGE)?;
        for e in &page {
            v.feed(e);
        }
        match page.last() {
            Some(last) if page.len() as u32 == PAGE => after = last.id,
            _ => break,
        }
    }
    Ok(v.finish(Some(head)))
}

/// The newest valid checkpoint of the log as `v` checked it: what this machine keeps.
/// Whether `c` is signed by the gate's key `key` (hex).
pub fn signed_by_gate(key: &str, c: &AuditCheckpoint) -> bool {
    Verifier::new(key, Vec::new()).is_ok_and(|v| v.signed_by_key(c))
}

pub(crate) fn newest_valid(store: &Store, key: &str, v: &AuditVerdict) -> Result<Option<AuditCheckpoint>> {
    let Some(through) = v.signed_through.filter(|_| v.intact) else { return Ok(None) };
    let Ok(v) = Verifier::new(key, Vec::new()) else { return Ok(None) };
    Ok(store.audit_checkpoints()?.into_iter().rev().find(|c| c.through_id == through && v.signed_by_key(c)))
}

/// Checks this gate's log against its key and the checkpoint this machine keeps (in
/// `ctx`'s data dir); when it is intact, keeps its newest checkpoint.
pub fn verify_here(ctx: &crate::Context, key: Option<&str>) -> Result<AuditVerdict> {
    let key = key.unwrap_or(&ctx.public_key);
    let witness = crate::witness::load(&ctx.data_dir)?;
    let mut v = verify_live(&ctx.store, key, witness.as_ref())?;
    if key.eq_ignore_ascii_case(&ctx.public_key) {
        if let Some(c) = newest_valid(&ctx.store, key, &v)? {
            crate::witness::keep(&ctx.data_dir, &c)?;
        }
    }
    let state = ctx.store.state_check()?;
    v.intact &= state.intact();
    v.state = Some(state);
    Ok(v)
}

/// The gate's deciding state against its seals (what `audit verify` adds to the log's check).
pub fn state_check(ctx: &crate::Context) -> Result<StateReport> {
    Ok(ctx.store.state_check()?)
}

/// Takes the gate's deciding state as the database holds it now and seals it with the
/// gate's key: rows changed outside Gatehouse become the gate's own (an operator's
/// decision, after `audit verify` said what they are). Audited with what was taken.
pub fn accept_state(ctx: &crate::Context) -> Result<StateReport> {
    let before = ctx.store.state_check()?;
    let after = ctx.store.state_accept()?;
    ctx.store.audit(
        "state.accept",
        None,
        &serde_json::json!({ "broken": before.broken, "changes": before.changes, "version": after.version }),
        &crate::now(),
    )?;
    Ok(after)
}

/// Signs this gate's log now (see [`checkpoint`]), checked against the checkpoint this
/// machine keeps, and keeps the newest.
pub fn checkpoint_here(ctx: &Context) -> Result<Option<AuditCheckpoint>> {
    checkpoint_here_in(&ctx.store, &ctx.key, &ctx.data_dir)
}

/// [`checkpoint_here`] on the store itself, for this crate's own callers.
pub(crate) fn checkpoint_here_in(store: &Store, key: &SigningKey, data_dir: &std::path::Path) -> Result<Option<AuditCheckpoint>> {
    let witness = crate::witness::load(data_dir)?;
    let (made, v) = checked_checkpoint(store, key, witness.as_ref())?;
    let newest = match &made {
        Some(c) => Some(c.clone()),
        None => newest_valid(store, &hex::encode(key.verifying_key().as_bytes()), &v)?,
    };
    if let Some(c) = newest {
        crate::witness::keep(data_dir, &c)?;
    }
    Ok(made)
}

/// Checks an exported log (the text of an export file) against `key` (hex).
pub fn verify_export(text: &str, key: &str) -> Result<AuditVerdict> {
    let export: AuditExport = serde_json::from_str(text).map_err(|e| CommandError::new(Code::Invalid, format!("not an audit export: {e}")))?;
    if export.format != EXPORT_FORMAT {
        return Err(CommandError::new(Code::Invalid, format!("not an audit export of this kind: format {:?}, expected {EXPORT_FORMAT}", export.format)));
    }
    let mut v = Verifier::new(key, export.checkpoints)?;
    for e in &export.entries {
        v.feed(e);
    }
    Ok(v.finish(None))
}

/// Walks the chain in order, keeping what the checks at the end need (the first entry's
/// predecessor, what pruning recorded, the hashes checkpoints name): bounded by the
/// number of checkpoints and prunings, not of entries.
struct Verifier {
    key: VerifyingKey,
    key_hex: String,
    /// Valid checkpoints by the entry they cover; invalid ones are a problem at once.
    checkpoints: HashMap<i64, Vec<AuditCheckpoint>>,
    checked: u32,
    signed_through: Option<i64>,
    entries: u32,
    first: Option<(i64, String)>,
    last: Option<(i64, String)>,
    /// What `audit.pruned` entries said was dropped: (last id dropped, its hash).
    pruned: Vec<(i64, String)>,
    problem: Option<AuditProblem>,
}

impl Verifier {
    fn new(key: &str, checkpoints: Vec<AuditCheckpoint>) -> Result<Verifier> {
        let key_hex = key.to_ascii_lowercase();
        let key = gatehouse_epp::crypto::parse_public_key(key).map_err(|e| CommandError::new(Code::Invalid, format!("the gate's key: {e}")))?;
        let mut v = Verifier {
            key,
            key_hex,
            checkpoints: HashMap::new(),
            checked: 0,
            signed_through: None,
            entries: 0,
            first: None,
            last: None,
            pruned: Vec::new(),
            problem: None,
        };
        for c in checkpoints {
            if v.signed_by_key(&c) {
                v.checkpoints.entry(c.through_id).or_default().push(c);
            } else {
                v.fail(c.through_id, format!("the checkpoint of {} naming entry #{} is not signed by the gate's key {}", c.at, c.through_id, v.key_hex));
            }
        }
        Ok(v)
    }

    fn signed_by_key(&self, c: &AuditCheckpoint) -> bool {
        let sig = hex::decode(&c.signature).ok().and_then(|b| <[u8; 64]>::try_from(b).ok()).map(|b| Signature::from_bytes(&b));
        c.public_key.eq_ignore_ascii_case(&self.key_hex) && sig.is_some_and(|s| self.key.verify(&checkpoint_message(c.through_id, &c.hash, &c.at), &s).is_ok())
    }

    /// Keeps the problem at the lowest entry: the first that does not fit.
    fn fail(&mut self, entry: i64, reason: String) {
        if self.problem.as_ref().is_none_or(|p| entry < p.entry) {
            self.problem = Some(AuditProblem { entry, reason });
        }
    }

    fn feed(&mut self, e: &AuditEntry) {
        self.entries += 1;
        match &self.last {
            None => self.first = Some((e.id, e.prev_hash.clone())),
            Some((id, hash)) => {
                if e.id <= *id {
                    self.fail(e.id, format!("entry #{} comes after #{id}: the log is out of order", e.id));
                } else if e.id != id + 1 {
                    self.fail(id + 1, format!("entries #{}–#{} are missing between #{id} and #{}", id + 1, e.id - 1, e.id));
                } else if e.prev_hash != *hash {
                    self.fail(e.id, format!("entry #{} does not follow #{id}: it names another entry before it", e.id));
                }
            }
        }
        let hash = audit_entry_hash(e.id, &e.at, &e.action, e.subject.as_deref(), &e.detail.to_string(), &e.prev_hash);
        if hash != e.hash {
            self.fail(e.id, format!("entry #{} ({}, {}) was changed after it was written", e.id, e.action, e.at));
        }
        let signed: Vec<(bool, String)> = self.checkpoints.get(&e.id).into_iter().flatten().map(|c| (c.hash == hash, c.at.clone())).collect();
        for (fits, at) in signed {
            self.checked += 1;
            if fits {
                self.signed_through = Some(e.id);
            } else {
                self.problem_at_checkpoint(e.id, at);
            }
        }
        if e.action == AUDIT_PRUNED {
            if let (Some(id), Some(h)) = (e.detail["through_id"].as_i64(), e.detail["hash"].as_str()) {
                self.pruned.push((id, h.to_string()));
            }
        }
        self.last = Some((e.id, hash));
    }

    fn problem_at_checkpoint(&mut self, id: i64, at: String) {
        self.fail(id, format!("entry #{id} is not the entry the gate signed at {at}: the log up to it was rewritten"));
    }

    /// `head`: the live log's last id (an export has none to compare).
    fn finish(mut self, head: Option<i64>) -> AuditVerdict {
        if let Some((first, prev)) = self.first.clone() {
            let accounted = prev == AUDIT_GENESIS || self.pruned.iter().any(|(id, h)| *id == first - 1 && *h == prev);
            if !accounted {
                self.fail(first, format!("the entries before #{first} are missing, and no pruning by retention says they were dropped"));
            }
            // A checkpoint of the entry before the first (which pruning dropped) is
            // checked against what the first names.
            for c in self.checkpoints.get(&(first - 1)).cloned().into_iter().flatten() {
                self.checked += 1;
                if c.hash != prev {
                    self.problem_at_checkpoint(first, c.at);
                }
            }
        }
        let last_id = self.last.as_ref().map(|(id, _)| *id);
        let beyond = self.checkpoints.values().flatten().filter(|c| last_id.is_none_or(|l| c.through_id > l)).max_by_key(|c| c.through_id).cloned();
        if let Some(c) = beyond {
            let after = last_id.unwrap_or(0);
            self.fail(after + 1, format!("entries after #{after} were removed: the gate signed the log up to #{} at {}", c.through_id, c.at));
        }
        if let (Some(head), Some(last)) = (head, last_id) {
            if head > last {
                self.fail(last + 1, format!("entries #{}–#{head} were removed from the end", last + 1));
            }
        }
        AuditVerdict {
            intact: self.problem.is_none(),
            entries: self.entries,
            first_id: self.first.map(|(id, _)| id),
            last_id,
            checkpoints_checked: self.checked,
            signed_through: self.signed_through,
            problem: self.problem,
            key: self.key_hex,
            state: None,
        }
    }
}
