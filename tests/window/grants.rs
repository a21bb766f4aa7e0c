//! Grants that last as long as the user means: allowed for an hour from the prompt, the
//! sender's messages go through; once the hour has passed (on a clock the test moves) the
//! next one is held and asks again. A prompt put off with "ask me later" is still there,
//! undecided, after the app is closed and opened again.

use crate::harness::*;

fn held(receipt: &Value) -> bool {
    receipt["x-held-for-consent"].as_bool().unwrap_or(false)
}

#[test]
fn an_hour_long_grant_ends_and_the_next_message_asks_again() {
    let app = App::start();
    app.click("#welcome-done");
    let stranger = gatehouse_epp::generate_signing_key();
    assert_eq!(app.send(&stranger, "support", "Can you check my order?").0, 401);

    app.click("#nav-consent");
    app.wait_text(".consent-card", "Can you check my order?");
    app.script("const s = document.querySelector('.consent-card select.grant-for'); s.value = 'hour'; s.dispatchEvent(new Event('change'));");
    app.wait_text(".consent-card button[data-decision='always_allow_scope']", "Allow “support” for 1 hour");
    app.screenshot("consent-grant");
    app.click(".consent-card button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "Allowed for \"support\" until");

    let (status, r) = app.send(&stranger, "support", "Within the hour");
    assert_eq!((status, held(&r)), (200, false), "{r}");
    app.click("#nav-people");
    app.wait_text("#timed-grants", "for “support”: ends");

    // An hour and a minute later, on the app's clock.
    app.set_clock(61 * 60);
    let (status, r) = app.send(&stranger, "support", "After the hour");
    assert_eq!((status, held(&r)), (200, true), "kept and held, never refused or dropped: {r}");
    app.click("#nav-consent");
    app.wait_text(".consent-card", "After the hour");
    assert!(app.text(".consent-card .ask").contains("so you are asked again"), "{}", app.text(".consent-card .ask"));
    app.click("#nav-people");
    app.wait_text("#timed-grants", "its next message in this scope will ask you again");

    // Allowed once: the held message runs; the grant stays ended, so the next asks too.
    app.click("#nav-consent");
    app.click(".consent-card button[data-decision='allow_once']");
    app.wait_text("#consent-notice", "Released to its executor");
    let (status, r) = app.send(&stranger, "support", "Later still");
    assert_eq!((status, held(&r)), (200, true), "{r}");
}

#[test]
fn a_prompt_put_off_survives_a_restart_undecided() {
    let mut app = App::start();
    let stranger = gatehouse_epp::generate_signing_key();
    // Valid for a day, so it can still be delivered when the prompt comes back.
    let env = gatehouse_epp::Draft { ttl: chrono::Duration::hours(24), ..gatehouse_epp::Draft::new(&app.public_key, "billing", "Please refund invoice 7") }
        .sign(&stranger, app.now());
    let r = reqwest::blocking::Client::new().post(app.submit_url()).json(&env).send().unwrap();
    assert_eq!(r.status().as_u16(), 401);
    app.click("#nav-consent");
    app.wait_text(".consent-card", "Please refund invoice 7");
    app.click(".consent-card button[data-decision='ask_later']");
    app.wait_text("#consent-notice", "Put off until");
    app.wait_text("#consent-later", "Put off (1)");

    app.restart();
    app.click("#nav-consent");
    app.wait_text("#consent-later", "Please refund invoice 7");
    assert!(app.find_all("#consent-later .consent-card .later-until").len() == 1);
    let sender = gatehouse_epp::public_key_hex(&stranger);
    assert!(app.store().trust_get(&sender).unwrap().is_none(), "nothing was allowed");
    assert_eq!(app.store().pending_list().unwrap().len(), 1, "nothing was denied");

    // An hour later it is back among what waits, and can be let in.
    app.set_clock(61 * 60);
    app.click("#nav-inbox");
    app.click("#nav-consent");
    app.wait("the prompt to come back", || app.find_all("#consent-later").is_empty() && app.find_all(".consent-card").len() == 1);
    app.click(".consent-card button[data-decision='allow_once']");
    app.wait_text("#consent-notice", "Allowed once. The waiting message was delivered.");
}
