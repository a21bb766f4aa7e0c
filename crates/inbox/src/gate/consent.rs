//! The consent queue: what waits for the user from every door (unknown senders' knocks,
//! held envelopes, held UAMP asks, a trusted sender's key change), what a decision can
//! be, and which scope a grant may name. Decisions are carried out by the application layer (`gatehouse_app::consent`),
//! which reaches the door holding what is decided; trust changes are in the application layer (`gatehouse-app`).

use chrono::{DateTime, Utc};
use gatehouse_epp::Receipt;
use gatehouse_store::{ExecStatus, Store, StoreError};
use serde::{Deserialize, Serialize};

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

impl ConsentTarget {
    /// How the audit log and the deferred prompts name it.
    pub fn key(&self) -> String {
        match self {
            ConsentTarget::UnknownSender { public_key, .. } => gatehouse_store::sender_key(public_key),
            ConsentTarget::Held { row_id } => format!("envelope-row:{row_id}"),
            ConsentTarget::HeldAsk { stream_id } => format!("uamp-stream:{stream_id}"),
            ConsentTarget::KeyChange { sender } => format!("key-change:{}", gatehouse_store::sender_key(sender)),
        }
    }
}

/// The risk flags of a message's text, with those the user dismissed marked. Links to the
/// hosts the user's own trust entry for the sender (`entry`) allows (`x-capabilities`) are not
/// flagged; what the message itself declares never relaxes a flag (it is unsigned: a
/// sender or relay declaring `com` would silence every .com link).
///
/// `ours` names the message by a receipt id Gatehouse gave it (random, never reused),
/// under which its text never changes: the scan (17 ms for a 1 MiB text) is kept under
/// it, so a list of 256 waiting prompts is not scanned again at every redraw.
pub fn risk_flags(
    store: &Store,
    message_id: &str,
    text: &str,
    entry: Option<&gatehouse_store::TrustEntry>,
    ours: Option<&str>,
) -> Result<Vec<gatehouse_risk::Flag>, StoreError> {
    let hosts: Vec<String> = entry
        .and_then(|t| t.policy.capabilities.as_ref())
        .and_then(|c| serde_json::from_value::<gatehouse_epp::v11::Capabilities>(c.allowed.clone()).ok())
        .and_then(|c| c.network)
        .map(|n| n.domains)
        .unwrap_or_default();
    let mut flags = match ours {
        Some(id) => scanned(id, text, &hosts),
        None => gatehouse_risk::scan(text, &hosts),
    };
    if !flags.is_empty() {
        let dismissed = store.risk_dismissed(message_id)?;
        for f in &mut flags {
            f.dismissed = dismissed.iter().any(|(k, s)| k == f.kind.as_str() && *s == f.start);
        }
    }
    Ok(flags)
}

/// Scans kept, by our id for the message and the hosts its links were judged against.
const SCANS_KEPT: usize = 4096;

type Scans = std::collections::HashMap<(String, Vec<String>), Vec<gatehouse_risk::Flag>>;

fn scanned(ours: &str, text: &str, hosts: &[String]) -> Vec<gatehouse_risk::Flag> {
    static SCANS: std::sync::OnceLock<std::sync::Mutex<Scans>> = std::sync::OnceLock::new();
    let scans = SCANS.get_or_init(Default::default);
    let key = (ours.to_string(), hosts.to_vec());
    if let Some(f) = scans.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return f.clone();
    }
    let flags = gatehouse_risk::scan(text, hosts);
    let mut kept = scans.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= SCANS_KEPT {
        kept.clear();
    }
    kept.insert(key, flags.clone());
    flags
}

/// What an unknown key is, decided by how it reached Gatehouse: its registry key's
/// namespace (`asop:` for agents at the guardian, `did:` for UAMP) and the one scope only
/// Gatehouse itself records (an IntentSite's answer signed by a key not yet pinned). Senders cannot
/// choose it: EPP envelopes in the reserved scopes are refused before they can knock, and
/// a UAMP knock's scope is its signed intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    EppSender,
    UampAgent,
    IntentSite,
    AsopAgent,
}

/// Scopes Gatehouse records for its own doors; no EPP envelope may use them.
pub const RESERVED_SCOPES: [&str; 2] = [ASOP_SCOPE, INTENT_SCOPE];

/// The scope under which the user's own agents are registered with the ASOP guardian.
pub const ASOP_SCOPE: &str = "asop";
/// The scope under which IntentSites' keys are pinned.
pub const INTENT_SCOPE: &str = "intentweb";

impl Source {
    pub fn of(key: &str, scope: Option<&str>) -> Source {
        if key.starts_with("asop:") {
            Source::AsopAgent
        } else if scope == Some(INTENT_SCOPE) {
            // IntentSite keys are DIDs too; only intent.rs records this scope (EPP refuses
            // it, and a UAMP knock asks for its intent).
            Source::IntentSite
        } else if key.starts_with("did:") {
            Source::UampAgent
        } else {
            Source::EppSender
        }
    }

    /// The one scope a grant for this source may name, when it is fixed.
    pub fn fixed_scope(self) -> Option<&'static str> {
        match self {
            Source::AsopAgent => Some(ASOP_SCOPE),
            Source::IntentSite => Some(INTENT_SCOPE),
            Source::EppSender | Source::UampAgent => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    AllowOnce,
    /// Allow the scope for as long as the [`Lasting`] given with it says.
    AlwaysAllowScope,
    /// Neither allow nor deny yet: the prompt waits, out of the way, and asks again later.
    AskLater,
    Deny,
    Block,
}

/// How long an "allow" for a scope lasts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "for", rename_all = "snake_case")]
pub enum Lasting {
    #[default]
    Always,
    Hour,
    /// Until the end of today, on this computer's clock.
    Tonight,
    /// Until the end of `date` (YYYY-MM-DD), on this computer's clock.
    Until {
        date: String,
    },
}

impl Lasting {
    /// When a grant made at `now` ends; `None` for a grant for good.
    pub fn end(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, ConsentError> {
        use chrono::{Local, NaiveDate, TimeZone};
        // The first moment of the day after `day`, on the user's clock (the earliest
        // reading when a clock change makes it ambiguous).
        let end_of = |day: NaiveDate| {
            let next = day.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)).ok_or_else(|| ConsentError::Invalid("that date is out of range".into()))?;
            Local
                .from_local_datetime(&next)
                .earliest()
                .map(|t| t.with_timezone(&Utc))
                .ok_or_else(|| ConsentError::Invalid("that day has no midnight on this computer's clock".into()))
        };
        match self {
            Lasting::Always => Ok(None),
            Lasting::Hour => Ok(Some(now + chrono::Duration::hours(1))),
            Lasting::Tonight => end_of(now.with_timezone(&Local).date_naive()).map(Some),
            Lasting::Until { date } => {
                let day =
                    NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").map_err(|_| ConsentError::Invalid(format!("{date:?} is not a date (YYYY-MM-DD)")))?;
                let end = end_of(day)?;
                if end <= now {
                    return Err(ConsentError::Invalid(format!("{date} has already passed")));
                }
                Ok(Some(end))
            }
        }
    }

    /// "for 1 hour", "until 17:30", in the user's words.
    pub fn words(end: Option<DateTime<Utc>>) -> String {
        match end {
            None => "for good".into(),
            Some(t) => format!("until {}", t.with_timezone(&chrono::Local).format("%a %-d %b, %H:%M")),
        }
    }
}

/// How long "ask me later" puts a prompt out of the way.
pub const LATER: chrono::Duration = chrono::Duration::hours(1);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConsentTarget {
    UnknownSender {
        public_key: String,
        /// The knock the prompt showed (its receipt id): the decision is carried out
        /// only on that one. A sender that knocked again since is asked about anew.
        #[serde(default)]
        knock: Option<String>,
    },
    Held {
        row_id: i64,
    },
    HeldAsk {
        stream_id: String,
    },
    /// A trusted sender's signature named a key not kept for it.
    KeyChange {
        sender: String,
    },
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecisionOutcome {
    pub message: String,
    /// The receipt of the envelope the decision delivered, if any.
    pub delivered: Option<Receipt>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("nothing is waiting for that decision any more")]
    Gone,
    /// What the prompt showed is no longer what waits: the sender knocked again.
    #[error("{0}")]
    Changed(String),
    #[error("{0}")]
    Invalid(String),
}

impl ConsentError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ConsentError::Store(_) => gatehouse_code::Code::Store,
            ConsentError::Gone => gatehouse_code::Code::Gone,
            ConsentError::Changed(_) => gatehouse_code::Code::Changed,
            ConsentError::Invalid(_) => gatehouse_code::Code::Invalid,
        }
    }
}

pub fn now_string(now: DateTime<Utc>) -> String {
    gatehouse_epp::utc_string(now)
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
    pending_at(store, crate::gate::clock::now())
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
            source: Source::of(&p.public_key, scope.as_deref()),
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

/// A consent prompt grants exactly the one scope it showed, and only a scope that fits
/// what is knocking: never `*`, never a reserved scope to anything but its own door.
pub fn grantable(key: &str, scope: &str) -> Result<(), ConsentError> {
    if !gatehouse_epp::envelope::is_scope_like(scope) {
        return Err(ConsentError::Invalid(format!("{scope:?} is not a single scope; a prompt grants one scope, never all")));
    }
    let source = Source::of(key, Some(scope));
    match source.fixed_scope() {
        Some(fixed) if fixed != scope => Err(ConsentError::Invalid(format!("this knock can only be let in for \"{fixed}\""))),
        None if RESERVED_SCOPES.contains(&scope) => Err(ConsentError::Invalid(format!("\"{scope}\" is reserved for Gatehouse's own agents and sites"))),
        _ => Ok(()),
    }
}
