//! What an arrival tells of itself beyond its message, as its door read it: what it
//! declared (shown, never acted on) and the keys it names as others' (checked against the
//! user's contacts, so a stranger claiming a contact is flagged). A door reads these from
//! what it kept; the window and the CLI show them in no protocol's words.

use serde::{Deserialize, Serialize};

/// What a sender declared beyond its message: the integrity hash it passed, what it asks
/// to use, who attested to it, and fields kept only to be shown (payments, stakes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Declared {
    /// The algorithm of the integrity hash the message matched.
    pub integrity: Option<String>,
    /// What the sender asks to use, one sentence each ("read files in ~/Documents").
    pub capabilities: Vec<String>,
    /// Attestations, author first, each checked under its own key.
    pub provenance: Vec<Attested>,
    /// Fields kept and shown, never acted on.
    pub inert: Vec<Inert>,
}

impl Declared {
    pub fn is_empty(&self) -> bool {
        self.integrity.is_none() && self.capabilities.is_empty() && self.provenance.is_empty() && self.inert.is_empty()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Attested {
    pub role: String,
    pub identity: String,
    pub statement: Option<String>,
    pub timestamp: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Inert {
    /// `payment`, `payment_proof` or `stake`.
    pub field: String,
    /// `0.50 USDC on solana`, as the sender wrote it.
    pub summary: String,
    pub json: String,
}

/// How an arrival names another's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// It says it is sent on that key's behalf.
    OnBehalfOf,
    /// It carries an attestation signed as that key.
    AttestedBy,
}

/// What a door read of an arrival it kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Told {
    /// None when it declared nothing (or could not be read again).
    pub declared: Option<Declared>,
    /// The keys it names as others', in the order it names them.
    pub names: Vec<(String, Relation)>,
}
