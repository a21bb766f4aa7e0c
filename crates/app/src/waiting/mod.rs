//! What waits for the user: the one list (and, counted, the window's badge and the tray)
//! of everything from every door that a decision of the user's would let through. The
//! gate names no protocol, so each door's waiting messages are read here, where the
//! application knows the doors (an EPP knock's declared v1.1 fields, who it claims to be):
//! each kind has its [`Holds`], which describes what it holds and settles a decision on it
//! (knocks at any door, held envelopes, held UAMP asks, key changes, guardian steps).

mod asks;
mod held;
mod key_changes;
pub(crate) mod knocks;
pub mod shown;
mod steps;
mod tool_changes;

pub use tool_changes::{shown as tool_shown, ToolShown};

use crate::doors::gate::consent::{now_string, ConsentError, Decision, Lasting};
use crate::doors::Gate;
use crate::target::{ConsentTarget, Source};
use chrono::{DateTime, Utc};
use gatehouse_store::{Policy, Store, StoreError};
use serde::Serialize;

/// One thing waiting for the user.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
        extras: Option<gatehouse_gate::declared::Declared>,
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
        /// What an MCP server offers: the tools it listed, pinned as shown when it is let in.
        #[serde(default)]
        tools: Vec<ToolShown>,
        /// A sender the user trusts already (for other scopes), by the name it goes by:
        /// it asks about a scope it is not allowed.
        #[serde(default)]
        known_as: Option<String>,
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
        extras: Option<gatehouse_gate::declared::Declared>,
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
    GuardianStep {
        step: gatehouse_store::asop::AsopStepRow,
        /// Flags in what the step's agent says the tool it calls does (an MCP server's own
        /// description of its tool): a claim, shown with its flags before the user allows.
        risk: Vec<gatehouse_risk::Flag>,
    },
    /// An MCP server the user let in lists tools that differ from those they let in: held
    /// from the user's AI until accepted.
    ToolChange {
        /// The server's registry key.
        server: String,
        server_name: String,
        tools: Vec<ToolShown>,
        /// What these tools are known by: a decision names it.
        digest: String,
        later: Option<String>,
    },
}

/// How many past messages a prompt lists of those a grant would have let in.
pub(crate) const COVERED_SHOWN: usize = 5;

impl ConsentItem {
    /// The name the audit log and "ask me later" give what this prompt decides; none for
    /// a guardian step, which its agent's door decides (allow, deny, redact, a rule).
    pub fn target(&self) -> Option<ConsentTarget> {
        Some(match self {
            ConsentItem::UnknownSender { public_key, knock, .. } => ConsentTarget::UnknownSender { public_key: public_key.clone(), knock: knock.clone() },
            ConsentItem::Held { row_id, .. } => ConsentTarget::Held { row_id: *row_id },
            ConsentItem::HeldAsk { stream_id, .. } => ConsentTarget::HeldAsk { stream_id: stream_id.clone() },
            ConsentItem::KeyChange { sender, .. } => ConsentTarget::KeyChange { sender: sender.clone() },
            ConsentItem::GuardianStep { step, .. } => ConsentTarget::Step { row: step.row },
            ConsentItem::ToolChange { server, digest, .. } => ConsentTarget::ToolChange { server: server.clone(), digest: digest.clone() },
        })
    }
}

/// A knock's claim to be (or act for) an existing contact.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Claim {
    pub contact_id: i64,
    pub contact_name: String,
    pub verified: bool,
    /// How it claims it, in words.
    pub how: String,
}

/// Which contacts a knock claims to be or act for: the keys it names as others' (as its
/// door read them: a delegation, attestations), each a contact's key that is not its own.
pub fn claims(store: &Store, sender: &str, names: &[(String, gatehouse_gate::declared::Relation)]) -> Result<Vec<Claim>, StoreError> {
    use gatehouse_gate::declared::Relation;
    let mut out: Vec<Claim> = Vec::new();
    for (key, relation) in names {
        let Some(c) = store.contact_of(key)? else { continue };
        if c.keys.iter().any(|k| k.key == gatehouse_store::sender_key(sender)) || out.iter().any(|o| o.contact_id == c.id) {
            continue;
        }
        let how = match relation {
            Relation::OnBehalfOf => "says it acts on behalf of",
            Relation::AttestedBy => "carries an attestation signed as",
        };
        out.push(Claim { how: format!("{how} {}, with a key that is not theirs", c.name), verified: c.verified(), contact_id: c.id, contact_name: c.name });
    }
    Ok(out)
}

/// When a timed grant for `scope` ended, if it has (what holds the message).
pub(crate) fn ended(trust: Option<&gatehouse_store::TrustEntry>, scope: &str, now: DateTime<Utc>) -> Option<String> {
    let until = trust?.policy.grant_until.get(scope)?;
    (!gatehouse_store::grant_lasts(until, now)).then(|| until.clone())
}

/// A door's part of what waits: it describes what it holds (as the prompt shows it) and
/// carries out the user's decision on it. The one list is theirs together, in this order.
pub(crate) trait Holds: Sync {
    fn describe(&self, store: &Store, now: DateTime<Utc>, later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError>;
    /// How many items it holds, of the counts read once for every holder.
    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize;
    /// Whether a decision on `target` is this holder's to carry out.
    fn holds(&self, target: &ConsentTarget) -> bool;
    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError>;
}

/// Everything that holds something for the user: the user's own agents' steps first (each
/// holds an agent's request open), then newest first by kind.
pub(crate) const HOLDERS: [&dyn Holds; 6] =
    [&steps::Steps, &asks::HeldAsks, &held::HeldEnvelopes, &key_changes::KeyChanges, &tool_changes::ToolChanges, &knocks::Knocks];

/// A decision as a holder carries it out.
#[derive(Clone, Copy)]
pub(crate) struct Decided<'a> {
    pub gate: &'a Gate,
    pub decision: Decision,
    /// When a grant it gives ends (`None`: for good).
    pub end: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
    /// A did:web agent's keys, fetched when the user lets it in.
    pub uamp_keys: &'a [gatehouse_store::UampKey],
}

impl Decided<'_> {
    /// When it was decided, as the store and the audit log write it.
    pub fn at(&self) -> String {
        crate::doors::gate::consent::now_string(self.now)
    }
}

/// The prompts put off ("ask me later") that are still away.
pub(crate) struct Later(std::collections::HashMap<String, String>);

impl Later {
    fn read(store: &Store, now: DateTime<Utc>) -> Result<Later, ConsentError> {
        Ok(Later(store.later_list()?.into_iter().filter(|(_, until)| gatehouse_store::grant_lasts(until, now)).collect()))
    }

    /// Until when the prompt deciding `t` is put off, while it is.
    pub fn of(&self, t: ConsentTarget) -> Option<String> {
        self.0.get(&t.key()).cloned()
    }
}

/// Everything waiting for the user: the one meaning of "waiting" (the list the window
/// shows and, counted, its badge and the tray), as [`HOLDERS`] describe it.
pub fn pending(store: &Store) -> Result<Vec<ConsentItem>, ConsentError> {
    pending_at(store, crate::doors::gate::clock::now())
}

/// [`pending`] as it stands at `now` (which grants have ended, which prompts put off are back).
pub fn pending_at(store: &Store, now: DateTime<Utc>) -> Result<Vec<ConsentItem>, ConsentError> {
    let later = Later::read(store, now)?;
    let mut items = Vec::new();
    for h in HOLDERS {
        h.describe(store, now, &later, &mut items)?;
    }
    Ok(items)
}

/// How many items wait, counted by the same [`HOLDERS`] that list them.
pub fn waiting_count(store: &Store) -> Result<usize, ConsentError> {
    let counts = store.waiting_counts()?;
    Ok(HOLDERS.iter().map(|h| h.count(&counts)).sum())
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecisionOutcome {
    pub message: String,
    /// What became of the waiting message the decision delivered, if any.
    pub delivered: Option<gatehouse_gate::Delivered>,
}

/// Grants `scope` in `policy` until `end` (for good when `None`): a timed grant is listed
/// with its end, a grant for good replaces it. `held_only`: the sender's envelopes are
/// admitted already and only the hold is lifted.
pub(crate) fn grant(policy: &mut Policy, scope: &str, end: Option<DateTime<Utc>>, held_only: bool) {
    match end {
        Some(end) => {
            policy.grant_until.insert(scope.to_string(), now_string(end));
        }
        None => {
            policy.grant_until.remove(scope);
            if held_only && !policy.consent_granted_scopes.iter().any(|s| s == scope) {
                policy.consent_granted_scopes.push(scope.to_string());
            }
        }
    }
}

/// Why nothing from a new key of a verified contact may be let through yet.
pub(crate) const UNVERIFIED: &str = "this is a new key of a verified contact: verify it first (People & agents → the contact → Verify), then decide";

/// What an "allow" for the scope granted beyond the one message, in words.
pub(crate) fn granted_words(decision: Decision, end: Option<DateTime<Utc>>) -> String {
    match (decision, end) {
        (Decision::AlwaysAllowScope, Some(_)) => {
            format!(" Its next messages in this scope run without asking {}; then you are asked again.", Lasting::words(end))
        }
        (Decision::AlwaysAllowScope, None) => " Its next messages in this scope run without asking.".into(),
        _ => String::new(),
    }
}

/// "What waits changed", a burst at a time: a flood of strangers wakes a follower a few
/// times a second, not once per knock.
pub struct Bursts {
    changes: tokio::sync::broadcast::Receiver<()>,
    gather: std::time::Duration,
    /// A change heard whose burst is still being gathered (kept if the wait is dropped).
    heard: bool,
}

/// How long a burst of changes is gathered into one.
pub const GATHER: std::time::Duration = std::time::Duration::from_millis(200);

/// The one signal that what waits changed, here and (a team's gate) at every node: an
/// arrival that adds to it ([`tell`]), a decision made anywhere, a device looking. Who
/// shows what waits reads [`pending`] and [`waiting_count`] again when it comes.
pub fn follow(store: &Store) -> Bursts {
    Bursts { changes: store.follow_waiting(), gather: GATHER, heard: false }
}

/// Only what adds to what waits at this node (a knock, a hold, a key change), never a
/// decision: who tells people that something new waits follows this.
pub fn arrivals(gate: &Gate) -> Bursts {
    Bursts { changes: gate.subscribe_waiting(), gather: GATHER, heard: false }
}

/// Says "what waits changed" for each burst of [`arrivals`], until the gate goes: the
/// gate's arrivals join the one signal [`follow`] hears. The composition runs one per gate.
pub async fn tell(gate: std::sync::Arc<Gate>) {
    let mut arrivals = arrivals(&gate);
    while arrivals.next().await {
        let store = gate.store().clone();
        let _ = tokio::task::spawn_blocking(move || store.waiting_changed()).await;
    }
}

impl Bursts {
    /// Gathers a burst for `gather` instead.
    pub fn gathering(self, gather: std::time::Duration) -> Bursts {
        Bursts { gather, ..self }
    }

    /// Waits for the next change, then for the gathering time more, taking what came
    /// meanwhile as the same burst; false once the signal is gone. Cancel-safe: a change
    /// heard by a wait that is dropped (a `select!` that took another branch) is told by
    /// the next one.
    pub async fn next(&mut self) -> bool {
        use tokio::sync::broadcast::error::{RecvError, TryRecvError};
        if !self.heard {
            match self.changes.recv().await {
                Ok(()) | Err(RecvError::Lagged(_)) => self.heard = true,
                Err(RecvError::Closed) => return false,
            }
        }
        tokio::time::sleep(self.gather).await;
        while let Ok(()) | Err(TryRecvError::Lagged(_)) = self.changes.try_recv() {}
        self.heard = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The phone's live view waits for a change or its 20 s tick: a change heard just
    // before the tick must still be told after it.
    #[tokio::test]
    async fn a_change_heard_by_a_dropped_wait_is_told_by_the_next() {
        let (tx, rx) = tokio::sync::broadcast::channel(4);
        let mut b = Bursts { changes: rx, gather: std::time::Duration::from_millis(200), heard: false };
        tx.send(()).unwrap();
        tokio::select! {
            _ = b.next() => panic!("the burst is still being gathered"),
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
        }
        let told = tokio::time::timeout(std::time::Duration::from_secs(1), b.next()).await;
        assert_eq!(told, Ok(true), "the change heard before the other branch won is told");
    }
}
