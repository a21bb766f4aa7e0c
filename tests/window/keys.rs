//! A did:web agent's keys change in the window: the user trusts the agent (its DID
//! document fetched over real HTTPS from a host on loopback) and verifies it; the agent
//! then signs with a key the user never saw, and the prompt warns of a key change instead
//! of letting anything in; "Check its DID document" takes the rotated keys, and the
//! verified agent stays blocked until verified again.

use ed25519_dalek::SigningKey;
use gatehouse_did_testhost::DidHost;
use gatehouse_uamp::{sign, Intent};
use serde_json::Value;

use crate::contacts::open_verify;
use crate::harness::*;

/// Sends the app an `ask` from the agent, signed with `key` under `kid`, over the app's TLS.
fn ask(app: &App, host: &DidHost, token: &str, key: &SigningKey, frag: &str, text: &str) -> (u16, Value) {
    let pem = std::fs::read(app.data.path().join(gatehouse_app::doors::uamp::tls::CERT_FILE)).unwrap();
    let client = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .tls_built_in_root_certs(false)
        .build()
        .unwrap();
    let inbox = sign::did_of(&app.key);
    let env = sign::sign_as(sign::draft(host.did(), &[&inbox], Intent::Ask, "text/plain", text), key, &host.kid(frag));
    let r = client
        .post(format!("https://127.0.0.1:{}/v1/messages", app.uamp_port))
        .header("content-type", "application/uamp+json;v=1")
        .bearer_auth(token)
        .json(&env)
        .send()
        .unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

#[test]
fn a_did_web_agents_rotated_key_is_a_key_change_taken_only_from_its_document() {
    let host = DidHost::start();
    let (old, new) = (SigningKey::from_bytes(&[60; 32]), SigningKey::from_bytes(&[61; 32]));
    host.publish(&[("key-1", &old)]);
    let app = App::start();
    std::fs::write(app.data.path().join("test-did-ca.pem"), host.ca_pem()).unwrap();

    // Trusted from the form (its DID document fetched now), then verified.
    app.click("#nav-people");
    app.click("#people-add-open");
    app.click("#add-key");
    app.type_into("#trust-key", host.did());
    app.type_into("#trust-name", "Acme agent");
    app.type_into("#trust-scopes", "ask");
    app.click("#trust-save");
    app.wait_text("#contacts", "Acme agent");
    open_verify(&app, "Acme agent");
    app.click("#verify-match");
    app.wait_text("#contacts .contact .standing", "Verified");
    let token = gatehouse_app::doors::uamp::UampDoor::issue_token(&app.store(), host.did(), chrono::Utc::now()).unwrap();
    let (s, b) = ask(&app, &host, &token, &old, "key-1", "from the key you trusted");
    assert_eq!(s, 202, "{b}");

    // Its owner rotates the key; a message signed with it is refused and warns.
    let (s, b) = ask(&app, &host, &token, &new, "key-2", "from a key you never saw");
    assert_eq!((s, b["reason"].as_str()), (401, Some("unknown_key")), "{b}");
    app.click("#nav-consent");
    app.wait_text(".consent-card.key_change", "signed a message with a key you did not trust it with");
    // The key id the message named is shown as its words, quoted, not as Gatehouse's own.
    let warning = app.text(".consent-card.key_change .key-change");
    assert!(warning.contains("The message calls that key “#key-2” (its own words, not checked)."), "{warning}");
    assert!(app
        .find_all(".consent-card.key_change button[data-decision='allow_once'], .consent-card.key_change button[data-decision='always_allow_scope']")
        .is_empty());
    app.script("document.querySelector('.consent-card.key_change').scrollIntoView({block: 'start'}); return true;");
    app.screenshot("consent-key-change");

    // Checked: the document now holds the new key; the verified agent is blocked.
    host.publish(&[("key-2", &new)]);
    app.click(".consent-card.key_change button[data-action='check-keys']");
    app.wait_text("#consent-notice", "Acme agent's keys changed");
    assert!(app.text("#consent-notice").contains("verify it again"));
    let (s, b) = ask(&app, &host, &token, &new, "key-2", "from the new key, held");
    assert_eq!((s, b["held_for_consent"].as_bool()), (202, Some(true)), "{b}");
    app.click("#nav-inbox");
    app.click("#nav-consent");
    app.wait_text(".consent-card.held_ask .key-change", "keys changed after you verified it");
    let disabled = app.script("return document.querySelector('.consent-card.held_ask button[data-decision=\"allow_once\"]').disabled;");
    assert_eq!(disabled.as_bool(), Some(true));
    app.click("#nav-people");
    app.wait_text("#contacts", "Key changed");

    // Verified again: what it sent can be let through.
    open_verify(&app, "Acme agent");
    app.click("#verify-match");
    app.wait_text("#contacts .contact .standing", "Verified");
    app.click("#nav-consent");
    app.wait_text(".consent-card.held_ask", "from the new key, held");
    app.click(".consent-card.held_ask button[data-decision='allow_once']");
    app.wait_text("#consent-notice", "Released");
}
