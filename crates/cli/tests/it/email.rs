//! EPP by email from the CLI, end to end over real servers (Debian's Dovecot and Exim on
//! loopback): one Gatehouse sends an envelope with `gatehouse send --to mailto:` through
//! Exim into a mailbox another Gatehouse follows (`gatehouse email add` with an outgoing
//! server, then `gatehouse serve`); it is accepted there, and its receipt is mailed back.

use std::time::{Duration, Instant};

use crate::common::*;
use gatehouse_email_testservers::{Dovecot, Exim, PASSWORD, USER};

fn last_line(s: &str) -> String {
    s.trim().lines().last().unwrap_or_default().to_string()
}

/// Every mail in alice's INBOX (new and seen), as text.
fn inbox_mail(dv: &Dovecot) -> Vec<String> {
    let mut out = Vec::new();
    for sub in ["new", "cur"] {
        if let Ok(d) = std::fs::read_dir(dv.maildir().join(sub)) {
            out.extend(d.filter_map(|e| e.ok()).filter_map(|e| std::fs::read_to_string(e.path()).ok()));
        }
    }
    out
}

#[test]
fn an_envelope_sent_by_mail_is_accepted_and_its_receipt_comes_back_by_mail() {
    let Some(dv) = Dovecot::start() else { return };
    let Some(ex) = Exim::start_for(&dv) else { return };
    let (sender, recipient) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (sender.path(), recipient.path());
    let _clean = Cleanup(vec![a.to_path_buf(), b.to_path_buf()]);
    let a_key = last_line(&ok(a, &["keygen"]));
    let b_key = last_line(&ok(b, &["init"]));
    let (imap, smtp) = (dv.port.to_string(), ex.port.to_string());
    let account = |dir, name: &str, from: &str| {
        let args = [
            "email",
            "add",
            name,
            "--host",
            "127.0.0.1",
            "--port",
            &imap,
            "--plain",
            "--user",
            USER,
            "--password-stdin",
            "--smtp-host",
            "127.0.0.1",
            "--smtp-port",
            &smtp,
            "--smtp-plain",
            "--from",
            from,
        ];
        let out = gh_in(dir, &args, PASSWORD);
        assert!(out.status.success(), "email add: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // The login and the outgoing server are tried before anything is kept.
    let wrong = gh_in(b, &["email", "add", "x", "--host", "127.0.0.1", "--port", &imap, "--plain", "--user", USER, "--password-stdin"], "nope");
    assert!(!wrong.status.success() && String::from_utf8_lossy(&wrong.stderr).contains("refused the login"));
    let said = account(b, "home", "alice@home.example");
    assert!(said.contains(&format!("mail goes out through 127.0.0.1:{smtp}")), "{said}");
    account(a, "out", "agent@sender.example");
    let listed = json(b, &["email", "list", "--json"]);
    assert_eq!(listed[0]["account"]["smtp"]["from"], "alice@home.example");
    assert_eq!(listed[0]["account"]["receipts"], "known");

    ok(b, &["trust", "add", &a_key, "--name", "Sender", "--scopes", "support"]);
    let _serve = Server::start(b);
    let sent = ok(a, &["send", "--to", "mailto:alice@home.example", "--recipient", &b_key, "--scope", "support", "--prompt", "hello by mail"]);
    let envelope_id = last_line(&sent);

    // The recipient accepts it (transport email) and mails its receipt to the sender.
    let t = Instant::now();
    let receipt_mail = loop {
        let found = inbox_mail(&dv).into_iter().find(|m| m.contains("To: agent@sender.example") && m.contains("epp-receipt+json"));
        if let Some(m) = found {
            break m;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no receipt came back; mail there: {:?}", inbox_mail(&dv));
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(receipt_mail.contains("In-Reply-To: <"), "{receipt_mail}");
    let receipts = json(b, &["receipts", "--json"]);
    let r = receipts.as_array().unwrap().iter().find(|r| r["envelope_id"] == envelope_id.as_str()).expect("a receipt for the mailed envelope");
    assert_eq!((r["status"].as_str(), r["x-transport"].as_str()), (Some("accepted"), Some("email")));
    // Where it came from (the mail's own, unverified claims) and that its receipt went back.
    assert_eq!(r["x-email"]["from_addr"], "agent@sender.example");
    assert_eq!(r["x-email"]["mailed_back"]["to_addr"], "agent@sender.example");
    assert!(receipt_mail.contains(r["receipt_id"].as_str().unwrap()), "the mailed receipt is this one: {receipt_mail}");
    // Sending is audited on the sender's side.
    let file = a.join("audit.json");
    ok(a, &["export", "audit", file.to_str().unwrap()]);
    let audit = std::fs::read_to_string(&file).unwrap();
    assert!(audit.contains("email.envelope_sent"), "{audit}");
}
