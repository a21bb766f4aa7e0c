//! A2A agents the user lets in: by a token the user gives them (the agent's key in the
//! registry is the token's hash; the token is shown once), or, for an agent that knocked
//! with a client certificate, by the consent prompt like any stranger.

use chrono::{DateTime, Utc};
use gatehouse_store::{Policy, Store, TrustEntry};

use crate::doors::a2a;

/// A token issued, and the contact it lets in.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Issued {
    /// Shown once: give it to the agent. Only its hash is kept.
    pub token: String,
    pub entry: TrustEntry,
}

/// Issues a token for a new A2A agent named `name`, trusted for `scopes` (none given:
/// the scope a message asks for when it names none). Audited as any trust added.
pub fn token_issue(store: &Store, name: &str, scopes: &[String], now: DateTime<Utc>) -> crate::Result<Issued> {
    let (token, id) = a2a::new_token();
    let scopes = if scopes.is_empty() { vec![a2a::DEFAULT_SCOPE.to_string()] } else { scopes.to_vec() };
    let entry = TrustEntry {
        public_key: id,
        name: name.trim().to_string(),
        added_at: crate::doors::gate::consent::now_string(now),
        policy: Policy { allowed_scopes: scopes, ..Policy::default() },
    };
    crate::trust::add(store, &entry, now)?;
    Ok(Issued { token, entry })
}
