//! Approver devices from the command line: invited with `gatehouse approvers invite`
//! (the page's address, a code and its QR), joined over the running `gatehouse serve`,
//! listed, renamed, and removed by another process while the server runs: the server
//! refuses the device's next request at once.

use crate::common::{fails, json, ok, Cleanup, Server};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

fn sign(pair: &EcdsaKeyPair, message: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(pair.sign(&SystemRandom::new(), message).unwrap().as_ref())
}

#[test]
fn a_device_invited_from_the_cli_joins_and_is_refused_once_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _c = Cleanup(vec![d.into()]);
    let server = Server::start(d);
    let gate_key = ok(d, &["identity"]).trim().to_string();

    let printed = ok(d, &["approvers", "invite", "Bo's phone", "--url", &server.1]);
    assert!(printed.contains('█') || printed.contains('▀'), "a QR code to scan: {printed}");
    assert!(printed.contains(&format!("{}/approve#code=", server.1)), "{printed}");
    let inv = json(d, &["approvers", "invite", "Bo's phone", "--url", &server.1, "--json"]);
    let code = inv["code"].as_str().unwrap();
    assert!(fails(d, &["approvers", "invite", "x", "--url", "ftp://gate.example"]).contains("BAD_URL"));

    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let signature = sign(&pair, &gatehouse_app::approvers::join_message(&gate_key, code, &public));
    let http = reqwest::blocking::Client::new();
    let joined: serde_json::Value = http
        .post(format!("{}/approve/join", server.1))
        .json(&json!({"code": code, "public_key": public, "signature": signature}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = joined["id"].as_str().unwrap_or_else(|| panic!("{joined}")).to_string();

    let me = |nonce: &str| {
        let date = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let sig = sign(&pair, &gatehouse_app::approvers::request_message(&gate_key, "GET", "/approve/me", &date, nonce, b""));
        let r = http
            .get(format!("{}/approve/me", server.1))
            .header("gatehouse-approver", &id)
            .header("gatehouse-date", date)
            .header("gatehouse-nonce", nonce)
            .header("gatehouse-signature", sig)
            .send()
            .unwrap();
        (r.status().as_u16(), r.json::<serde_json::Value>().unwrap())
    };
    assert_eq!(me("first-request-nonce-0001").0, 200);

    let list = json(d, &["approvers", "list", "--json"]);
    assert_eq!((list[0]["id"].as_str(), list[0]["name"].as_str()), (Some(id.as_str()), Some("Bo's phone")), "{list}");
    assert!(list[0]["last_seen"].is_string(), "{list}");
    ok(d, &["approvers", "rename", &id, "Bo's work phone"]);
    assert!(ok(d, &["approvers", "list"]).contains("Bo's work phone"));

    // Notices by mail: a real address, sane bounds and quiet hours; then off again.
    ok(d, &["approvers", "mail", &id, "--email", "bo@team.example", "--per-hour", "3", "--quiet", "22:00-07:00"]);
    assert!(fails(d, &["approvers", "mail", &id, "--email", "bo at team"]).contains("INVALID"));
    assert!(fails(d, &["approvers", "mail", &id, "--email", "bo@team.example", "--quiet", "late"]).contains("INVALID"));
    ok(d, &["approvers", "mail", &id, "--off"]);
    // A quorum names devices that exist, and no more votes than devices.
    let rule = json(d, &["approvers", "quorum", "add", "--need", "1", "--approver", &id, "--scope", "support"]);
    assert!(ok(d, &["approvers", "quorum", "list"]).contains(&format!("1 of {id}  on scope support")));
    assert!(fails(d, &["approvers", "quorum", "add", "--need", "2", "--approver", &id]).contains("INVALID"));
    assert!(fails(d, &["approvers", "quorum", "add", "--need", "1", "--approver", "ap-nobody"]).contains("NOT_FOUND"));
    ok(d, &["approvers", "quorum", "remove", &rule["id"].to_string()]);
    assert_eq!(json(d, &["approvers", "quorum", "list", "--json"]), json!([]));

    ok(d, &["approvers", "remove", &id]);
    let (status, v) = me("after-removal-nonce-0002");
    assert_eq!(status, 401, "{v}");
    assert!(fails(d, &["approvers", "remove", &id]).contains("NOT_FOUND"));
    assert!(ok(d, &["audit", "verify"]).starts_with("intact"), "the log with the approvers' entries checks out");
}
