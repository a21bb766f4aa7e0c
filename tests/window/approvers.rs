//! Approvers from the owner's window: Settings invites a phone (the page's address with a
//! one-time code, and its QR code), shows the device once it joined, names it anew and removes it; the
//! removed device's next request is refused.

use crate::harness::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

#[test]
fn the_owner_invites_a_phone_sees_it_join_and_removes_it() {
    let app = App::start();
    app.click("#nav-settings");
    app.wait_text("#approvers", "Approvers: phones and team members");
    app.type_into("#approver-name", "Ana's phone");
    app.click("#approver-invite");
    app.wait_text("#approver-invitation", "The code works once");
    let code = app.text("#approver-code");
    let link = app.text("#approver-link");
    assert_eq!(link, format!("http://127.0.0.1:{}/approve#code={code}&gate={}", app.port, app.public_key));
    let qr = app.script("const i = document.getElementById('approver-qr'); return i.complete && i.naturalWidth > 0;");
    assert_eq!(qr, serde_json::json!(true), "the QR code is drawn");
    app.screenshot("approvers-invite");

    // The phone joins with its own key.
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let sign = |message: &[u8]| URL_SAFE_NO_PAD.encode(pair.sign(&rng, message).unwrap().as_ref());
    let base = format!("http://127.0.0.1:{}", app.port);
    let http = reqwest::blocking::Client::new();
    let joined: serde_json::Value = http
        .post(format!("{base}/approve/join"))
        .json(&serde_json::json!({"code": code, "public_key": public, "signature": sign(&gatehouse_app::approvers::join_message(&app.public_key, &code, &public))}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = joined["id"].as_str().unwrap_or_else(|| panic!("{joined}")).to_string();

    // Settings, still open, shows the device and drops the used invitation on its own.
    app.wait_text("#approvers-list", "Ana's phone");
    app.wait_text("#approver-invitation", "Ana's phone joined");
    assert!(app.find_all("#approver-qr").is_empty(), "the used QR code is gone");

    // A stranger knocks; the phone lets it in: the prompt leaves the window by itself.
    let signed = |method: &str, path: &str, body: &[u8], nonce: &str| {
        let date = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let sig = sign(&gatehouse_app::approvers::request_message(&app.public_key, method, path, &date, nonce, body));
        let r = if method == "GET" { http.get(format!("{base}{path}")) } else { http.post(format!("{base}{path}")).body(body.to_vec()) };
        r.header("gatehouse-approver", &id)
            .header("gatehouse-date", date)
            .header("gatehouse-nonce", nonce)
            .header("gatehouse-signature", sig)
            .header("content-type", "application/json")
            .send()
            .unwrap()
    };
    let stranger = gatehouse_epp::generate_signing_key();
    assert_eq!(app.send(&stranger, "support", "Hello from the pharmacy bot").0, 401);
    app.click("#nav-consent");
    app.wait_text("#view-consent", "Hello from the pharmacy bot");
    let items: serde_json::Value = signed("GET", "/approve/waiting", b"", "nonce-waiting-after-the-join-1").json().unwrap();
    let item = &items[0];
    let body = serde_json::json!({"target": item["target"], "digest": item["digest"], "decision": "deny"}).to_string();
    let decided = signed("POST", "/approve/decide", body.as_bytes(), "nonce-decide-after-the-join-01");
    assert_eq!(decided.status().as_u16(), 200, "{:?}", decided.text());
    app.wait("the prompt decided on the phone to leave the window", || !app.text("#view-consent").contains("Hello from the pharmacy bot"));
    app.click("#nav-settings");
    app.wait_text("#approvers-list", "Ana's phone");
    // Named anew: the list and the gate's record say so.
    app.type_into(&format!("#approvers-list li[data-id='{id}'] input.approver-name"), "Ana's work phone");
    app.click(&format!("#approvers-list li[data-id='{id}'] button[data-action='rename']"));
    app.wait_text("#approvers-msg", "Renamed Ana's phone to Ana's work phone.");
    app.wait_text(&format!("#approvers-list li[data-id='{id}'] strong"), "Ana's work phone");
    app.click(&format!("#approvers-list li[data-id='{id}'] button[data-action='remove']"));
    app.wait_text("#approvers-msg", "Removed Ana's work phone");
    app.wait_text("#approvers-list", "No devices yet.");

    let date = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let nonce = "nonce-after-the-removal-01";
    let sig = sign(&gatehouse_app::approvers::request_message(&app.public_key, "GET", "/approve/me", &date, nonce, b""));
    let r = http
        .get(format!("{base}/approve/me"))
        .header("gatehouse-approver", &id)
        .header("gatehouse-date", date)
        .header("gatehouse-nonce", nonce)
        .header("gatehouse-signature", sig)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
}
