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
        _ => crate::trust::default_name(key),
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

/// Gives a trusted sender (and its person) the user's name for it. Audited.
pub fn name_sender(store: &Store, key: &str, name: &str, now: DateTime<Utc>) -> Result<(), ConsentError> {
    let name = check(name)?;
    let Some(entry) = store.trust_get(key)? else { return Err(ConsentError::Gone) };
    store.trust_update(key, Some(&name), &entry.policy, None)?;
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
    fn a_name_is_trimmed_and_bounded() {
        assert_eq!(super::check("  Alice ").unwrap(), "Alice");
        assert!(super::check("").is_err() && super::check("   ").is_err());
        assert!(super::check("Al\u{1b}[31mice").is_err());
        assert!(super::check(&"é".repeat(80)).is_ok() && super::check(&"é".repeat(81)).is_err());
    }
}
