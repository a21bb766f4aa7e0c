//! An arrival as its door hands it to the gate: who proved what, what it asks for, and
//! what is kept of it, in no protocol's words.

use chrono::{DateTime, Utc};
use gatehouse_store::TrustEntry;

/// One arrival its door verified, in no protocol's words.
pub struct Arrival<'a> {
    /// The door it came by, as the composition names it (its knocks are found by it).
    pub door: &'static str,
    /// How it came (`http`, `folder:<file>`, a door's name), as its receipt shows.
    pub transport: &'a str,
    /// The key its sender proved.
    pub sender: String,
    /// The scope it asks for: its hold and its executor are decided by it.
    pub scope: String,
    /// Every scope it asks for, when that is not just `scope` (a credential naming
    /// several; none for what only steers work it started): each is judged.
    pub asks: Option<&'a [String]>,
    /// Its size as it arrived.
    pub size: u64,
    /// Whose behalf it is sent on, if anyone's.
    pub on_behalf_of: Option<String>,
    pub at: DateTime<Utc>,
    pub received_at: &'a str,
    pub receipt_id: &'a str,
    /// The user's one-time "allow once", standing in for a trust entry.
    pub consent: Option<&'a TrustEntry>,
    /// What is kept when it is let in.
    pub kept: Kept<'a>,
    /// Whether its bytes are kept with a refusal (and whole with a knock, so "allow" can
    /// deliver it); a door whose senders send again keeps none.
    pub keeps_refused: bool,
}

/// What an arrival let in is kept as.
pub struct Kept<'a> {
    pub id: String,
    pub recipient: String,
    pub payload_type: Option<String>,
    pub conversation_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub prompt: String,
    /// When its sender says it was made, and until when it holds.
    pub timestamp: String,
    pub expires_at: String,
    pub expires_at_ms: i64,
    /// What a replay of it is known by.
    pub nonce: Vec<u8>,
    /// How its proof covered it (`reference`, `variant`, `transport`).
    pub signed_form: &'static str,
    pub raw: &'a [u8],
    pub raw_sha256: String,
}

impl<'a> Arrival<'a> {
    /// An arrival the gate judges and counts but keeps nothing of: its door keeps it with
    /// what was decided (a step of one of the user's own agents, a tool server's call),
    /// and refusals are the door's to record. `received_at` is `at` as text.
    pub fn counted_only(door: &'static str, sender: String, scope: &str, size: u64, at: DateTime<Utc>, received_at: &'a str) -> Arrival<'a> {
        Arrival {
            door,
            transport: door,
            sender,
            scope: scope.to_string(),
            asks: None,
            size,
            on_behalf_of: None,
            at,
            received_at,
            receipt_id: "",
            consent: None,
            kept: Kept {
                id: String::new(),
                recipient: String::new(),
                payload_type: None,
                conversation_id: None,
                in_reply_to: None,
                prompt: String::new(),
                timestamp: String::new(),
                expires_at: String::new(),
                expires_at_ms: 0,
                nonce: Vec::new(),
                signed_form: "transport",
                raw: &[],
                raw_sha256: String::new(),
            },
            keeps_refused: false,
        }
    }
}
