//! EPP by email in the window, against a real Dovecot and Exim on loopback: a mail account
//! added in Settings (the login tried first; STARTTLS to a server with its own certificate,
//! pasted in the form), its state shown, an envelope that arrives by
//! mail shown as "arrived by email" with what the mail says about itself, and its receipt
//! mailed back to the sender.

use crate::harness::*;
use gatehouse_email_testservers::{Dovecot, Exim, PASSWORD, USER};

/// Puts a mail in alice's INBOX, as delivery would.
fn deliver(dv: &Dovecot, mail: &str) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let account = gatehouse_email::Account {
            host: "127.0.0.1".into(),
            port: dv.port,
            security: gatehouse_email::Security::StartTls,
            user: USER.into(),
            folder: "INBOX".into(),
            smtp: None,
            receipts: Default::default(),
            receipt_rate: Default::default(),
            certificate: dv.certificate.as_ref().map(|c| c.pem.clone()),
        };
        let mut s = gatehouse_email::imap::connect(&account, PASSWORD).await.unwrap();
        s.append("INBOX", None, None, mail.replace('\n', "\r\n").as_bytes()).await.unwrap();
        s.logout().await.unwrap();
    });
}

#[test]
fn a_mail_account_is_added_in_settings_and_an_envelope_by_mail_is_shown_with_its_mailed_receipt() {
    let (Some(dv), Some(ex)) = (Dovecot::start_tls(), Exim::start()) else { return };
    let app = App::start();
    app.click("#nav-settings");
    app.find("#email-accounts");
    // The login is tried first: a wrong password is said and nothing is kept.
    app.script("document.querySelector('#email-accounts details').open = true; return true;");
    app.type_into("#email-name", "personal");
    app.type_into("#email-host", "127.0.0.1");
    app.script("document.querySelector('#email-security').value = 'starttls'; return true;");
    app.type_into("#email-port", &dv.port.to_string());
    let pem = serde_json::to_string(&dv.certificate.as_ref().unwrap().pem).unwrap();
    app.script(&format!("document.querySelector('#email-certificate').value = {pem}; return true;"));
    app.type_into("#email-user", USER);
    app.type_into("#email-password", "wrong");
    app.click("#email-add");
    app.wait_text("#email-msg", "refused the login");
    assert!(app.find_all("#email-list").is_empty(), "a refused account is not kept");

    app.type_into("#email-password", PASSWORD);
    app.type_into("#email-smtp-host", "127.0.0.1");
    app.type_into("#email-smtp-port", &ex.port.to_string());
    app.script("document.querySelector('#email-smtp-security').value = 'plain'; return true;");
    app.type_into("#email-from", "alice@home.example");
    app.click("#email-add");
    app.wait_text("#email-msg", "mail goes out through");
    app.wait_text("#email-list", "personal");
    assert!(app.text("#email-list").contains("over STARTTLS (its own certificate trusted)"), "{}", app.text("#email-list"));
    // Followed at once: the inbox restarted with it and waits for new mail.
    app.wait("the account to be followed", || {
        app.click("#nav-inbox");
        app.click("#nav-settings");
        app.text("#email-list").contains("Connected, waiting for new mail")
    });
    app.script("document.querySelector('#email-accounts').scrollIntoView(); return true;");
    app.screenshot("email-account");

    // A trusted sender's envelope arrives by mail.
    let clinic = SigningKey::from_bytes(&[42; 32]);
    app.trust(&clinic, "Clinic", &["support"]);
    // Let in from the clinic's mail: its receipts go to that address, and only there.
    let store = app.store();
    let key = gatehouse_epp::public_key_hex(&clinic);
    let mut entry = store.trust_get(&key).unwrap().unwrap();
    entry.facts.epp.get_or_insert_with(Default::default).mail_address = Some("agent@clinic.example".into());
    store.trust_update(&key, None, &entry.policy, Some(&entry.facts)).unwrap();
    let env = app.envelope(&clinic, "support", "Your lab results are ready; nothing needs doing.");
    deliver(
        &dv,
        &format!(
            "From: Clinic <agent@clinic.example>\nTo: alice+gatehouse@home.example\nMessage-ID: <lab-1@clinic.example>\nSubject: lab results\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nAttached.\n--b\nContent-Type: application/epp+json\nContent-Disposition: attachment; filename=\"e.epp.json\"\n\n{env}\n--b--\n"
        ),
    );
    let mailed = ex.wait_delivered(1);
    assert!(String::from_utf8_lossy(&mailed[0]).contains("In-Reply-To: <lab-1@clinic.example>"));
    let id = app.open_arrival("Your lab results are ready");
    app.wait_text("#inbox-detail", "Email");
    app.wait_text("#detail-email-mail-from", "agent@clinic.example");
    assert_eq!(app.text("#detail-email-message-id"), "lab-1@clinic.example");
    app.wait("the receipt shown as mailed", || {
        app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
        app.text("#detail-email-receipt-by-mail").contains("Mailed to agent@clinic.example")
    });
    app.screenshot("email-arrival");
}
