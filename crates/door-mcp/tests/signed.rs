//! A wrap's call as the gate takes it: signed by the server's key over the time and the
//! whole body, within two minutes of the gate's clock; anything else is refused before the
//! body is read.

use ed25519_dalek::SigningKey;
use gatehouse_door_mcp::signed::{name_of, sender, sign, verify, Unsigned, FRESH_FOR, PATH, TOOLS_PATH};

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn headers<'a>(h: &'a [(&'static str, String); 3]) -> (Option<&'a str>, Option<&'a str>, Option<&'a str>) {
    (Some(h[0].1.as_str()), Some(h[1].1.as_str()), Some(h[2].1.as_str()))
}

#[test]
fn a_signed_call_names_its_key_and_nothing_else_passes() {
    let body = br#"{"server":"files","session":"s","tool":"read","arguments":{"path":"a"}}"#;
    let now = 1_800_000_000;
    let h = sign(&key(1), now, PATH, body);
    let (k, t, s) = headers(&h);
    let public = verify(k, t, s, PATH, body, now + 5).expect("signed by its key");
    assert_eq!(public, hex::encode(key(1).verifying_key().as_bytes()));

    // The body changed after signing (another path): refused.
    let changed = br#"{"server":"files","session":"s","tool":"read","arguments":{"path":"b"}}"#;
    assert_eq!(verify(k, t, s, PATH, changed, now), Err(Unsigned::Forged));
    // Sent to the other path: refused.
    assert_eq!(verify(k, t, s, TOOLS_PATH, body, now), Err(Unsigned::Forged));
    // Another key named in its place: refused.
    let other = hex::encode(key(2).verifying_key().as_bytes());
    assert_eq!(verify(Some(&other), t, s, PATH, body, now), Err(Unsigned::Forged));
    // A time moved to make an old request fresh: the signature covers it.
    let later = (now + 600).to_string();
    assert_eq!(verify(k, Some(&later), s, PATH, body, now + 600), Err(Unsigned::Forged));
    // Replayed too late, or signed too far ahead.
    let fresh = FRESH_FOR.as_secs() as i64;
    assert_eq!(verify(k, t, s, PATH, body, now + fresh + 1), Err(Unsigned::Stale { seconds: fresh + 1 }));
    assert_eq!(verify(k, t, s, PATH, body, now - fresh - 1), Err(Unsigned::Stale { seconds: fresh + 1 }));
    // Missing or malformed headers say which.
    assert!(matches!(verify(None, t, s, PATH, body, now), Err(Unsigned::Malformed(w)) if w.starts_with("key")));
    assert!(matches!(verify(k, Some("soon"), s, PATH, body, now), Err(Unsigned::Malformed(w)) if w.starts_with("time")));
    assert!(matches!(verify(k, t, Some("00"), PATH, body, now), Err(Unsigned::Malformed(w)) if w.starts_with("signature")));
    // A time at the ends of the range does not wrap into "fresh".
    assert!(matches!(verify(k, Some(&i64::MIN.to_string()), s, PATH, body, i64::MAX), Err(Unsigned::Stale { .. })));
}

#[test]
fn a_servers_registry_key_is_its_name_and_its_key() {
    let hex = "ab".repeat(32);
    let k = sender("Files", &hex);
    assert_eq!(k, format!("mcp:files:{hex}"));
    assert_eq!(name_of(&k), Some("files"));
    for not in ["mcp:files", "mcp::abab", "asop:mcp:files", &format!("mcp:fi/les:{hex}"), &format!("mcp:files:{}", "ab".repeat(31))] {
        assert_eq!(name_of(not), None, "{not}");
    }
}
