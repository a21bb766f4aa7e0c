//! A first run that leads somewhere: the welcome says what Gatehouse is, shows the address,
//! key and watched folder; "Send myself a sample" knocks like any stranger, the prompt lets
//! it in, it arrives with its receipt; "Got it" puts the welcome away for good.

use crate::harness::*;

#[test]
fn the_first_run_sample_knocks_is_let_in_and_arrives_with_its_receipt() {
    let app = App::start();
    app.wait_text("#welcome", "Welcome to Gatehouse");
    assert_eq!(app.text("#welcome-key"), app.public_key);
    assert!(app.text("#welcome-address").contains(&format!("127.0.0.1:{}", app.port)));
    assert!(!app.text("#welcome-folder").is_empty());
    app.screenshot("welcome");

    app.click("#welcome-sample");
    app.wait_text("#welcome-msg", "It knocked as a stranger");
    app.wait_text("#waiting-count", "1");
    app.click("#nav-consent");
    app.wait_text(".consent-card", "Hello from Gatehouse");
    // The prompt has the window: the welcome stays with the inbox.
    let shown = "return !document.getElementById('welcome-slot').hidden;";
    assert_eq!(app.script(shown).as_bool(), Some(false), "no welcome above the prompt");
    app.click(".consent-card button[data-decision='allow_once']");
    app.click("#nav-inbox");
    assert_eq!(app.script(shown).as_bool(), Some(true), "the welcome is the inbox's until Got it");
    let mut id = String::new();
    app.wait("the sample accepted", || {
        let accepted = app
            .store()
            .receipts(20, 0)
            .unwrap()
            .into_iter()
            .find(|r| r.status == "accepted" && r.prompt.as_deref().is_some_and(|p| p.contains("This is a sample message")));
        accepted.map(|r| id = r.receipt_id).is_some()
    });
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#inbox-detail", "Accepted");

    app.click("#welcome-done");
    app.wait("the welcome put away", || app.find_all("#welcome").is_empty());
    app.click("#nav-settings");
    app.click("#nav-inbox");
    assert!(app.find_all("#welcome").is_empty(), "the welcome stays away");
}
