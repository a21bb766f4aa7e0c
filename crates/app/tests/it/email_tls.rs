//! Mail accounts over TLS against a real Dovecot and Exim that take logins over TLS only,
//! each with a self-signed certificate of its own: STARTTLS and TLS from the first byte
//! for IMAP and for SMTP submission, with the account's own trusted certificate; without
//! it the server is not trusted; a server that offers no STARTTLS is never logged in to in
//! the clear. An account followed over STARTTLS receives an envelope and mails its receipt
//! back over STARTTLS.

use gatehouse_app::doors::email::Follow;
use gatehouse_email::imap::{self, Security};
use gatehouse_email::smtp::{self, MailReceipts, SmtpSecurity, Submission};
use gatehouse_email::{Account, EmailError};
use gatehouse_email_testservers::{Dovecot, Exim};

use super::email::{account, dovecot, envelope_mail, following, wait_account};
use crate::common::*;

fn over_tls(dv: &Dovecot, security: Security) -> Account {
    let port = if security == Security::Tls { dv.tls_port } else { dv.port };
    Account { security, port, certificate: dv.certificate.as_ref().map(|c| c.pem.clone()), ..account(port) }
}

fn submission(ex: &Exim, security: SmtpSecurity) -> Submission {
    let port = if security == SmtpSecurity::Tls { ex.tls_port } else { ex.port };
    Submission { host: "127.0.0.1".into(), port, security, user: "alice".into(), from: "alice@home.example".into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imap_over_starttls_and_tls_trusts_the_accounts_own_certificate_and_never_falls_back_to_plain() {
    let Some(dv) = Dovecot::start_tls() else { return };
    for security in [Security::StartTls, Security::Tls] {
        let a = over_tls(&dv, security);
        let mut s = imap::connect(&a, "secret").await.unwrap_or_else(|e| panic!("{security:?}: {e}"));
        imap::prepare(&mut s).await.unwrap();
        assert_eq!(s.examine("INBOX").await.unwrap().exists, 0);
        s.logout().await.unwrap();

        // The same server without its certificate: not trusted, and the error says TLS.
        let untrusted = Account { certificate: None, ..a.clone() };
        let e = imap::connect(&untrusted, "secret").await.expect_err("a self-signed server is not trusted by default");
        assert!(matches!(&e, EmailError::Unreachable(_, w) if w.contains("TLS") && w.contains("give the account its certificate")), "{security:?}: {e}");
        // A certificate that is not the server's does not help.
        let other = gatehouse_email_testservers::Certificate::new();
        let wrong = Account { certificate: Some(other.pem), ..a };
        assert!(imap::connect(&wrong, "secret").await.is_err(), "{security:?}");
    }
    // A server that offers no STARTTLS: refused before any password is sent.
    let Some(clear) = dovecot() else { return };
    let a = Account { security: Security::StartTls, ..account(clear.port) };
    let e = imap::connect(&a, "secret").await.expect_err("no STARTTLS, no login");
    assert!(matches!(&e, EmailError::Refused(w) if w.contains("does not offer STARTTLS")), "{e}");
    assert!(!e.transient(), "nothing to retry: the account must change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_submission_over_starttls_and_tls_trusts_the_accounts_own_certificate() {
    let Some(ex) = Exim::start_tls() else { return };
    let pem = ex.certificate.as_ref().map(|c| c.pem.clone());
    for (n, security) in [SmtpSecurity::StartTls, SmtpSecurity::Tls].into_iter().enumerate() {
        let s = submission(&ex, security);
        smtp::probe(&s, pem.as_deref(), "secret").await.unwrap_or_else(|e| panic!("{security:?}: {e}"));
        let mail = smtp::envelope_mail(&s.from, "agent@clinic.example", "over TLS", r#"{"version":"1"}"#).unwrap();
        smtp::send(&s, pem.as_deref(), "secret", "agent@clinic.example", &mail).await.unwrap();
        assert_eq!(ex.wait_delivered(n + 1).len(), n + 1);
        let e = smtp::probe(&s, None, "secret").await.expect_err("a self-signed server is not trusted by default");
        assert!(e.to_string().contains("give the account its certificate"), "{security:?}: {e}");
        // Sending (over a connection of Gatehouse's own) trusts no more than the probe.
        let e = smtp::send(&s, None, "secret", "agent@clinic.example", &mail).await.expect_err("not trusted when sending either");
        assert!(e.to_string().contains("give the account its certificate"), "{security:?}: {e}");
        let e = smtp::send(&s, pem.as_deref(), "wrong", "agent@clinic.example", &mail).await.expect_err("a wrong password");
        assert!(matches!(e, gatehouse_email::EmailError::LoginRefused { .. }), "{security:?}: {e}");
    }
    // The server offers AUTH only over TLS: a plain submission cannot log in.
    let plain = submission(&ex, SmtpSecurity::Plain);
    assert!(smtp::probe(&plain, None, "secret").await.is_err());
    let mail = smtp::envelope_mail(&plain.from, "agent@clinic.example", "in the clear", r#"{"version":"1"}"#).unwrap();
    assert!(smtp::send(&plain, None, "secret", "agent@clinic.example", &mail).await.is_err(), "no login without TLS");
    assert_eq!(ex.delivered().len(), 2, "nothing more was delivered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_followed_over_starttls_receives_an_envelope_and_mails_its_receipt_back_over_starttls() {
    let (Some(dv), Some(ex)) = (Dovecot::start_tls(), Exim::start_tls()) else { return };
    let alice = key(7);
    let probe = TestInbox::start(&pubhex(&key(1)), false).await;
    let env = probe.signed(&alice, "support", "lab results are in");
    probe.stop().await;

    let mut a = over_tls(&dv, Security::StartTls);
    deliver_tls(&a, &envelope_mail(&env, 1)).await;
    // One certificate per account: the test's two servers share none, so the outgoing
    // server's is trusted by a second account setting below.
    a.smtp = Some(submission(&ex, SmtpSecurity::StartTls));
    a.receipts = MailReceipts::Known;
    a.certificate = Some(format!("{}{}", dv.certificate.as_ref().unwrap().pem, ex.certificate.as_ref().unwrap().pem));
    let f = Follow::new("personal".into(), a, "secret".into(), Some("secret".into()));
    let inbox = following(f, Some(&alice)).await;
    let store = inbox.store.clone();
    wait_account(&store, "the mail handled", |r| r.last_uid == 1).await;
    let receipts = store.receipts(5, 0).unwrap();
    assert_eq!(receipts.iter().filter(|r| r.status == "accepted" && r.transport == "email").count(), 1, "{receipts:?}");
    let m = ex.wait_delivered(1);
    let parsed = mail_parser::MessageParser::default().parse(&m[0]).unwrap();
    assert_eq!(parsed.in_reply_to().as_text(), Some("env1@clinic.example"));
    inbox.stop().await;
}

async fn deliver_tls(a: &Account, mail: &str) {
    let mut s = imap::connect(a, "secret").await.unwrap();
    s.append("INBOX", None, None, mail.replace('\n', "\r\n").as_bytes()).await.unwrap();
    s.logout().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_server_without_starttls_gets_no_password_and_no_mail() {
    // Exim without a certificate offers no STARTTLS.
    let Some(ex) = Exim::start() else { return };
    let s = Submission { host: "127.0.0.1".into(), port: ex.port, security: SmtpSecurity::StartTls, user: "alice".into(), from: "alice@home.example".into() };
    let mail = smtp::envelope_mail(&s.from, "agent@clinic.example", "must not leave", r#"{"version":"1"}"#).unwrap();
    let e = smtp::send(&s, None, "secret", "agent@clinic.example", &mail).await.unwrap_err();
    assert!(matches!(&e, gatehouse_email::EmailError::Refused(w) if w.contains("does not offer STARTTLS")), "{e}");
    assert!(!e.transient(), "nothing to retry: the account must change");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(ex.delivered().is_empty());
}
