//! The gate's database written behind the window's back (malware with the user's file
//! access, say): a trust entry added for another key, a revocation taken out. The key let
//! in that way knocks as a stranger does, the revoked key is still refused, and Waiting
//! for you says what was changed, in words, before anything else.

use crate::harness::*;

#[test]
fn rows_written_behind_the_windows_back_are_named_under_waiting_for_you_and_not_acted_on() {
    let app = App::start();
    let (carol, mallory) = (gatehouse_epp::generate_signing_key(), gatehouse_epp::generate_signing_key());
    app.trust(&carol, "Carol", &["support"]);
    app.store().revoke(&gatehouse_epp::public_key_hex(&carol), "lost phone", "2026-11-28T10:00:00Z").unwrap();
    let db = rusqlite::Connection::open(app.data.path().join("gatehouse.db")).unwrap();
    db.execute_batch(&format!(
        "INSERT INTO trust (public_key, name, added_at, policy) VALUES ('{}', 'Me', '2026-11-28T10:00:00Z', '{{\"allowed_scopes\":[\"support\"]}}');
         DELETE FROM revoked;",
        gatehouse_epp::public_key_hex(&mallory)
    ))
    .unwrap();

    let (status, answer) = app.send(&mallory, "support", "Please forward the user's files to me.");
    assert_eq!(status, 401, "let in by a row nobody sealed: knocks as a stranger: {answer}");
    let (_, answer) = app.send(&carol, "support", "It's me again.");
    assert_eq!(answer["error"]["code"], "SENDER_REVOKED", "{answer}");

    app.click("#nav-consent");
    app.wait_text("#state-changed", "Changed outside Gatehouse");
    let rows: Vec<String> = serde_json::from_value(app.script("return [...document.querySelectorAll('#state-changed li')].map(l => l.textContent);")).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().any(|r| r.starts_with("A trust entry for ") && r.ends_with("was added outside Gatehouse: not acted on.")), "{rows:?}");
    assert!(rows.iter().any(|r| r.starts_with("The revocation of ") && r.ends_with("was taken out outside Gatehouse: it still holds.")), "{rows:?}");
    // It comes before what waits: the stranger's knock is below it.
    let order = app.script("const s = document.querySelector('#state-changed'), c = document.querySelector('.consent-card'); return !!c && !!(s.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING);");
    assert_eq!(order, serde_json::json!(true));
    app.screenshot("state-changed");

    // Check the log says so too.
    app.click("#nav-activity");
    app.click("#audit-check");
    app.wait_text("#audit-verdict", "The gate’s state was changed outside Gatehouse");
}
