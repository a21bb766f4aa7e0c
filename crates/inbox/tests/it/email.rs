//! EPP by email against a real Dovecot (Debian's dovecot-imapd, started here on loopback
//! in a temp dir, no TLS: loopback only): a backlog at start-up is read in order, envelope
//! mails are accepted or rejected by the same pipeline as HTTP and filed, ordinary mail is
//! left where it is, a mail arriving while Gatehouse waits in IDLE is picked up, the same
//! envelope mailed twice is a replay, and a wrong password is an error shown once, not a
//! retry loop.

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
use gatehouse_email::imap::{self, Security};
use gatehouse_email::Account;
use gatehouse_inbox::email::Follow;

struct Dovecot {
    child: Child,
    _dir: tempfile::TempDir,
    port: u16,
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.wait();
    }
}

fn dovecot_bin() -> Option<PathBuf> {
    let bin = ["/usr/sbin/dovecot", "/usr/local/sbin/dovecot"].into_iter().map(PathBuf::from).find(|p| p.exists());
    if bin.is_none() {
        let why = "Dovecot is not installed (Debian: dovecot-imapd); run scripts/setup.sh";
        assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
        eprintln!("skipped: {why}");
    }
    bin
}

/// Starts Dovecot for one user `alice` (password `secret`).
fn dovecot() -> Option<Dovecot> {
    let bin = dovecot_bin()?;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for sub in ["run", "state", "home"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    // Dovecot will not run its login or mail processes as root: as root they run as
    // Debian's dovecot/dovenull users (and the mail home is theirs); otherwise as us.
    let root = unsafe { libc::geteuid() } == 0;
    let users = if root {
        Command::new("chown").args(["-R", "dovecot:dovecot"]).arg(d.join("home")).status().unwrap();
        "default_internal_user = dovecot\ndefault_internal_group = dovecot\ndefault_login_user = dovenull\n".to_string()
    } else {
        let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_string();
        format!("default_internal_user = {me}\ndefault_login_user = {me}\n")
    };
    let mail_user = if root { "uid=dovecot gid=dovecot".to_string() } else { format!("uid={} gid={}", unsafe { libc::getuid() }, unsafe { libc::getgid() }) };
    std::fs::write(d.join("passwd"), "alice:{PLAIN}secret\n").unwrap();
    let conf = format!(
        "base_dir = {r}/run\nstate_dir = {r}/state\nlog_path = {r}/dovecot.log\nprotocols = imap\nlisten = 127.0.0.1\nssl = no\n\
         disable_plaintext_auth = no\nauth_mechanisms = plain login\nfirst_valid_uid = 1\n{users}\
         passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u {r}/passwd\n}}\n\
         userdb {{\n  driver = static\n  args = {mail_user} home={r}/home/%u\n}}\n\
         mail_location = maildir:~/Maildir\n\
         service imap-login {{\n  chroot =\n  inet_listener imap {{\n    address = 127.0.0.1\n    port = {port}\n  }}\n  inet_listener imaps {{\n    port = 0\n  }}\n}}\n\
         service anvil {{\n  chroot =\n}}\nprotocol imap {{\n  mail_max_userip_connections = 50\n}}\n",
        r = d.display()
    );
    std::fs::write(d.join("dovecot.conf"), conf).unwrap();
    let child = Command::new(bin).arg("-c").arg(d.join("dovecot.conf")).arg("-F").stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn().unwrap();
    let log = d.join("dovecot.log");
    // Killed with its group when dropped, on the way out of a failed start too.
    let dv = Dovecot { child, _dir: dir, port };
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(dv);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("Dovecot did not listen on {port}: {}", std::fs::read_to_string(log).unwrap_or_default());
}

/// Waits (at most 20 s) until the account's row satisfies `ok`; says what it was if not.
async fn wait_account(store: &gatehouse_store::Store, what: &str, ok: impl Fn(&gatehouse_store::email::EmailAccountRow) -> bool) {
    for _ in 0..200 {
        if store.email_account("personal").unwrap().is_some_and(|a| ok(&a)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}: {:?}", store.email_account("personal").unwrap());
}

fn account(port: u16) -> Account {
    Account { host: "127.0.0.1".into(), port, security: Security::Plain, user: "alice".into(), folder: "INBOX".into() }
}

/// Puts a mail in alice's INBOX, as delivery would.
async fn deliver(port: u16, mail: &str) {
    let mut s = imap::connect(&account(port), "secret").await.unwrap();
    s.append("INBOX", None, None, mail.replace('\n', "\r\n").as_bytes()).await.unwrap();
    s.logout().await.unwrap();
}

/// How many mails a folder holds.
async fn count(port: u16, folder: &str) -> u32 {
    let mut s = imap::connect(&account(port), "secret").await.unwrap();
    let n = s.examine(folder).await.map(|m| m.exists).unwrap_or(0);
    s.logout().await.unwrap();
    n
}

fn envelope_mail(env: &serde_json::Value, n: u32) -> String {
    format!(
        "From: Clinic <agent@clinic.example>\nTo: alice+gatehouse@example.com\nMessage-ID: <env{n}@clinic.example>\nSubject: results {n}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nAttached.\n--b\nContent-Type: application/epp+json\nContent-Disposition: attachment; filename=\"e.epp.json\"\n\n{env}\n--b--\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_by_mail_are_received_filed_and_never_accepted_twice() {
    let Some(dv) = dovecot() else { return };
    let port = dv.port;
    let alice = key(7);
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let first = probe.signed(&alice, "support", "lab results are in");
    let second = probe.signed(&alice, "support", "order confirmed");
    probe.stop().await;

    // A backlog before Gatehouse starts: two envelopes, a mail that is none of ours, and
    // an envelope attachment that is not an envelope.
    deliver(port, &envelope_mail(&first, 1)).await;
    deliver(port, "From: friend@example.com\nSubject: lunch?\n\nAre you free at noon?\n").await;
    deliver(port, &envelope_mail(&second, 2)).await;
    deliver(port, &envelope_mail(&serde_json::json!({"version": "1", "sender": "x", "signature": "y"}), 3)).await;

    let follow = Follow { name: "personal".into(), account: account(port), password: "secret".into() };
    let acct = serde_json::to_value(account(port)).unwrap();
    let alice_hex = pubhex(&alice);
    let inbox = TestInbox::start_email(
        &pubhex(&key(1)),
        |s| {
            s.email_account_put("personal", &acct, "2026-11-25T00:00:00Z").unwrap();
            s.trust_add(&gatehouse_store::TrustEntry {
                public_key: alice_hex,
                name: "Alice".into(),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy: policy(&["support"]),
            })
            .unwrap();
        },
        vec![follow],
    )
    .await;
    let store = inbox.store.clone();
    wait_account(&store, "the backlog handled", |a| a.last_uid == 4).await;
    let receipts = store.receipts(20, 0).unwrap();
    let accepted = receipts.iter().filter(|r| r.status == "accepted" && r.transport == "email").count();
    let rejected = receipts.iter().filter(|r| r.status != "accepted" && r.transport == "email").count();
    assert_eq!((accepted, rejected), (2, 1), "{receipts:?}");
    assert_eq!(count(port, "INBOX").await, 1, "the ordinary mail stays where it was");
    assert_eq!(count(port, "Gatehouse.Accepted").await, 2);
    assert_eq!(count(port, "Gatehouse.Rejected").await, 1);

    // While Gatehouse waits (IDLE), a new envelope arrives and is picked up; the same one
    // mailed again is a replay.
    wait_account(&store, "waiting in IDLE", |a| a.state == "idle").await;
    let third = inbox.signed(&alice, "support", "a third one");
    deliver(port, &envelope_mail(&third, 4)).await;
    deliver(port, &envelope_mail(&first, 5)).await;
    wait_account(&store, "the new mail handled", |a| a.last_uid == 6).await;
    let receipts = store.receipts(20, 0).unwrap();
    assert_eq!(receipts.iter().filter(|r| r.status == "accepted").count(), 3);
    assert!(receipts.iter().any(|r| r.code.as_deref() == Some("REPLAY_DETECTED")), "{receipts:?}");
    assert_eq!(count(port, "Gatehouse.Accepted").await, 3);
    assert_eq!(count(port, "Gatehouse.Rejected").await, 2);
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_shown_and_not_retried() {
    let Some(dv) = dovecot() else { return };
    let acct = serde_json::to_value(account(dv.port)).unwrap();
    let follow = Follow { name: "personal".into(), account: account(dv.port), password: "wrong".into() };
    let inbox = TestInbox::start_email(&pubhex(&key(1)), |s| s.email_account_put("personal", &acct, "2026-11-25T00:00:00Z").unwrap(), vec![follow]).await;
    let store = inbox.store.clone();
    wait_account(&store, "the error shown", |a| a.state == "error").await;
    let a = store.email_account("personal").unwrap().unwrap();
    assert!(a.last_error.as_deref().is_some_and(|e| e.contains("refused the login for alice")), "{a:?}");
    // No second attempt: Dovecot's log would show each; the state stays as it is.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(store.email_account("personal").unwrap().unwrap().state, "error");
    inbox.stop().await;
}
