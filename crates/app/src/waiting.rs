//! What waits for the user: the one list (and, counted, the window's badge and the tray)
//! of everything from every door that a decision of the user's would let through. The
//! gate names no protocol, so each door's waiting messages are read here, where the
//! application knows the doors (an EPP knock's declared v1.1 fields, who it claims to be).

use crate::doors::gate::consent::{risk_flags, ConsentError};
use crate::target::{ConsentTarget, Source};
use chrono::{DateTime, Utc};
use gatehouse_store::{ExecStatus, Store, StoreError};
use serde::Serialize;

/// One thing waiting for the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConsentItem {
    /// A sender not in the trust registry knocked with a valid signature.
    UnknownSender {
        public_key: String,
        /// What is knocking, from where it arrived (never from what it wrote).
        source: Source,
        first_seen: String,
        last_seen: String,
        count: i64,
        scopes_tried: Vec<String>,
        /// The newest knock's receipt id: a decision names it, and is carried out on it
        /// alone.
        knock: Option<String>,
        /// The newest knock: what "allow" would deliver.
        envelope_id: Option<String>,
        scope: Option<String>,
        prompt: Option<String>,
        /// What the knock declared (EPP v1.1), in plain words.
        extras: Option<gatehouse_epp::v11::Extras>,
        /// What in the prompt looks like an attempt to steer the user's AI.
        risk: Vec<gatehouse_risk::Flag>,
        /// This sender's earlier knocks in the scope: what "always allow" would have let in.
        covered: Vec<gatehouse_store::Covered>,
        covered_total: i64,
        /// Until when the user put this prompt off ("ask me later"), while it is away.
        later: Option<String>,
        /// Contacts this new key claims to be or act for: a change to them, never merged
        /// but by the user's word.
        claims: Vec<Claim>,
    },
    /// A trusted sender's envelope whose policy holds it for consent.
    Held {
        row_id: i64,
        envelope_id: String,
        sender: String,
        sender_name: Option<String>,
        scope: String,
        prompt: String,
        payload_type: Option<String>,
        on_behalf_of: Option<String>,
        received_at: String,
        /// What the envelope declared (EPP v1.1), in plain words.
        extras: Option<gatehouse_epp::v11::Extras>,
        /// What in the prompt looks like an attempt to steer the user's AI.
        risk: Vec<gatehouse_risk::Flag>,
        /// This sender's other held or denied envelopes in the scope: what "always allow"
        /// would have let through.
        covered: Vec<gatehouse_store::Covered>,
        covered_total: i64,
        /// When the grant for this scope ended, if it is held because one did.
        grant_ended: Option<String>,
        later: Option<String>,
        /// The sender is a new key of a verified contact, not verified itself: nothing
        /// from it can be let through until it is.
        key_change: bool,
    },
    /// A trusted UAMP agent's `ask` whose policy holds it for consent: its stream is open
    /// and waits.
    HeldAsk {
        stream_id: String,
        sender: String,
        sender_name: Option<String>,
        scope: String,
        prompt: String,
        received_at: String,
        /// What in the prompt looks like an attempt to steer the user's AI.
        risk: Vec<gatehouse_risk::Flag>,
        grant_ended: Option<String>,
        later: Option<String>,
        /// The agent's keys changed after the user verified it, and it is not verified
        /// again: nothing from it can be let through until it is.
        key_change: bool,
    },
    /// A trusted sender signed with a key not among those kept for it (a UAMP agent whose
    /// DID document may have changed): its messages are refused until the user checks its
    /// keys again, and a change is never taken on its own.
    KeyChange {
        sender: String,
        sender_name: Option<String>,
        /// The key id its signature named.
        key_id: String,
        /// "unknown_key" (a key id not kept) or "invalid_signature" (a kept key id whose
        /// key did not match).
        reason: String,
        first_seen: String,
        last_seen: String,
        count: i64,
        /// The user had verified this contact: whatever the key changed to stays
        /// blocked until they verify it again.
        verified: bool,
        later: Option<String>,
    },
    /// One of the user's own agents (the guardian) waits, its request held, for a decision
    /// on a step.
    GuardianStep { step: gatehouse_store::asop::AsopStepRow },
}

/// How many past messages a prompt lists of those a grant would have let in.
const COVERED_SHOWN: usize = 5;

impl ConsentItem {
    /// The name the audit log and "ask me later" give what this prompt decides; none for
    /// a guardian step, which its agent's door decides (allow, deny, redact, a rule).
    pub fn target(&self) -> Option<ConsentTarget> {
        Some(match self {
            ConsentItem::UnknownSender { public_key, knock, .. } => ConsentTarget::UnknownSender { public_key: public_key.clone(), knock: knock.clone() },
            ConsentItem::Held { row_id, .. } => ConsentTarget::Held { row_id: *row_id },
            ConsentItem::HeldAsk { stream_id, .. } => ConsentTarget::HeldAsk { stream_id: stream_id.clone() },
            ConsentItem::KeyChange { sender, .. } => ConsentTarget::KeyChange { sender: sender.clone() },
            ConsentItem::GuardianStep { .. } => return None,
        })
    }
}

/// A knock's claim to be (or act for) an existing contact.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Claim {
    pub contact_id: i64,
    pub contact_name: String,
    pub verified: bool,
    /// How it claims it, in words.
    pub how: String,
}

/// Which contacts a knock claims to be or act for (EPP: a delegation on behalf of a
/// contact's key, attestations by one in its provenance), from the envelope and its v1.1
/// fields as read once for the prompt.
pub fn claims(store: &Store, sender: &str, env: &gatehouse_epp::Envelope, ext: Option<&gatehouse_epp::v11::Extensions>) -> Result<Vec<Claim>, StoreError> {
    let mut named: Vec<(String, &str)> = Vec::new();
    if let Some(d) = &env.delegation {
        named.push((d.on_behalf_of.clone(), "says it acts on behalf of"));
    }
    for a in ext.and_then(|x| x.provenance.as_ref()).iter().flat_map(|p| &p.entries) {
        named.push((a.identity.clone(), "carries an attestation signed as"));
    }
    let mut out: Vec<Claim> = Vec::new();
    for (key, how) in named {
        let Some(c) = store.contact_of(&key)? else { continue };
        if c.keys.iter().any(|k| k.key == gatehouse_store::sender_key(sender)) || out.iter().any(|o| o.contact_id == c.id) {
            continue;
        }
        out.push(Claim { how: format!("{how} {}, with a key that is not theirs", c.name), verified: c.verified(), contact_id: c.id, contact_name: c.name });
    }
    Ok(out)
}

/// When a timed grant for `scope` ended, if it has (what holds the message).
fn ended(trust: Option<&gatehouse_store::TrustEntry>, scope: &str, now: DateTime<Utc>) -> Option<String> {
    let until = trust?.policy.grant_until.get(scope)?;
    (!gatehouse_store::grant_lasts(until, now)).then(|| until.clone())
}

/// Everything waiting for the user: the one meaning of "waiting" (the list the window
/// shows and, counted, its badge and the tray): the user's own agents' steps first (each
/// holds an agent's request open), then newest first.
pub fn pending(store: &Store) -> Result<Vec<ConsentItem>, ConsentError> {
    pending_at(store, crate::doors::gate::clock::now())
}

/// [`pending`] as it stands at `now` (which grants have ended, which prompts put off are back).
pub fn pending_at(store: &Store, now: DateTime<Utc>) -> Result<Vec<ConsentItem>, ConsentError> {
    let later: std::collections::HashMap<String, String> =
        store.later_list()?.into_iter().filter(|(_, until)| gatehouse_store::grant_lasts(until, now)).collect();
    let later_of = |t: ConsentTarget| later.get(&t.key()).cloned();
    // A step is 'pending' only while its guardian holds the request: steps a stopped
    // guardian held are marked abandoned when it starts again.
    let mut items: Vec<ConsentItem> = store.asop_pending()?.into_iter().map(|step| ConsentItem::GuardianStep { step }).collect();
    for s in store.uamp_held_streams()?.into_iter().rev() {
        let Some(m) = store.uamp_message_by_row(s.message_row)? else { continue };
        let trust = store.trust_get(&s.peer)?;
        // A stream id may be the agent's own choice: not a key to keep a scan under.
        let risk = risk_flags(store, &s.stream_id, &m.content, trust.as_ref(), None)?;
        let scope = m.scope.unwrap_or(m.intent);
        items.push(ConsentItem::HeldAsk {
            grant_ended: ended(trust.as_ref(), &scope, now),
            key_change: trust.as_ref().is_some_and(|t| t.policy.key_change_unverified),
            later: later_of(ConsentTarget::HeldAsk { stream_id: s.stream_id.clone() }),
            sender_name: trust.map(|t| t.name),
            risk,
            stream_id: s.stream_id,
            sender: s.peer,
            scope,
            prompt: m.content,
            received_at: m.received_at,
        });
    }
    for row in store.envelopes_with_status(ExecStatus::Held)?.into_iter().rev() {
        let trust = store.trust_get(&row.sender)?;
        let risk = risk_flags(store, &row.envelope_id, &row.prompt, trust.as_ref(), Some(&row.receipt_id))?;
        let (covered, covered_total) = store.covered_by_grant(&row.sender, &row.scope, Some(&row.envelope_id), COVERED_SHOWN)?;
        items.push(ConsentItem::Held {
            risk,
            covered,
            covered_total,
            grant_ended: ended(trust.as_ref(), &row.scope, now),
            key_change: trust.as_ref().is_some_and(|t| t.policy.key_change_unverified),
            later: later_of(ConsentTarget::Held { row_id: row.id }),
            sender_name: trust.map(|t| t.name),
            row_id: row.id,
            envelope_id: row.envelope_id,
            sender: row.sender,
            scope: row.scope,
            prompt: row.prompt,
            payload_type: row.payload_type,
            on_behalf_of: row.on_behalf_of,
            received_at: row.received_at,
            extras: gatehouse_epp::v11::Extras::from_raw(&row.raw),
        });
    }
    for k in store.key_changes()? {
        // As when the new keys are taken: a change to a verified contact blocks.
        let verified = store.contact_of(&k.sender)?.is_some_and(|c| c.verified());
        items.push(ConsentItem::KeyChange {
            later: later_of(ConsentTarget::KeyChange { sender: k.sender.clone() }),
            sender_name: store.trust_get(&k.sender)?.map(|t| t.name),
            verified,
            sender: k.sender,
            key_id: k.key_id,
            reason: k.reason,
            first_seen: k.first_seen,
            last_seen: k.last_seen,
            count: k.count,
        });
    }
    for p in store.pending_list()? {
        let knock = store.latest_receipt_from(&p.public_key, "UNTRUSTED_SENDER")?;
        // The knock as it came, read once for what it claims and its v1.1 fields.
        let read = knock.as_ref().and_then(|k| k.body.as_deref()).and_then(|raw| gatehouse_epp::Envelope::parse(raw.as_bytes()).ok());
        let ext = read.as_ref().and_then(|e| gatehouse_epp::v11::Extensions::read(e).ok());
        let scope = knock.as_ref().and_then(|k| k.scope.clone()).or_else(|| p.scopes_tried.first().cloned());
        let risk = match knock.as_ref().and_then(|k| Some((k.envelope_id.as_deref()?, k.prompt.as_deref()?, &k.receipt_id))) {
            // A stranger has no entry of the user's: every link of its is flagged.
            Some((id, text, ours)) => risk_flags(store, id, text, None, Some(ours))?,
            None => Vec::new(),
        };
        let (covered, covered_total) = match &scope {
            Some(sc) => store.covered_by_grant(&p.public_key, sc, knock.as_ref().and_then(|k| k.envelope_id.as_deref()), COVERED_SHOWN)?,
            None => (Vec::new(), 0),
        };
        items.push(ConsentItem::UnknownSender {
            risk,
            covered,
            covered_total,
            later: later_of(ConsentTarget::UnknownSender { public_key: p.public_key.clone(), knock: None }),
            claims: match &read {
                Some(env) => claims(store, &p.public_key, env, ext.as_ref())?,
                None => Vec::new(),
            },
            source: Source::at(&p.door),
            envelope_id: knock.as_ref().and_then(|k| k.envelope_id.clone()),
            knock: knock.as_ref().map(|k| k.receipt_id.clone()),
            scope,
            extras: ext.as_ref().filter(|x| !x.is_empty()).map(gatehouse_epp::v11::Extras::of),
            prompt: knock.and_then(|k| k.prompt),
            public_key: p.public_key,
            first_seen: p.first_seen,
            last_seen: p.last_seen,
            count: p.count,
            scopes_tried: p.scopes_tried,
        });
    }
    Ok(items)
}

pub fn waiting_count(store: &Store) -> Result<usize, ConsentError> {
    Ok(store.count_waiting()? as usize)
}
