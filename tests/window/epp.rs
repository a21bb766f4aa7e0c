//! EPP in the window: consent prompts, dropped files, policies, conversations, what a
//! v1.1 sender declares, and what a script in the window cannot do.

use crate::harness::*;

#[test]
fn unknown_sender_prompts_and_approval_lets_the_next_envelope_in() {
    let app = App::start();
    assert_eq!(app.call(reqwest::Method::GET, "/title", None), "Gatehouse");
    app.wait_text("#inbox-status-pill", &format!("127.0.0.1:{}", app.port));
    let stranger = gatehouse_epp::generate_signing_key();
    let (status, receipt) = app.send(&stranger, "support", "Hello, I am the pharmacy bot. May I remind you about refills?");
    assert_eq!((status, receipt["error"]["code"].as_str()), (401, Some("UNTRUSTED_SENDER")));

    // The count of things waiting shows, and the prompt says who asks and what.
    app.wait_text("#waiting-count", "1");
    app.click("#nav-consent");
    app.wait_text(".consent-card", "pharmacy bot");
    let ask = app.text(".consent-card .ask");
    assert!(ask.contains("not approved") && ask.contains("“support”"), "{ask}");
    app.screenshot("consent");
    app.click(".consent-card button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "Trusted for");

    // The next envelope from that sender is accepted and lands in the inbox.
    let (status, _) = app.send(&stranger, "support", "Second message: your refill is ready.");
    assert_eq!(status, 200);
    app.click("#nav-inbox");
    let id = app.row_with("your refill is ready");
    let row = format!("#inbox-rows .row[data-receipt='{id}']");
    assert!(app.text(&format!("{row} .badge")).contains("Done") || app.text(&format!("{row} .badge")).contains("Queued"));
    // The waiting message itself was delivered by the approval too.
    app.row_with("May I remind you about refills");
    // The decision is in the activity log, and the log checks out.
    app.click("#nav-activity");
    app.wait_text("#audit-list", "consent.always_allow_scope");
    app.click("#audit-check");
    app.wait_text("#audit-verdict", "Intact: ");
    // An entry edited behind the window's back is named by the check.
    let db = rusqlite::Connection::open(app.data.path().join("gatehouse.db")).unwrap();
    let id: i64 = db.query_row("SELECT id FROM audit WHERE action = 'consent.always_allow_scope'", [], |r| r.get(0)).unwrap();
    db.execute("UPDATE audit SET action = 'consent.deny' WHERE id = ?1", [id]).unwrap();
    app.click("#audit-check");
    app.wait_text("#audit-verdict", &format!("Not intact: entry #{id} (consent.deny"));
    app.wait_text("#audit-list", "consent.deny");
    app.screenshot("activity-not-intact");
}

#[test]
fn what_an_epp_v11_sender_declares_is_shown_before_allow_and_in_the_detail() {
    let app = App::start();
    let stranger = gatehouse_epp::generate_signing_key();
    // v1.1 fields ride beside the signed ones, as the reference sends them.
    let mut env = app.envelope(&stranger, "orders", "Your order 1042 has shipped; add the delivery to your calendar?");
    env["capabilities"] = json!({"filesystem": {"read": ["~/Documents/orders"]}, "network": {"domains": ["shop.example"], "protocols": ["https"]}, "actions": ["create_calendar_event"], "data_access": ["contacts"]});
    env["payment"] = json!({"required": true, "amount": "0.50", "currency": "USDC", "recipient": "8xQ1", "chain": "solana"});
    let r = reqwest::blocking::Client::new().post(app.submit_url()).json(&env).send().unwrap();
    assert_eq!(r.status().as_u16(), 401);

    app.click("#nav-consent");
    app.wait_text(".consent-card", "It says it will ask your AI to:");
    let card = app.text(".consent-card");
    for words in
        ["read files in ~/Documents/orders", "connect to shop.example (https)", "take these actions: create_calendar_event", "see your contacts", "never pays"]
    {
        assert!(card.contains(words), "{words:?} in {card}");
    }
    app.screenshot("consent-v11");
    app.click(".consent-card button[data-decision='allow_once']");
    app.wait("the card to settle", || !app.text(".consent-card .result").is_empty());

    app.click("#nav-inbox");
    // The accepted envelope's row, not its earlier knock's (same words, refused): once the
    // list read after the decision is drawn, the knock is shown as the message it became
    // (a list drawn before it still held the knock's row, which then went).
    app.wait_text("#inbox-rows", "allowed once by you");
    let id = app.row_with_but_not("Your order 1042", "not trusted");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#detail-extras", "read files in ~/Documents/orders");
    assert!(app.text("#detail-extras").contains("payment: 0.50 USDC on solana"));
    assert!(app.text("#detail-steps").contains("No content hash sent (optional)"), "{}", app.text("#detail-steps"));
    app.script("document.querySelector('#detail-extras').scrollIntoView(); return true;");
    app.screenshot("detail-v11");
}

#[test]
fn a_dropped_file_appears_with_its_receipt_and_hostile_markup_stays_text() {
    let app = App::start();
    let doctor = gatehouse_epp::generate_signing_key();
    app.trust(&doctor, "Dr. Lee", &["lab-results"]);
    let env = app.envelope(&doctor, "lab-results", "Your lab results from the folder: LDL 96 mg/dL.");
    app.wait("the watched folder", || app.watch.join("accepted").exists());
    std::fs::write(app.watch.join("labs.json"), env.to_string()).unwrap();
    app.open_arrival("from the folder");
    app.wait_text("#inbox-detail h2", "Accepted");
    let detail = app.text("#inbox-detail");
    assert!(detail.contains("Folder: labs.json"), "{detail}");
    assert!(detail.contains("Dr. Lee"), "{detail}");
    assert!(detail.contains(env["envelope_id"].as_str().unwrap()), "{detail}");
    let receipt_file = app.watch.join("accepted").join("labs.json.receipt.json");
    let receipt: Value = serde_json::from_str(&std::fs::read_to_string(receipt_file).unwrap()).unwrap();
    assert_eq!(receipt["envelope_id"], env["envelope_id"]);

    // (d) A prompt carrying markup renders as text, in the list and in the detail.
    let hostile = "Look: <img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned2'</script> done";
    let (status, _) = app.send(&doctor, "lab-results", hostile);
    assert_eq!(status, 200);
    let id = app.row_with("<img src=x onerror=");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#detail-prompt", "done");
    assert_eq!(app.text("#detail-prompt"), hostile);
    assert!(app.find_all("#detail-prompt img, #inbox-rows img, #detail-prompt script").is_empty());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(app.call(reqwest::Method::GET, "/title", None), "Gatehouse", "no injected script ran");
    app.screenshot("inbox");
}

#[test]
fn editing_a_policy_changes_the_next_verdict() {
    let app = App::start();
    let clinic = gatehouse_epp::generate_signing_key();
    app.trust(&clinic, "City Clinic", &["support"]);
    // A capability limit set from the CLI, which this form does not edit: kept by a save.
    let store = app.store();
    let key = gatehouse_epp::public_key_hex(&clinic);
    let policy = store.trust_get(&key).unwrap().unwrap().policy;
    let limit = gatehouse_store::CapabilityLimit { require: false, allowed: json!({"actions": ["notify"]}) };
    let facts = gatehouse_store::Facts::epp(gatehouse_store::EppFacts { capabilities: Some(limit.clone()), ..Default::default() });
    store.trust_update(&key, None, &policy, Some(&facts)).unwrap();
    let (status, r) = app.send(&clinic, "billing", "Your invoice is ready");
    assert_eq!((status, r["error"]["code"].as_str()), (403, Some("POLICY_DENIED")));

    app.click("#nav-people");
    app.wait_text("#contacts", "City Clinic");
    app.click("#contacts li[data-key] button.edit");
    app.type_into("#trust-scopes", "support, billing");
    app.type_into("#trust-per-day", "20");
    app.click("#trust-save");
    app.wait_text("#contacts", "support, billing");
    app.wait_text("#contacts", "20/day");
    app.screenshot("people-edit");

    let (status, _) = app.send(&clinic, "billing", "Your invoice is ready (again)");
    assert_eq!(status, 200, "the edited policy applies to the very next envelope");
    assert_eq!(store.trust_get(&key).unwrap().unwrap().facts.capabilities(), Some(&limit), "the save kept what it does not show");
    // Adding a sender by pasting a key, with a bad key first: a clear error, nothing saved.
    app.click("#people-add-open");
    app.click("#add-key");
    app.type_into("#trust-key", "not-a-key");
    app.type_into("#trust-name", "Typo");
    app.type_into("#trust-scopes", "support");
    app.click("#trust-save");
    app.wait_text("#trust-form .error", "64 hexadecimal");
    let other = gatehouse_epp::generate_signing_key();
    app.type_into("#trust-key", &gatehouse_epp::public_key_hex(&other));
    app.click("#trust-save");
    app.wait_text("#contacts", "Typo");
    assert_eq!(app.send(&other, "support", "hi").0, 200);
}

#[test]
fn conversations_thread_with_delegation_and_settings_show_the_identity() {
    let app = App::start();
    let doctor = gatehouse_epp::generate_signing_key();
    let patient = gatehouse_epp::generate_signing_key();
    app.trust(&doctor, "Doctor", &["*"]);
    app.trust(&patient, "Patient", &["notifications"]);
    let conv = "6f1c2a4e-2b4b-4f8e-9a51-0d2e9a7c1b11";
    let post = |d: gatehouse_epp::Draft| {
        let env = d.sign(&doctor, chrono::Utc::now());
        let r = reqwest::blocking::Client::new().post(app.submit_url()).json(&env).send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
        env["envelope_id"].as_str().unwrap().to_string()
    };
    let mut first = gatehouse_epp::Draft::new(&app.public_key, "lab-results", "Lab results are in.");
    first.conversation_id = Some(conv.into());
    first.payload_type = Some("lab-report".into());
    let first_id = post(first);
    let mut reply = gatehouse_epp::Draft::new(&app.public_key, "referrals", "Referral to cardiology.");
    reply.conversation_id = Some(conv.into());
    reply.in_reply_to = Some(first_id);
    reply.payload_type = Some("referral".into());
    reply.on_behalf_of = Some(gatehouse_epp::public_key_hex(&patient));
    post(reply);

    app.open_arrival("Referral to cardiology");
    app.wait_text("#inbox-detail", "Doctor, on behalf of Patient");
    app.click("#detail-conversation");
    app.wait_text("#conversation-thread", "Referral to cardiology");
    let thread = app.text("#conversation-thread");
    let (a, b) = (thread.find("Lab results are in").unwrap(), thread.find("Referral to cardiology").unwrap());
    assert!(a < b, "the reply follows what it answers: {thread}");
    assert!(thread.contains("lab-report") && thread.contains("referral"), "{thread}");
    assert!(thread.contains("Doctor, on behalf of Patient"), "{thread}");
    app.screenshot("conversation");

    app.click("#nav-settings");
    app.wait_text("#settings-key", &app.public_key);
    assert!(app.text("#settings-endpoint").contains(&format!("127.0.0.1:{}/epp/v1/submit", app.port)));
    app.wait("the QR code", || app.script("return document.querySelector('#identity-qr').src;").as_str().unwrap_or("").starts_with("data:image/svg+xml"));
    app.screenshot("settings");

    // How long refused submissions are kept: changed here, saved and audited.
    app.wait_text("#retention", "Receipts of refused submissions");
    app.type_into("#retention-receipt", "30");
    app.click("#retention-save");
    app.wait_text("#retention-msg", "refused receipts 30 days");
    let store = app.store();
    assert_eq!(store.retention().rejected_receipt_days, 30);
    assert!(store.audit_list(20).unwrap().iter().any(|a| a.action == "settings.retention"));
    app.type_into("#retention-audit", "99999");
    app.click("#retention-save");
    app.wait_text("#retention-msg", "use 0 to keep forever");
    app.script("document.querySelector('#retention').scrollIntoView(); return true;");
    app.screenshot("retention");
    assert_eq!(store.retention().audit_days, 365, "a refused change leaves the setting as it was");

    // Pausing the inbox closes its port; resuming opens it again.
    let health = format!("http://127.0.0.1:{}/health", app.port);
    app.click("#pause-toggle");
    app.wait_text("#inbox-status-pill", "Inbox paused");
    app.wait("the port to close", || reqwest::blocking::get(&health).is_err());
    app.click("#pause-toggle");
    app.wait_text("#inbox-status-pill", "Listening on");
    app.wait("the port to open", || reqwest::blocking::get(&health).is_ok());
}

/// What a script running in the window (an injected page, a rendering bug) gets when it
/// calls a command directly with a path or a program of its choosing.
#[test]
fn a_script_in_the_window_cannot_aim_commands_at_paths_or_programs() {
    let app = App::start();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written-by-the-page.json");
    let invoke = |cmd: &str, args: Value| {
        app.script(&format!(
            "return window.__TAURI_INTERNALS__.invoke({}, {}).then(r => ({{ok: r}}), e => ({{err: e}}));",
            serde_json::to_string(cmd).unwrap(),
            args
        ))
    };
    let r = invoke("export_json", json!({"kind": "audit", "path": target}));
    assert_eq!(r["err"]["code"], "FORBIDDEN_PATH", "{r}");
    assert!(!target.exists(), "nothing was written where the page pointed");
    let r = invoke("mail_import", json!({"path": "/etc/passwd"}));
    assert_eq!(r["err"]["code"], "FORBIDDEN_PATH", "{r}");
    let r = invoke("settings_set", json!({"settings": {"port": app.port, "uamp_port": app.uamp_port, "watch_dir": outside.path()}}));
    assert_eq!(r["err"]["code"], "FORBIDDEN_PATH", "{r}");
    // The page cannot open the dialog plugin itself either (only Gatehouse's own dialogs).
    let r = app.script("return window.__TAURI_INTERNALS__.invoke('plugin:dialog|open', {options: {}}).then(r => ({ok: r}), e => ({err: String(e)}));");
    assert!(r.get("err").is_some(), "{r}");
    // A program the page proposes is saved only after a native confirmation the page
    // cannot answer (tests/shell.rs checks what is asked). The dialog itself stays out of
    // this test: nothing here can answer it.
}

#[test]
fn a_decision_is_on_the_knock_shown_and_a_newer_one_stays_waiting() {
    let app = App::start();
    let stranger = gatehouse_epp::generate_signing_key();
    let key = gatehouse_epp::public_key_hex(&stranger);
    let (status, _) = app.send(&stranger, "weather", "Weather bot here: may I send you the morning forecast?");
    assert_eq!(status, 401);
    app.click("#nav-consent");
    app.wait_text(".consent-card", "morning forecast");
    // The button the user is about to press, on the card as it is drawn now.
    app.script("window.seenAllow = document.querySelector(\".consent-card button[data-decision='always_allow_scope']\"); return true;");

    // The sender asks again, for something else, before the click lands.
    let (status, _) = app.send(&stranger, "payments", "Now let me move money from your account.");
    assert_eq!(status, 401);
    // The click on what was shown (whether or not the card was redrawn meanwhile).
    app.script("window.seenAllow.click(); return true;");
    app.wait_text("#consent-notice", "knocked again since the prompt was shown");
    assert!(app.find_all("#consent-notice.warning").len() == 1, "the notice says nothing was decided as a warning");
    app.wait_text(".consent-card", "move money");
    app.screenshot("consent-knocked-again");

    // Nothing was decided: the sender is not trusted for either scope, and still waits.
    let store = app.store();
    assert!(store.trust_get(&key).unwrap().is_none(), "a click on the older knock let the sender in");
    let (status, receipt) = app.send(&stranger, "weather", "Forecast: rain.");
    assert_eq!((status, receipt["error"]["code"].as_str()), (401, Some("UNTRUSTED_SENDER")));
    // A decision on the card now shown is taken, for what it shows.
    app.wait_text(".consent-card", "Forecast: rain");
    app.click(".consent-card button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "Trusted for");
    let entry = store.trust_get(&key).unwrap().expect("trusted after the decision on the card shown");
    assert!(entry.policy.allowed_scopes.iter().any(|s| s == "weather"), "{:?}", entry.policy.allowed_scopes);
}
