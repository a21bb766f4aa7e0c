//! The `gatehouse` binary as a user and an acceptance check run it: real keychain, real
//! SQLite file, real loopback server, and a kill -9 in the middle of an ingest.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{gh, ok, Cleanup, Server};
use rand::Rng;

fn last_line(s: &str) -> String {
    s.lines().last().unwrap_or("").trim().to_string()
}

#[test]
fn init_identity_trust_pending_send_end_to_end() {
    let inbox_dir = tempfile::tempdir().unwrap();
    let sender_dir = tempfile::tempdir().unwrap();
    let _c = Cleanup(vec![inbox_dir.path().into(), sender_dir.path().into()]);
    let inbox_key = last_line(&ok(inbox_dir.path(), &["init"]));
    assert_eq!(inbox_key.len(), 64);
    assert_eq!(last_line(&ok(inbox_dir.path(), &["identity"])), inbox_key);
    assert_eq!(last_line(&ok(inbox_dir.path(), &["init"])), inbox_key, "init is idempotent");
    let sender_key = last_line(&ok(sender_dir.path(), &["keygen"]));
    assert_ne!(sender_key, inbox_key);
    // The secret is in the keychain, not the data dir.
    let listing = std::fs::read_dir(inbox_dir.path()).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect::<Vec<_>>();
    assert!(!listing.iter().any(|f| f == "identity.key"), "{listing:?}");

    let server = Server::start(inbox_dir.path());
    let send =
        |scope: &str, prompt: &str| gh(sender_dir.path(), &["send", "--to", &server.submit(), "--recipient", &inbox_key, "--scope", scope, "--prompt", prompt]);
    let out = send("support", "hello from the CLI");
    assert!(!out.status.success());
    let receipt: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt["error"]["code"], "UNTRUSTED_SENDER");

    let pending: serde_json::Value = serde_json::from_str(&ok(inbox_dir.path(), &["pending", "--json"])).unwrap();
    assert_eq!(pending[0]["public_key"], sender_key);
    assert_eq!(pending[0]["scopes_tried"], serde_json::json!(["support"]));
    ok(inbox_dir.path(), &["trust", "approve", &sender_key, "--name", "Bob", "--scopes", "support,billing", "--max-per-day", "5"]);
    let trusted: serde_json::Value = serde_json::from_str(&ok(inbox_dir.path(), &["trust", "list", "--json"])).unwrap();
    assert_eq!(trusted[0]["name"], "Bob");
    assert_eq!(trusted[0]["policy"]["allowed_scopes"], serde_json::json!(["support", "billing"]));
    assert_eq!(trusted[0]["policy"]["rate_limit"]["max_per_day"], 5);

    let out = send("support", "hello again");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let receipt: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt["status"], "accepted");
    let envelopes: serde_json::Value = serde_json::from_str(&ok(inbox_dir.path(), &["envelopes", "--json"])).unwrap();
    assert_eq!(envelopes[0]["prompt"], "hello again");
    assert_eq!(envelopes[0]["envelope_id"], receipt["envelope_id"]);
    let receipts: serde_json::Value = serde_json::from_str(&ok(inbox_dir.path(), &["receipts", "--json"])).unwrap();
    assert_eq!(receipts.as_array().unwrap().len(), 2);

    // Removing trust takes effect at once.
    ok(inbox_dir.path(), &["trust", "remove", &sender_key]);
    let out = send("support", "still there?");
    let receipt: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt["error"]["code"], "UNTRUSTED_SENDER");
    // Bad input to the CLI is a clear error, not a panic.
    let out = gh(inbox_dir.path(), &["trust", "add", "xyz", "--name", "X", "--scopes", "a"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a usable public key"));
    let out = gh(tempfile::tempdir().unwrap().path(), &["identity"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("gatehouse init"));
}

#[test]
fn an_error_carries_its_code_in_words_and_in_json() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    let out = gh(dir.path(), &["trust", "add", "xyz", "--name", "X", "--scopes", "a"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("not a usable public key") && said.trim_end().ends_with("[INVALID]"), "{said}");
    let key = gatehouse_epp::public_key_hex(&gatehouse_epp::crypto::generate_signing_key());
    let said = String::from_utf8_lossy(&gh(dir.path(), &["trust", "remove", &key]).stderr).to_string();
    assert!(said.contains("is not in the trust registry") && said.trim_end().ends_with("[NOT_FOUND]"), "{said}");
    // A script that asked for JSON gets the error as JSON, its code a field.
    let out = gh(tempfile::tempdir().unwrap().path(), &["pending", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(!out.status.success());
    assert_eq!(v["error"]["code"], "OPEN", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("gatehouse init"), "{v}");
}

#[test]
fn the_databases_password_is_in_no_help_and_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = "postgres://gate:s3cret-pw@127.0.0.1:9/gatehouse";
    for args in [&["--help"][..], &["serve", "--help"], &["identity"]] {
        let out = Command::new(crate::common::BIN).arg("--data-dir").arg(dir.path()).args(args).env("GATEHOUSE_DATABASE", url).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!said.contains("s3cret-pw"), "gatehouse {args:?} shows the password: {said}");
        if args[0] == "--help" {
            assert!(said.contains("GATEHOUSE_DATABASE"), "the variable is still named: {said}");
        }
    }
}

/// Posts `todo` (indexes into `envelopes`) over 8 connections until all are answered or
/// the server dies; returns each answered index with its HTTP status.
fn post_until_gone(url: &str, envelopes: &[String], todo: &[usize], kill: Option<(usize, &Server)>) -> Vec<(usize, u16)> {
    let answers = std::sync::Mutex::new(Vec::<(usize, u16)>::new());
    std::thread::scope(|s| {
        for t in 0..8 {
            let answers = &answers;
            s.spawn(move || {
                let client = reqwest::blocking::Client::new();
                for &i in todo.iter().skip(t).step_by(8) {
                    match client.post(url).body(envelopes[i].clone()).send() {
                        Ok(r) => answers.lock().unwrap().push((i, r.status().as_u16())),
                        Err(_) => break, // the server is gone
                    }
                }
            });
        }
        if let Some((after, server)) = kill {
            let t = Instant::now();
            while answers.lock().unwrap().len() < after && t.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_micros(200));
            }
            // SIGKILL: no chance to flush or shut down cleanly.
            Command::new("kill").args(["-9", &server.0.id().to_string()]).status().unwrap();
        }
    });
    answers.into_inner().unwrap()
}

#[test]
fn kill_9_at_random_points_of_an_ingest_loses_nothing_and_accepts_nothing_twice() {
    const N: usize = 5000;
    let dir = tempfile::tempdir().unwrap();
    let _c = Cleanup(vec![dir.path().into()]);
    let inbox_key = last_line(&ok(dir.path(), &["init"]));
    let sender = gatehouse_epp::generate_signing_key();
    ok(dir.path(), &["trust", "add", &gatehouse_epp::public_key_hex(&sender), "--name", "Load", "--scopes", "*"]);
    let now = chrono::Utc::now();
    let envelopes: Vec<String> =
        (0..N).map(|i| gatehouse_epp::Draft::new(&inbox_key, "load", &format!("envelope {i}")).sign(&sender, now).to_string()).collect();

    // Three crashes, each at a random point of what is still to send.
    let mut acked = std::collections::HashSet::new();
    let mut stored_unacked = std::collections::HashSet::new();
    let mut rng = rand::thread_rng();
    for round in 0..3 {
        let todo: Vec<usize> = (0..N).filter(|i| !acked.contains(i) && !stored_unacked.contains(i)).collect();
        let kill_after = rng.gen_range(todo.len() / 10..todo.len() / 2);
        let server = Server::start(dir.path());
        let answers = post_until_gone(&server.submit(), &envelopes, &todo, Some((kill_after, &server)));
        drop(server);
        assert!(answers.len() >= kill_after && answers.len() < todo.len(), "round {round}: the kill should land mid-ingest");
        for (i, status) in answers {
            match status {
                200 => assert!(acked.insert(i), "envelope {i} acknowledged twice"),
                // Stored just before an earlier kill, its receipt lost with the process.
                409 => assert!(round > 0 && stored_unacked.insert(i), "envelope {i}: unexpected replay in round {round}"),
                other => panic!("envelope {i}: unexpected status {other} in round {round}"),
            }
        }
    }

    // After the last restart, everything is sent again.
    let server = Server::start(dir.path());
    let all: Vec<usize> = (0..N).collect();
    let answers = post_until_gone(&server.submit(), &envelopes, &all, None);
    drop(server);
    assert_eq!(answers.len(), N);
    for (i, status) in answers {
        if acked.contains(&i) || stored_unacked.contains(&i) {
            assert_eq!(status, 409, "envelope {i} was stored before a crash, so it must be a replay now");
        } else {
            // Never stored (accepted now), or stored just before the last kill (a replay).
            assert!(status == 200 || status == 409, "envelope {i}: {status}");
        }
    }
    let stored: serde_json::Value = serde_json::from_str(&ok(dir.path(), &["envelopes", "--json", "--limit", "100000"])).unwrap();
    let ids: Vec<&str> = stored.as_array().unwrap().iter().map(|e| e["envelope_id"].as_str().unwrap()).collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(ids.len(), N, "every envelope is stored exactly once");
    assert_eq!(unique.len(), N);
}

#[test]
fn bench_reports_its_figures_next_to_what_the_machine_had_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["bench", "--envelopes", "300", "--senders", "3", "--concurrency", "8"]);
    assert!(out.contains("http: 300 of 300 accepted in"), "{out}");
    assert!(out.contains("Ed25519 verify, one core:") && out.contains("inbox process: peak RSS"), "{out}");
    // "machine: 2 cores 87% busy (inbox 1.37 cores, this load generator 0.25, the rest 0.10); ..."
    let machine = out.lines().find(|l| l.starts_with("machine: ")).unwrap_or_else(|| panic!("no machine line in {out}"));
    let number_before = |word: &str| -> f64 {
        let head = &machine[..machine.find(word).unwrap_or_else(|| panic!("{word:?} in {machine}"))];
        head.trim_end().rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("a number before {word:?} in {machine}"))
    };
    let cores = number_before("cores ");
    let busy = number_before("% busy");
    assert!(cores >= 1.0, "{machine}");
    assert!(busy > 0.0 && busy <= 100.0, "{machine}");
    // Beside the EPP reference: a directory that is not it is said before anything runs.
    let t = std::time::Instant::now();
    let out = gh(dir.path(), &["bench", "--reference", dir.path().to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is not a checkout of the EPP reference") && said.trim_end().ends_with("[INVALID]"), "{said}");
    assert!(out.stdout.is_empty() && t.elapsed() < std::time::Duration::from_secs(5), "{}", String::from_utf8_lossy(&out.stdout));
}

/// The warm-up's envelopes are really posted (the kept store holds them) but are not in
/// the measured figures, which are of the `--envelopes` alone.
#[test]
fn bench_warms_up_apart_from_what_it_measures() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("kept");
    let out = ok(dir.path(), &["bench", "--envelopes", "200", "--warm-up", "60", "--senders", "2", "--concurrency", "8", "--keep", keep.to_str().unwrap()]);
    assert!(out.contains("inbox warm-up, not counted: 60 of 60 accepted in"), "{out}");
    assert!(out.contains("inbox http: 200 of 200 accepted in"), "{out}");
    let store = gatehouse_store::Store::open(&keep.join("gatehouse.db")).unwrap();
    assert_eq!(store.count_envelopes().unwrap(), 260, "{out}");
    // Files are dropped into a folder all at once: there is nothing to warm up apart.
    let said = String::from_utf8_lossy(&gh(dir.path(), &["bench", "--folder", "--warm-up", "10"]).stderr).to_string();
    assert!(said.contains("--warm-up") && said.contains("--folder"), "{said}");
}

#[test]
fn the_data_dir_and_everything_in_it_are_the_users_alone() {
    use std::os::unix::fs::PermissionsExt as _;
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    // An older Gatehouse (or the user) left the data dir and the database world-readable.
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    ok(&dir, &["init"]);
    std::fs::set_permissions(dir.join("gatehouse.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = Server::start(&dir);
    let key = gatehouse_epp::crypto::generate_signing_key();
    let env = gatehouse_epp::Draft::new(&last_line(&ok(&dir, &["identity"])), "chat", "hello").sign(&key, chrono::Utc::now());
    let _ = reqwest::blocking::Client::new().post(server.submit()).json(&env).send().unwrap();
    drop(server);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "the data dir");
    let mut files = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            files += 1;
            assert_eq!(mode(&p) & 0o077, 0, "{} is {:o}", p.display(), mode(&p));
        }
    }
    assert!(files >= 1);
    assert_eq!(mode(&dir.join("gatehouse.db")), 0o600);
}

#[test]
fn trust_changes_made_from_the_cli_are_audited_like_the_windows() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    let key = gatehouse_epp::public_key_hex(&gatehouse_epp::crypto::generate_signing_key());
    ok(dir.path(), &["trust", "add", &key, "--name", "Dr. Lee", "--scopes", "lab-results"]);
    ok(dir.path(), &["trust", "remove", &key]);
    let store = gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap();
    let actions: Vec<(String, Option<String>)> = store.audit_list(10).unwrap().into_iter().map(|a| (a.action, a.subject)).collect();
    assert_eq!(actions, vec![("trust.remove".to_string(), Some(key.clone())), ("trust.add".to_string(), Some(key.clone()))]);
    // A scope the window would refuse is refused here too.
    let out = gh(dir.path(), &["trust", "add", &key, "--name", "x", "--scopes", "no spaces"]);
    assert!(!out.status.success());
    // Receipts are mailed only to one plain address.
    let out = gh(dir.path(), &["trust", "add", &key, "--name", "x", "--scopes", "a", "--mail-address", "Agent <a@x.example>, b@evil.example"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("is not a mail address"), "{out:?}");
    assert!(store.trust_get(&key).unwrap().is_none());
}

#[test]
fn a_scope_trusted_for_an_hour_is_listed_with_its_end_and_a_past_date_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    let key = gatehouse_epp::public_key_hex(&gatehouse_epp::crypto::generate_signing_key());
    ok(d, &["trust", "add", &key, "--name", "Courier", "--scopes", "delivery", "--for", "1h"]);
    let grants: serde_json::Value = serde_json::from_str(&ok(d, &["trust", "grants", "--json"])).unwrap();
    assert_eq!((grants[0]["scope"].as_str(), grants[0]["ended"].as_bool()), (Some("delivery"), Some(false)), "{grants}");
    let end = chrono::DateTime::parse_from_rfc3339(grants[0]["until"].as_str().unwrap()).unwrap();
    assert!((end.with_timezone(&chrono::Utc) - chrono::Utc::now() - chrono::Duration::hours(1)).num_seconds().abs() < 120, "{end}");
    assert!(ok(d, &["trust", "list"]).contains("delivery-until="));
    let other = gatehouse_epp::public_key_hex(&gatehouse_epp::crypto::generate_signing_key());
    for (arg, says) in [("2020-01-01", "already passed"), ("soon", "say 1h, tonight")] {
        let out = gh(d, &["trust", "add", &other, "--name", "x", "--scopes", "delivery", "--for", arg]);
        assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains(says), "{arg}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = gh(d, &["trust", "add", &other, "--name", "x", "--scopes", "*", "--for", "1h"]);
    assert!(!out.status.success(), "* is never granted for a while");
}

#[test]
fn two_gatehouses_see_the_same_safety_code_and_verify_each_other_with_what_they_shared() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    ok(a.path(), &["init"]);
    ok(b.path(), &["init"]);
    let key_of = |d: &std::path::Path| last_line(&ok(d, &["identity"]));
    let (ka, kb) = (key_of(a.path()), key_of(b.path()));
    ok(a.path(), &["trust", "add", &kb, "--name", "Bea", "--scopes", "support"]);
    ok(b.path(), &["trust", "add", &ka, "--name", "Al", "--scopes", "support"]);
    let code = |d: &std::path::Path| {
        let list: serde_json::Value = serde_json::from_str(&ok(d, &["contacts", "list", "--json"])).unwrap();
        list[0]["keys"][0]["safety_code"].as_str().unwrap().to_string()
    };
    assert_eq!(code(a.path()), code(b.path()), "both sides compute the same code");
    // B verifies A with the text A shares (A's QR); a text naming another key is refused.
    let shared = last_line(&ok(a.path(), &["contacts", "share"]));
    let wrong = gh(b.path(), &["contacts", "verify", &ka, "--shared", &last_line(&ok(b.path(), &["contacts", "share"]))]);
    assert!(!wrong.status.success() && String::from_utf8_lossy(&wrong.stderr).contains("for another key"));
    ok(b.path(), &["contacts", "verify", &ka, "--shared", &shared]);
    assert!(ok(b.path(), &["contacts", "list"]).contains("(verified)"));
}

#[test]
fn quiet_hours_are_set_shown_turned_off_and_audited_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    let shown: serde_json::Value = serde_json::from_str(&ok(d, &["quiet-hours"])).unwrap();
    assert_eq!(shown["hours"], serde_json::Value::Null);
    let set: serde_json::Value = serde_json::from_str(&ok(d, &["quiet-hours", "--from", "22:00", "--to", "7:00"])).unwrap();
    assert_eq!(set["hours"], serde_json::json!({"from": "22:00", "to": "07:00"}));
    let bad = gh(d, &["quiet-hours", "--from", "22:00", "--to", "late"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("not a time of day"));
    let off: serde_json::Value = serde_json::from_str(&ok(d, &["quiet-hours", "--off"])).unwrap();
    assert_eq!(off["hours"], serde_json::Value::Null);
    let store = gatehouse_store::Store::open(&d.join("gatehouse.db")).unwrap();
    assert_eq!(store.audit_list(10).unwrap().iter().filter(|a| a.action == "settings.quiet_hours").count(), 2);
}

#[test]
fn retention_is_shown_changed_and_audited_and_nonsense_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    let shown: serde_json::Value = serde_json::from_str(&ok(dir.path(), &["retention"])).unwrap();
    assert_eq!(shown, serde_json::json!({"rejected_body_days": 7, "rejected_receipt_days": 90, "audit_days": 365, "steps_days": 365}));
    let changed: serde_json::Value = serde_json::from_str(&ok(dir.path(), &["retention", "--rejected-receipt-days", "30"])).unwrap();
    assert_eq!(changed["rejected_receipt_days"], 30);
    assert_eq!(changed["audit_days"], 365, "only the named retention changes");
    let steps: serde_json::Value = serde_json::from_str(&ok(dir.path(), &["retention", "--steps-days", "30"])).unwrap();
    assert_eq!((steps["steps_days"].as_u64(), steps["rejected_receipt_days"].as_u64()), (Some(30), Some(30)));
    let out = gh(dir.path(), &["retention", "--audit-days", "99999"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("use 0 to keep forever"), "{}", String::from_utf8_lossy(&out.stderr));
    let store = gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap();
    let audit = store.audit_list(10).unwrap();
    assert_eq!(audit.iter().map(|a| a.action.as_str()).collect::<Vec<_>>(), ["settings.retention", "settings.retention"]);
    assert_eq!((store.retention().rejected_receipt_days, store.retention().steps_days), (30, 30));
}

#[test]
fn a_revoked_sender_and_a_capability_limit_are_set_from_the_cli_and_enforced_by_the_server() {
    let inbox_dir = tempfile::tempdir().unwrap();
    let sender_dir = tempfile::tempdir().unwrap();
    let _c = Cleanup(vec![inbox_dir.path().into(), sender_dir.path().into()]);
    let inbox_key = last_line(&ok(inbox_dir.path(), &["init"]));
    let sender_key = last_line(&ok(sender_dir.path(), &["keygen"]));
    let d = inbox_dir.path();
    ok(
        d,
        &["trust", "add", &sender_key, "--name", "Shop", "--scopes", "orders", "--require-capabilities", "--allow-capabilities", r#"{"actions":["notify"]}"#],
    );
    let trusted: serde_json::Value = serde_json::from_str(&ok(d, &["trust", "list", "--json"])).unwrap();
    assert_eq!(trusted[0]["facts"]["epp"]["capabilities"], serde_json::json!({"require": true, "allowed": {"actions": ["notify"]}}));
    let bad = gh(d, &["trust", "add", &sender_key, "--name", "x", "--scopes", "orders", "--allow-capabilities", "{nope"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--allow-capabilities is not JSON"));

    let server = Server::start(d);
    let send = || {
        let out = gh(sender_dir.path(), &["send", "--to", &server.submit(), "--recipient", &inbox_key, "--scope", "orders", "--prompt", "shipped"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    // It declares no capabilities, and this sender must.
    let r = send();
    assert_eq!(r["error"]["code"], "POLICY_DENIED", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("must declare the capabilities"), "{r}");

    ok(d, &["trust", "revoke", &sender_key, "--reason", "key leaked"]);
    let revoked: serde_json::Value = serde_json::from_str(&ok(d, &["trust", "revoked", "--json"])).unwrap();
    assert_eq!((revoked[0]["public_key"].as_str(), revoked[0]["reason"].as_str()), (Some(sender_key.as_str()), Some("key leaked")));
    let r = send();
    assert_eq!(r["error"]["code"], "SENDER_REVOKED", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("key leaked"), "{r}");
    ok(d, &["trust", "unrevoke", &sender_key]);
    assert!(String::from_utf8_lossy(&gh(d, &["trust", "unrevoke", &sender_key]).stderr).contains("is not revoked"));
    assert_eq!(send()["error"]["code"], "POLICY_DENIED", "back to its policy");
    let store = gatehouse_store::Store::open(&d.join("gatehouse.db")).unwrap();
    let actions: Vec<String> = store.audit_list(10).unwrap().into_iter().map(|a| a.action).collect();
    assert!(actions.contains(&"trust.revoke".to_string()) && actions.contains(&"trust.unrevoke".to_string()), "{actions:?}");
}

#[test]
fn whether_a_trusted_senders_new_scope_asks_is_shown_and_changed() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["init"]);
    assert!(ok(dir.path(), &["ask-new-scopes"]).starts_with("on:"), "asking is the default");
    assert!(ok(dir.path(), &["ask-new-scopes", "off"]).starts_with("off:"));
    assert!(ok(dir.path(), &["ask-new-scopes"]).starts_with("off:"));
    assert!(!gh(dir.path(), &["ask-new-scopes", "maybe"]).status.success());
    let store = gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap();
    assert_eq!(store.audit_list(10).unwrap()[0].action, "settings.ask_new_scopes");
}
