//! `gatehouse uamp …` between two real inboxes on loopback (real keychain, real TLS):
//! one serves UAMP, the other adds it by address, pins its certificate, and asks it for
//! an image that comes back as the same file.

use std::path::Path;

use crate::common::{gh_in, json, ok, Cleanup, Server, BIN};

#[test]
fn add_a_peer_by_address_pin_it_and_ask_it_for_an_image() {
    let peer_dir = tempfile::tempdir().unwrap();
    let my_dir = tempfile::tempdir().unwrap();
    let image = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../icons/icon.png").canonicalize().unwrap();
    ok(peer_dir.path(), &["init"]);
    ok(my_dir.path(), &["init"]);
    ok(peer_dir.path(), &["executor", "set", "default", "command", "cat", image.to_str().unwrap()]);
    let _cleanup = Cleanup(vec![peer_dir.path().into(), my_dir.path().into()]);
    let (_served, tls) = Server::start_tls(peer_dir.path());
    let theirs = json(peer_dir.path(), &["uamp", "info", "--json"]);
    let mine = json(my_dir.path(), &["uamp", "info", "--json"]);
    let my_did = mine["did"].as_str().unwrap();
    let url = format!("https://127.0.0.1:{tls}");

    // Without a pin, and nobody at a terminal to confirm, nothing is added; the
    // fingerprint to compare is shown.
    let out = gh_in(my_dir.path(), &["uamp", "peer", "add", &url, "--name", "imagegen"], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(theirs["certificate_sha256"].as_str().unwrap()), "{err}");
    assert!(err.contains(theirs["did"].as_str().unwrap()), "{err}");
    assert_eq!(json(my_dir.path(), &["uamp", "peer", "list", "--json"]), serde_json::json!([]));
    // A wrong pin is refused.
    let wrong = "AA:".repeat(31) + "AA";
    let out = gh_in(my_dir.path(), &["uamp", "peer", "add", &url, "--name", "imagegen", "--pin", &wrong], "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the pinned"), "{}", String::from_utf8_lossy(&out.stderr));

    // The peer's user trusts this inbox for asks and gives it a token.
    ok(peer_dir.path(), &["trust", "add", my_did, "--name", "me", "--scopes", "ask"]);
    let token = ok(peer_dir.path(), &["uamp", "token", my_did]).trim().to_string();
    assert!(token.starts_with("ghu_"));
    let out = gh_in(
        my_dir.path(),
        &["uamp", "peer", "add", &url, "--name", "imagegen", "--pin", theirs["certificate_sha256"].as_str().unwrap(), "--token-stdin"],
        &format!("{token}\n"),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let peers = json(my_dir.path(), &["uamp", "peer", "list", "--json"]);
    assert_eq!(peers[0]["did"], theirs["did"]);
    assert!(!serde_json::to_string(&peers).unwrap().contains(&token), "the token is not in the store");

    let saved = my_dir.path().join("cat.png");
    let end = json(my_dir.path(), &["uamp", "send", "imagegen", "a cat, 512×512", "--window", "1", "--out", saved.to_str().unwrap(), "--json"]);
    assert_eq!((end["state"].as_str(), end["mime"].as_str()), (Some("COMPLETED"), Some("image/png")), "{end}");
    assert_eq!(std::fs::read(&saved).unwrap(), std::fs::read(&image).unwrap());
    assert_eq!(std::fs::read(end["file"].as_str().unwrap()).unwrap(), std::fs::read(&image).unwrap());

    // Revoked at the peer: the next ask is refused with the peer's reason.
    ok(peer_dir.path(), &["uamp", "revoke", my_did]);
    let out = gh_in(my_dir.path(), &["uamp", "send", "imagegen", "again"], "");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown_token"), "{}", String::from_utf8_lossy(&out.stderr));

    // Without a token, this inbox's certificate (mTLS) is what the peer checks: the DID it
    // trusts is enough.
    ok(my_dir.path(), &["uamp", "peer", "remove", "imagegen"]);
    let out = gh_in(my_dir.path(), &["uamp", "peer", "add", &url, "--name", "imagegen", "--pin", theirs["certificate_sha256"].as_str().unwrap()], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The CLI adds and removes peers through the same audited path as the window.
    let store = gatehouse_store::Store::open(&gatehouse_app::doors::open::store_path(my_dir.path())).unwrap();
    let mut actions: Vec<String> = store.audit_list(100).unwrap().into_iter().filter(|a| a.action.starts_with("uamp.peer")).map(|a| a.action).collect();
    actions.reverse();
    assert_eq!(actions, ["uamp.peer_add", "uamp.peer_remove", "uamp.peer_add"], "newest last");
    drop(store);
    let end = json(my_dir.path(), &["uamp", "send", "imagegen", "once more, by certificate", "--json"]);
    assert_eq!(end["state"], "COMPLETED", "{end}");
}

#[test]
fn a_did_web_agents_keys_are_checked_again_from_the_cli() {
    use ed25519_dalek::SigningKey;
    let host = gatehouse_did_testhost::DidHost::start();
    host.publish(&[("key-1", &SigningKey::from_bytes(&[70; 32]))]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    // The debug build trusts the test host's certificate through this file.
    let ca = d.join("did-ca.pem");
    std::fs::write(&ca, host.ca_pem()).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(BIN).arg("--data-dir").arg(d).args(args).env("GATEHOUSE_TEST_DID_CA", &ca).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (okay, _, err) = run(&["trust", "add", host.did(), "--name", "Acme agent", "--scopes", "ask"]);
    assert!(okay, "{err}");
    let (okay, out, err) = run(&["contacts", "check-keys", host.did()]);
    assert!(okay && out.contains("holds the same keys as before"), "{out}{err}");
    // Its owner rotates the key: checking again takes the new one and says so.
    host.publish(&[("key-2", &SigningKey::from_bytes(&[71; 32]))]);
    let (okay, out, err) = run(&["contacts", "check-keys", host.did()]);
    assert!(okay, "{err}");
    assert!(out.contains("Acme agent's keys changed") && out.contains(&host.kid("key-2")) && out.contains("no longer"), "{out}");
    let (okay, _, err) = run(&["contacts", "check-keys", "did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH"]);
    assert!(!okay && err.contains("not a did:web"), "{err}");
}
