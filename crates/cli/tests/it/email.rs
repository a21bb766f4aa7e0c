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
    // The IMAP server takes logins over TLS only, with a certificate of its own.
    let Some(dv) = Dovecot::start_tls() else { return };
    let Some(ex) = Exim::start_for(&dv) else { return };
    let (sender, recipient) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (sender.path(), recipient.path());
    let _clean = Cleanup(vec![a.to_path_buf(), b.to_path_buf()]);
    let a_key = last_line(&ok(a, &["keygen"]));
    let b_key = last_line(&ok(b, &["init"]));
    let (imap, smtp) = (dv.port.to_string(), ex.port.to_string());
    let cert = a.join("server.pem");
    std::fs::write(&cert, &dv.certificate.as_ref().unwrap().pem).unwrap();
    let cert = cert.to_str().unwrap();
    let account = |dir, name: &str, from: &str| {
        let args = [
            "email",
            "add",
            name,
            "--host",
            "127.0.0.1",
            "--port",
            &imap,
            "--starttls",
            "--certificate",
            cert,
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
    let wrong = gh_in(
        b,
        &["email", "add", "x", "--host", "127.0.0.1", "--port", &imap, "--starttls", "--certificate", cert, "--user", USER, "--password-stdin"],
        "nope",
    );
    assert!(!wrong.status.success() && String::from_utf8_lossy(&wrong.stderr).contains("refused the login"));
    // Without the server's certificate it is not trusted, and the user is told what to do.
    let untrusted = gh_in(b, &["email", "add", "x", "--host", "127.0.0.1", "--port", &imap, "--starttls", "--user", USER, "--password-stdin"], PASSWORD);
    assert!(!untrusted.status.success() && String::from_utf8_lossy(&untrusted.stderr).contains("give the account its certificate"));
    let said = account(b, "home", "alice@home.example");
    assert!(said.contains(&format!("mail goes out through 127.0.0.1:{smtp}")), "{said}");
    account(a, "out", "agent@sender.example");
    let listed = json(b, &["email", "list", "--json"]);
    assert_eq!(listed[0]["account"]["smtp"]["from"], "alice@home.example");
    assert_eq!(listed[0]["account"]["receipts"], "known");
    assert_eq!(listed[0]["account"]["security"], "start_tls");

    // Its receipts go to the address it writes from, which the user gives.
    ok(b, &["trust", "add", &a_key, "--name", "Sender", "--scopes", "support", "--mail-address", "agent@sender.example"]);
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

/// How many mails a folder of alice's holds.
pub(crate) fn count(dv: &Dovecot, folder: &str) -> u32 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut s = gatehouse_email::imap::connect(&account(dv), PASSWORD).await.unwrap();
        let n = s.examine(folder).await.map(|m| m.exists).unwrap_or(0);
        s.logout().await.unwrap();
        n
    })
}

pub(crate) fn account(dv: &Dovecot) -> gatehouse_email::Account {
    gatehouse_email::Account {
        host: "127.0.0.1".into(),
        port: dv.port,
        security: gatehouse_email::Security::Plain,
        user: USER.into(),
        folder: "INBOX".into(),
        smtp: None,
        receipts: Default::default(),
        receipt_rate: Default::default(),
        certificate: None,
    }
}

#[test]
fn kill_9_in_a_backlog_of_envelope_mail_accepts_each_once_and_files_every_mail() {
    const N: usize = 2000;
    let Some(dv) = Dovecot::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _clean = Cleanup(vec![d.to_path_buf()]);
    let inbox_key = last_line(&ok(d, &["init"]));
    let sender = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    ok(d, &["trust", "add", &gatehouse_epp::public_key_hex(&sender), "--name", "Clinic", "--scopes", "support"]);
    let out =
        gh_in(d, &["email", "add", "home", "--host", "127.0.0.1", "--port", &dv.port.to_string(), "--plain", "--user", USER, "--password-stdin"], PASSWORD);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // The backlog waits in the mailbox before Gatehouse starts.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut s = gatehouse_email::imap::connect(&account(&dv), PASSWORD).await.unwrap();
        for i in 0..N {
            let env = gatehouse_epp::Draft::new(&inbox_key, "support", &format!("result {i}")).sign(&sender, chrono::Utc::now());
            let mail = format!(
                "From: agent@clinic.example\r\nMessage-ID: <m{i}@clinic.example>\r\nSubject: result {i}\r\nContent-Type: application/epp+json\r\n\r\n{}\r\n",
                serde_json::to_string(&env).unwrap()
            );
            s.append("INBOX", None, None, mail.as_bytes()).await.unwrap();
        }
        s.logout().await.unwrap();
    });
    let progress = || json(d, &["email", "list", "--json"])[0]["last_uid"].as_u64().unwrap_or(0);

    // Killed with -9 part way through, then started again.
    let mut serve = Server::start(d);
    let t = Instant::now();
    // Killed as soon as the first batch is filed: the rest of the backlog goes fast.
    while progress() < 1 {
        assert!(t.elapsed() < Duration::from_secs(120), "the backlog is not being read");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::process::Command::new("kill").args(["-9", &serve.0.id().to_string()]).status().unwrap();
    let _ = serve.0.wait();
    // While a backlog is read, the account says how much of it still waits.
    let row = &json(d, &["email", "list", "--json"])[0];
    assert_eq!(row["last_uid"].as_u64().unwrap() + row["backlog"].as_u64().unwrap(), N as u64, "{row}");
    let at_kill = progress();
    assert!(at_kill < N as u64, "killed before the end ({at_kill} of {N} read)");
    drop(serve);
    let _serve = Server::start(d);
    let t = Instant::now();
    while progress() < N as u64 {
        assert!(t.elapsed() < Duration::from_secs(180), "the backlog was not finished after the restart: {} of {N}", progress());
        std::thread::sleep(Duration::from_millis(100));
    }

    let receipts = json(d, &["receipts", "--json", "--limit", "10000"]);
    let mut accepted: Vec<&str> =
        receipts.as_array().unwrap().iter().filter(|r| r["status"] == "accepted").map(|r| r["envelope_id"].as_str().unwrap()).collect();
    accepted.sort_unstable();
    let before = accepted.len();
    accepted.dedup();
    assert_eq!((before, accepted.len()), (N, N), "every envelope accepted, and each once (killed at {at_kill})");
    let (inbox, filed, refused) = (count(&dv, "INBOX"), count(&dv, "Gatehouse.Accepted"), count(&dv, "Gatehouse.Rejected"));
    assert_eq!(inbox, 0, "every mail filed");
    assert_eq!(filed + refused, N as u32);
    assert_eq!(filed, N as u32, "a mail whose envelope was accepted is filed as accepted, also when seen again after the kill");
}
