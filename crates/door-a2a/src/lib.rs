//! The A2A door: Gatehouse as an A2A 1.0 agent in front of the gate. A message is an
//! arrival; the gate's verdict is the task's state in A2A's words (accepted → submitted,
//! then working and completed with the executor's answer as an artifact; held for the
//! user → input-required; refused or knocking → rejected).
//!
//! A2A messages are not signed: who sends is what the transport proved ([`Caller`]): a
//! bearer token the user issued (its hash is the contact's key) or the key of a client
//! certificate (mTLS). A caller with neither is refused before anything is kept.
//!
//! - [`http`]: the JSON-RPC endpoint, streams (SSE) and the Agent Card
//! - `admit`: one message from request to a stored task or a receipt of its refusal
//! - `task`: a stored message as an A2A task
//! - [`work`]: an accepted message as its executor sees it
//! - [`client`]: Gatehouse as an A2A client (an agent's card, a message, its answer)
//! - [`executor`]: the A2A executor (a prompt sent to an agent the user added), a delegate

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1).
#![cfg_attr(not(test), deny(clippy::string_slice))]

mod admit;
pub mod client;
pub mod executor;
pub mod http;
mod task;
pub mod work;

use std::sync::Arc;

use ed25519_dalek::SigningKey;
use gatehouse_a2a::rpc::RpcError;
use gatehouse_gate::Gate;
use gatehouse_store::Store;
use sha2::{Digest, Sha256};

/// This door's name, where it records what arrived or knocked at it.
pub const DOOR: &str = "a2a";
/// A contact known by a token the user issued: the token's SHA-256 follows.
pub const TOKEN_PREFIX: &str = "a2a:token:";
/// A contact known by its client certificate's key: the key's SHA-256 (SPKI) follows.
pub const KEY_PREFIX: &str = "a2a:key:";
/// The scope a message asks for when it names none (`metadata.scope`).
pub const DEFAULT_SCOPE: &str = "ask";
/// A request's bytes.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// Streams (SSE) open at once; past this a stream is refused until one ends.
pub const MAX_STREAMS: usize = 64;
/// Streams one caller may hold open at once: no caller takes the others' share.
pub const MAX_STREAMS_PER_CALLER: usize = 8;

/// The setting (a bool, off unless the user turns it on) that lets A2A agents on this
/// computer call over plain HTTP on the loopback listener. A token is needed there as on
/// TLS; a client certificate cannot be shown without TLS.
pub const PLAIN_LOOPBACK_SETTING: &str = "a2a_plain_loopback";

/// Where the door is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// The TLS listener (with UAMP): always.
    Tls,
    /// The plain HTTP listener bound to this computer's loopback: only while the user
    /// allows it ([`PLAIN_LOOPBACK_SETTING`]), checked on every request.
    PlainLoopback,
}

/// Whether the user lets agents on this computer call over plain HTTP.
pub fn plain_loopback_allowed(store: &Store) -> Result<bool, gatehouse_store::StoreError> {
    Ok(store.setting::<bool>(PLAIN_LOOPBACK_SETTING)?.unwrap_or(false))
}

/// Who is calling, as the transport proved it; each is a key in the user's registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A bearer token the user issued: `a2a:token:<sha256>`.
    Token(String),
    /// A client certificate's key: `a2a:key:<sha256 of its SPKI>`.
    Key(String),
}

impl Caller {
    /// The key the user's registry knows this caller by.
    pub fn id(&self) -> &str {
        match self {
            Caller::Token(id) | Caller::Key(id) => id,
        }
    }

    /// How it proved who it is, in words for the user.
    pub fn proof(&self) -> &'static str {
        match self {
            Caller::Token(_) => "a token you issued",
            Caller::Key(_) => "its certificate's key (mTLS)",
        }
    }
}

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The registry key of the holder of `token`.
pub fn token_id(token: &str) -> String {
    format!("{TOKEN_PREFIX}{}", sha256_hex(token.as_bytes()))
}

/// The registry key of a client certificate's key (`spki_sha256` as
/// [`gatehouse_net::peer::PeerKey`] gives it).
pub fn key_id(spki_sha256: &str) -> String {
    format!("{KEY_PREFIX}{spki_sha256}")
}

/// Whether `id` is an A2A caller's key (either form, a whole lower-case SHA-256).
pub fn is_caller_id(id: &str) -> bool {
    let hash = id.strip_prefix(TOKEN_PREFIX).or_else(|| id.strip_prefix(KEY_PREFIX));
    hash.is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// A new token, shown once to the user to give the agent, and the key it is known by
/// (only that hash is kept).
pub fn new_token() -> (String, String) {
    use rand::RngCore as _;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = format!("gha_{}", hex::encode(bytes));
    let id = token_id(&token);
    (token, id)
}

/// Why a caller is not served at all (HTTP 401): nothing of the request is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthenticated(pub String);

/// Streams open now, in all and by caller.
#[derive(Default)]
struct Streams {
    total: usize,
    by_caller: std::collections::HashMap<String, usize>,
}

pub struct A2aDoor {
    gate: Arc<Gate>,
    key: SigningKey,
    streams: std::sync::Mutex<Streams>,
}

/// A stream's place, held while it is open; given back when dropped.
pub struct StreamSlot {
    door: Arc<A2aDoor>,
    caller: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut s = self.door.streams.lock().unwrap_or_else(|p| p.into_inner());
        s.total = s.total.saturating_sub(1);
        if let Some(n) = s.by_caller.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.by_caller.remove(&self.caller);
            }
        }
    }
}

impl A2aDoor {
    /// The door, with the identity key that signs its Agent Card.
    pub fn new(gate: Arc<Gate>, key: SigningKey) -> Arc<A2aDoor> {
        Arc::new(A2aDoor { gate, key, streams: std::sync::Mutex::default() })
    }

    /// A place for one more stream of `caller`'s, or why there is none (taken before
    /// anything the request asks is done: a request refused for room is not accepted).
    pub fn reserve_stream(self: &Arc<Self>, caller: &Caller) -> Result<StreamSlot, String> {
        let mut s = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let mine = s.by_caller.get(caller.id()).copied().unwrap_or(0);
        if mine >= MAX_STREAMS_PER_CALLER {
            return Err(format!("you have {MAX_STREAMS_PER_CALLER} streams open; wait for one to end, or follow a task with GetTask"));
        }
        if s.total >= MAX_STREAMS {
            return Err(format!("{MAX_STREAMS} streams are open; try again shortly, or follow a task with GetTask"));
        }
        s.total = s.total.saturating_add(1);
        s.by_caller.insert(caller.id().to_string(), mine.saturating_add(1));
        Ok(StreamSlot { door: self.clone(), caller: caller.id().to_string() })
    }

    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    pub fn store(&self) -> &Arc<Store> {
        self.gate.store()
    }

    /// Who is calling: a bearer token the user issued (known to the registry, trusted,
    /// blocked or revoked: the gate then decides), else a client certificate's key (a
    /// stranger's key knocks). A token the registry does not know proves nothing.
    pub fn authenticate(&self, bearer: Option<&str>, peer: Option<&str>) -> Result<Caller, Unauthenticated> {
        if let Some(token) = bearer {
            let id = token_id(token);
            let view = self
                .store()
                .admission(&id, gatehouse_gate::executor::SETTINGS_KEY)
                .map_err(|e| Unauthenticated(format!("the gate could not read its registry: {e}")))?;
            if view.trust.is_none() && !view.blocked && view.revoked.is_none() {
                return Err(Unauthenticated("this token was not issued by the user of this gate".into()));
            }
            return Ok(Caller::Token(id));
        }
        match peer {
            Some(spki) => Ok(Caller::Key(key_id(spki))),
            None => Err(Unauthenticated("authenticate with the bearer token the user of this gate issued to you, or with a client certificate (mTLS)".into())),
        }
    }
}

/// A request's failure, in A2A's words.
pub(crate) fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(gatehouse_a2a::rpc::code::INTERNAL, format!("the gate failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_ids_are_whole_hashes_of_what_was_proved() {
        let (token, id) = new_token();
        assert_eq!(token_id(&token), id);
        assert!(is_caller_id(&id));
        assert!(is_caller_id(&key_id(&"ab".repeat(32))));
        assert!(!is_caller_id(&key_id("ab")));
        assert!(!is_caller_id(&key_id(&"AB".repeat(32))));
        assert!(!is_caller_id(&format!("did:key:{}", "a".repeat(64))));
    }
}
