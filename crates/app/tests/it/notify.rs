//! Approvers told by mail, through a real Exim: a knock makes one notice to each person who
//! asked for them, with the page's address and none of the message's words; at most so
//! many an hour; none in quiet hours; none once the device is removed.

use crate::approvers::joined;
use crate::common::key;
use crate::email::{dovecot, follow_sending, following, sending};
use gatehouse_email::smtp::MailReceipts;
use gatehouse_email_testservers::Exim;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knock_tells_approvers_by_mail_within_their_bound_and_never_in_quiet_hours() {
    let (Some(dv), Some(ex)) = (dovecot(), Exim::start()) else { return };
    let inbox = following(follow_sending(&sending(&dv, &ex, MailReceipts::Known)), None).await;
    let (ana, bo) = (joined(&inbox, "Ana's phone").await, joined(&inbox, "Bo's phone").await);
    let notify = |id: &str, email: &str, per_hour: u32, quiet: Option<String>| {
        gatehouse_app::notify::set_mail(
            &crate::common::ctx(&inbox.store),
            id,
            Some(gatehouse_app::notify::MailInput { email: email.into(), per_hour: Some(per_hour), quiet }),
        )
        .unwrap()
    };
    notify(&ana.id, "ana@team.example", 2, None);
    // Bo is in his quiet hours now (the hour around this moment, the gate's local time).
    let now = chrono::Local::now().time();
    let around = format!("{}-{}", (now - chrono::Duration::minutes(30)).format("%H:%M"), (now + chrono::Duration::minutes(30)).format("%H:%M"));
    notify(&bo.id, "bo@team.example", 10, Some(around));
    assert!(gatehouse_app::notify::set_mail(
        &crate::common::ctx(&inbox.store),
        &bo.id,
        Some(gatehouse_app::notify::MailInput { email: "not an address".into(), per_hour: None, quiet: None })
    )
    .is_err());

    // Three strangers knock, a few seconds apart: Ana's bound is two an hour.
    for n in 0..3u8 {
        let knock = inbox.signed(&key(0x90 + n), "support", "SECRET WORDS of the stranger's prompt");
        assert_eq!(inbox.post_json(&knock).await.0, 401);
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    let mails = ex.wait_delivered(2);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(ex.delivered().len(), 2, "two for Ana (her bound), none for Bo (quiet)");
    for raw in &mails {
        let m = mail_parser::MessageParser::default().parse(raw).unwrap();
        assert_eq!(m.to().and_then(|t| t.first()).and_then(|a| a.address()), Some("ana@team.example"));
        assert_eq!(m.subject(), Some("Gatehouse: something waits for your decision"));
        let body = m.body_text(0).unwrap();
        assert!(body.contains(&format!("Open {}/approve to see it", inbox.url)), "{body}");
        assert!(!String::from_utf8_lossy(raw).contains("SECRET WORDS"), "the message's words stay on the gate");
    }

    // Removed: no more notices for that device.
    gatehouse_app::approvers::remove(&crate::common::ctx(&inbox.store), &ana.id).unwrap();
    assert!(gatehouse_app::notify::due(&inbox.store, chrono::Utc::now() + chrono::Duration::hours(2), now).unwrap().iter().all(|(a, _)| a.id != ana.id));
    inbox.stop().await;
}
