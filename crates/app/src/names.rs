//! The names a person meets senders by: the one the user gave (to the sender, and so to
//! its person: the store keeps one name per contact), else one shown form of an unnamed
//! identity, the same in every view, the CLI, the phone page and notifications
//! (`tests/data/unnamed-names.json` holds it; the window's `format.ts` reads it too).

use crate::doors::gate::consent::{now_string, ConsentError};
use chrono::{DateTime, Utc};
use gatehouse_store::Store;

/// Longest name kept, in characters.
pub const MAX_NAME: usize = 80;

/// A name as the user typed it, trimmed; refused when empty, too long or holding control
/// characters (a name is drawn in lists and notifications).
pub fn check(name: &str) -> Result<String, ConsentError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ConsentError::Invalid(format!("a name is 1 to {MAX_NAME} characters, without control characters")));
    }
    Ok(name.to_string())
}

/// How a sender is shown: the name the user gave it, else its unnamed form.
pub fn shown(name: Option<&str>, key: &str) -> String {
    match name.map(str::trim) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => unnamed(key),
    }
}

/// How `key` is shown now: its trust entry's name, else its unnamed form.
pub fn of(ctx: &crate::Context, key: &str) -> crate::Result<String> {
    Ok(shown(known_as(ctx, key)?.as_deref(), key))
}

/// The name a sender the user trusts goes by; None for one it does not.
pub fn known_as(ctx: &crate::Context, key: &str) -> crate::Result<Option<String>> {
    Ok(ctx.store.trust_name(key)?)
}

/// A short label for a sender the user has not named yet.
pub(crate) fn unnamed(key: &str) -> String {
    // A did:web is a name its owner chose (did:web:evil-mybank.com): shown whole, since
    // any part of it could be chosen to look like another. Other ids begin with key
    // material; cut by characters, never bytes (an asop: id is the agent's own text).
    let a2a = key.strip_prefix(crate::doors::a2a::KEY_PREFIX).or_else(|| key.strip_prefix(crate::doors::a2a::TOKEN_PREFIX));
    if let Some(name) = crate::doors::mcp::signed::name_of(key) {
        // The name its app's configuration runs it under, and the start of its own key.
        let hex = key.rsplit(':').next().unwrap_or_default();
        format!("MCP server {name} ({})", hex.chars().take(8).collect::<String>())
    } else if let Some(hash) = a2a {
        // Only the hash of what it proved is known of it.
        format!("A2A agent {}", hash.chars().take(8).collect::<String>())
    } else if let Some(id) = key.strip_prefix("asop:") {
        // One of the user's own agents, by the id it registered with (cut by characters).
        let cut: String = id.chars().take(32).collect();
        format!("Your agent {cut}{}", if id.chars().count() > 32 { "…" } else { "" })
    } else if key.starts_with("did:web:") {
        format!("Agent {key}")
    } else if key.starts_with("did:") {
        let tail: String = key.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        format!("Agent …{tail}")
    } else {
        format!("Sender {}", key.chars().take(8).collect::<String>())
    }
}

/// Gives a trusted sender (and its person) the user's name for it. Audited.
pub fn name_sender(store: &Store, key: &str, name: &str, now: DateTime<Utc>) -> Result<(), ConsentError> {
    let name = check(name)?;
    let Some(entry) = store.trust_get(key)? else { return Err(ConsentError::Gone) };
    store.trust_update(key, Some(&name), &entry.policy, None)?;
    store.name_person_of(key, &name)?;
    store.audit("trust.name", Some(&gatehouse_store::sender_key(key)), &serde_json::json!({"name": name, "was": entry.name}), &now_string(now))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The one shown form of an unnamed identity, as the window's `format.ts` reads it too.
    #[test]
    fn an_unnamed_identity_is_shown_as_the_shared_table_says() {
        let table: Vec<serde_json::Value> = serde_json::from_str(include_str!("../../../tests/data/unnamed-names.json")).unwrap();
        assert!(table.len() >= 6);
        for row in table {
            let (key, shown) = (row["key"].as_str().unwrap(), row["shown"].as_str().unwrap());
            assert_eq!(super::shown(None, key), shown, "{key}");
            assert_eq!(super::shown(Some("  "), key), shown, "a blank name is no name");
        }
        assert_eq!(super::shown(Some(" Alice "), &"ab".repeat(32)), "Alice");
    }

    #[test]
    fn an_unnamed_form_never_cuts_a_character_and_shows_a_did_web_whole() {
        assert_eq!(super::unnamed("asop:ééééééééé"), "Your agent ééééééééé");
        assert_eq!(super::unnamed(&format!("asop:{}", "é".repeat(40))), format!("Your agent {}…", "é".repeat(32)));
        assert_eq!(super::unnamed("did:web:evil-mybank.com"), "Agent did:web:evil-mybank.com");
        assert_eq!(super::unnamed(&"ab".repeat(32)), "Sender abababab");
        assert_eq!(super::unnamed(&format!("a2a:key:{}", "cd".repeat(32))), "A2A agent cdcdcdcd");
    }

    #[test]
    fn a_name_is_trimmed_and_bounded() {
        assert_eq!(super::check("  Alice ").unwrap(), "Alice");
        assert!(super::check("").is_err() && super::check("   ").is_err());
        assert!(super::check("Al\u{1b}[31mice").is_err());
        assert!(super::check(&"é".repeat(80)).is_ok() && super::check(&"é".repeat(81)).is_err());
    }
}
