//! Checking who it is, out of band: two Gatehouses (two data dirs, one after the other in
//! the window) show the same safety code for each other; one verifies the other by pasting
//! what it shared. A new key claiming to act for the verified contact is shown as a claim,
//! joins only on the user's word, and is blocked (held, allow disabled) until verified.

use crate::harness::*;

/// Opens the verification screen for the contact named `name`'s first unverified key.
pub(crate) fn open_verify(app: &App, name: &str) -> String {
    app.click("#nav-people");
    app.wait_text("#contacts", name);
    app.script(&format!(
        "const c = [...document.querySelectorAll('.contact')].find((e) => e.querySelector('h3').textContent.includes({})); c.querySelector('.verify-open').click(); return true;",
        serde_json::to_string(name).unwrap()
    ));
    app.find("#safety-code");
    app.text("#safety-code")
}

#[test]
fn two_gatehouses_show_the_same_safety_code_and_a_changed_key_blocks_until_verified() {
    let (b_data, b_key) = App::prepare();

    // Gatehouse A knows B as "Bea": its code for her, and what A shares.
    let a = App::start();
    a.trust_key(&b_key, "Bea", &["support"]);
    let code_at_a = open_verify(&a, "Bea");
    a.click("#share-open");
    let a_shared = a.text("#share-text");
    assert!(a_shared.starts_with("gatehouse:contact?key="), "{a_shared}");
    let (a_key, a_signing) = (a.public_key.clone(), a.key.clone());
    drop(a);

    // Gatehouse B knows A as "Al": the same code; B pastes what A shared and A is verified.
    let b = App::start_in(b_data);
    b.click("#welcome-done");
    b.trust_key(&a_key, "Al", &["support"]);
    let code_at_b = open_verify(&b, "Al");
    assert_eq!(code_at_a, code_at_b, "both Gatehouses show the same safety code");
    assert_eq!(code_at_b.len(), 71, "twelve groups of five digits, half from each key: {code_at_b}");
    b.script("document.querySelector('#verify-panel').scrollIntoView(); return true;");
    b.screenshot("verify");
    b.type_into("#verify-paste", &a_shared);
    b.click("#verify-check");
    b.wait_text("#verify-msg", "Al’s key is verified");
    b.wait_text("#contacts .contact[data-contact] .standing", "Verified");
    b.script("document.querySelector('#contacts').scrollIntoView(); return true;");
    b.screenshot("contact");

    // A new key says it acts for Al: a claim, not a merge.
    let new_key = gatehouse_epp::generate_signing_key();
    let env = gatehouse_epp::Draft { on_behalf_of: Some(a_key.clone()), ..gatehouse_epp::Draft::new(&b.public_key, "support", "It's Al, from my new laptop") }
        .sign(&new_key, chrono::Utc::now());
    let r = reqwest::blocking::Client::new().post(b.submit_url()).json(&env).send().unwrap();
    assert_eq!(r.status().as_u16(), 401);
    b.click("#nav-consent");
    b.wait_text(".consent-card .claim-warning", "acts on behalf of Al");
    b.screenshot("consent-claim");
    b.click(".consent-card .claim-warning button.adopt");
    b.wait_text("#consent-notice", "held until you verify it");

    // What it sent is held, and cannot be let through.
    b.click("#nav-inbox");
    b.click("#nav-consent");
    b.wait_text(".consent-card.held .key-change", "new key of a contact you verified");
    let disabled = b.script("return document.querySelector('.consent-card.held button[data-decision=\"allow_once\"]').disabled;");
    assert_eq!(disabled.as_bool(), Some(true));
    b.click("#nav-people");
    b.wait_text("#contacts", "Key changed");

    // Verified (the codes matched on a call): it may be let through.
    b.script(
        "const c = [...document.querySelectorAll('.contact')].find((e) => e.textContent.includes('Al')); c.querySelector('.verify-open').click(); return true;",
    );
    b.click("#verify-match");
    b.wait_text("#contacts .contact .standing", "Verified");
    b.click("#nav-consent");
    // What waits is read anew on opening (the old list, with its key change, is inert until
    // then: wait_text waits for the list read now).
    b.wait_text(".consent-card.held", "from my new laptop");
    assert!(b.find_all(".consent-card.held .key-change").is_empty());
    b.click(".consent-card.held button[data-decision='allow_once']");
    b.wait_text("#consent-notice", "Released to its executor");

    // One history: Al's messages from either key, from the contact's "Messages".
    assert_eq!(b.send(&a_signing, "support", "From Al's first key").0, 200);
    b.click("#nav-people");
    b.click("#contacts .contact .history-open");
    b.wait_text("#inbox-contact", "From Al, all their keys");
    b.wait_text("#inbox-rows", "From Al's first key");
    assert!(b.text("#inbox-rows").contains("from my new laptop"));
}

#[test]
fn a_picture_of_their_qr_code_verifies_them() {
    let (b_data, _) = App::prepare();

    // A's QR code as its screen shows it (a screenshot of the code, as A would send it).
    let a = App::start();
    a.click("#nav-people");
    a.click("#share-open");
    let qr = a.find("#share-qr");
    a.script("document.querySelector('#share-qr').scrollIntoView({block: 'center'}); return true;");
    a.screenshot("share");
    let png = a.element_screenshot(&qr);
    let a_key = a.public_key.clone();
    drop(a);
    let dir = tempfile::tempdir().unwrap();
    let picture = dir.path().join("al-qr.png");
    std::fs::write(&picture, &png).unwrap();
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    std::fs::write(shots.join("share-qr.png"), &png).unwrap();

    // B opens that picture on Al's verification screen: read, checked, verified.
    let b = App::start_in(b_data);
    b.click("#welcome-done");
    b.trust_key(&a_key, "Al", &["support"]);
    open_verify(&b, "Al");
    let input = b.find("#verify-picture");
    b.call(reqwest::Method::POST, &format!("/element/{input}/value"), Some(serde_json::json!({"text": picture.to_str().unwrap()})));
    b.wait_text("#verify-msg", "Al’s key is verified");
    b.wait_text("#contacts .contact[data-contact] .standing", "Verified");

    // A picture of some other code verifies nothing, and says why.
    b.trust_key(&"cd".repeat(32), "Cy", &["support"]);
    open_verify(&b, "Cy");
    let input = b.find("#verify-picture");
    b.call(reqwest::Method::POST, &format!("/element/{input}/value"), Some(serde_json::json!({"text": picture.to_str().unwrap()})));
    b.wait_text("#verify-msg", "that code is for another key");
    b.script("document.querySelector('#verify-panel').scrollIntoView(); return true;");
    b.screenshot("verify-picture");
}
