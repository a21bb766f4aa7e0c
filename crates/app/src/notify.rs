//! Notices that reach a person: when something new waits, each approver device whose
//! person asked for it is told by mail, through the gate's own mail account (the first
//! that can send), with a link to the approval page and never what the message says (a
//! sender's words do not travel to another address). At most so many an hour per person,
//! none in their quiet hours; the hourly count is what the outbox holds, so it holds
//! across the nodes of a team's gate. Each node tells of the knocks it took in.

use crate::Context;
use std::sync::Arc;

use chrono::{DateTime, NaiveTime, Utc};
use gatehouse_store::{Approver, ApproverMail, Store};

use crate::doors::email::Follow;
use crate::doors::Gate;
use crate::{Code, CommandError, Result};

/// What the owner sets for a device.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MailInput {
    pub email: String,
    /// At most this many an hour (default 4).
    pub per_hour: Option<u32>,
    /// No notices between two times, `HH:MM-HH:MM` (the gate's local time; may cross
    /// midnight).
    pub quiet: Option<String>,
}

const SUBJECT: &str = "Gatehouse: something waits for your decision";
/// A burst of knocks makes one notice.
const GATHER: std::time::Duration = std::time::Duration::from_secs(1);

fn invalid(m: impl Into<String>) -> CommandError {
    CommandError::new(Code::Invalid, m.into())
}

fn time(s: &str) -> Result<NaiveTime> {
    NaiveTime::parse_from_str(s.trim(), "%H:%M").map_err(|_| invalid(format!("{s:?} is not a time (HH:MM)")))
}

/// Sets (or, with None, stops) the notices for device `id`.
pub fn set_mail(ctx: &Context, id: &str, input: Option<MailInput>) -> Result<()> {
    let store: &Store = &ctx.store;
    let mail = match input {
        None => None,
        Some(m) => {
            let email = m.email.trim().to_string();
            let (local, domain) = email.split_once('@').unwrap_or_default();
            if local.is_empty() || domain.is_empty() || email.len() > 254 || email.chars().any(|c| c.is_control() || c.is_whitespace() || c == '<' || c == '>')
            {
                return Err(invalid(format!("{email:?} is not a mail address")));
            }
            let per_hour = m.per_hour.unwrap_or(4);
            if !(1..=60).contains(&per_hour) {
                return Err(invalid("notices an hour: 1 to 60"));
            }
            let (quiet_from, quiet_to) = match m.quiet.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
                None => (None, None),
                Some(q) => {
                    let (from, to) = q.split_once('-').ok_or_else(|| invalid(format!("quiet hours are HH:MM-HH:MM, not {q:?}")))?;
                    (Some(time(from)?.format("%H:%M").to_string()), Some(time(to)?.format("%H:%M").to_string()))
                }
            };
            Some(ApproverMail { email, per_hour, quiet_from, quiet_to })
        }
    };
    if !store.approver_mail_set(id, mail.as_ref())? {
        return Err(CommandError::new(Code::NotFound, format!("no approver {id}")));
    }
    store.audit("approver.mail", Some(id), &serde_json::to_value(&mail)?, &crate::now())?;
    Ok(())
}

/// Whether `at` (local time) is within `m`'s quiet hours.
fn quiet(m: &ApproverMail, at: NaiveTime) -> bool {
    let (Some(from), Some(to)) = (m.quiet_from.as_deref().and_then(|t| time(t).ok()), m.quiet_to.as_deref().and_then(|t| time(t).ok())) else { return false };
    if from <= to {
        from <= at && at < to
    } else {
        at >= from || at < to
    }
}

/// Who is told now: devices with notices on, out of their quiet hours (`local`), under
/// their hourly bound.
pub fn due(store: &Store, now: DateTime<Utc>, local: NaiveTime) -> Result<Vec<(Approver, ApproverMail)>> {
    let since = gatehouse_gate::clock::utc_string(now - chrono::Duration::hours(1));
    let mut out = Vec::new();
    for (a, m) in store.approver_mails()? {
        if !quiet(&m, local) && store.approver_notices_since(&m.email, &since)? < m.per_hour {
            out.push((a, m));
        }
    }
    Ok(out)
}

/// The notice's words: the gate's, with the page's address.
pub fn text(a: &Approver) -> String {
    let page = a.page_url.as_deref().unwrap_or("the gate's approval page");
    format!(
        "Something new waits for a decision on the gate, for {}.\n\nOpen {page} to see it and decide.\n\nWhat waits is not in this mail: it is shown only on the gate's page, to your device.\n",
        a.name
    )
}

/// Queues the notices due now on `f`'s account and wakes its sender; how many.
fn queue(store: &Store, f: &Follow, from: &str) -> Result<usize> {
    let now = Utc::now();
    let due = due(store, now, chrono::Local::now().time())?;
    for (a, m) in &due {
        let message = gatehouse_email::smtp::notice_mail(from, &m.email, SUBJECT, &text(a)).map_err(|e| invalid(e.to_string()))?;
        store.email_outbox_put(&f.name, "approver-notice", &m.email, &message, &gatehouse_gate::clock::utc_string(now))?;
    }
    if !due.is_empty() {
        f.wake.notify_one();
    }
    Ok(due.len())
}

/// Tells of what this node takes in that waits, until the gate goes.
pub async fn run(gate: Arc<Gate>, mail: Vec<Follow>) {
    let Some((f, from)) = mail.into_iter().find_map(|f| {
        let from = f.account.smtp.as_ref()?.from.clone();
        f.smtp_password.is_some().then_some((f, from))
    }) else {
        return;
    };
    let mut bursts = crate::waiting::arrivals(&gate).gathering(GATHER);
    while bursts.next().await {
        let (store, f, from) = (gate.store().clone(), f.clone(), from.clone());
        match tokio::task::spawn_blocking(move || queue(&store, &f, &from)).await {
            Ok(Ok(n)) if n > 0 => tracing::info!(notices = n, "approvers told by mail that something waits"),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e.message, "telling approvers by mail failed"),
            Err(e) => tracing::warn!(error = %e, "telling approvers by mail failed"),
        }
    }
}

/// What a desktop notification of an arrival says, naming who as every view does (`who`: the name the user
/// gave the sender, else its unnamed form). Notification servers read a little HTML in a
/// body, so what a sender chose (an agent's name) goes in escaped.
pub fn desktop_words(ev: &crate::serve::ArrivalEvent, who: Option<&str>, known: bool) -> String {
    let about = ev.scope.as_deref().map(|s| format!(" about “{s}”")).unwrap_or_default();
    let text = match (&ev.code, ev.transport.as_str()) {
        _ if ev.key_change => {
            format!("{} signed with a key you did not trust it with: its keys may have changed. Click to check them.", who.unwrap_or("A trusted agent"))
        }
        (_, "asop") => format!("{} is waiting for your decision before it acts. Click to answer.", who.unwrap_or("An agent")),
        // Trusted already: it asks about a scope it is not allowed.
        (Some(_), _) if known => {
            format!("{} asks to reach your AI{about}, which you have not allowed it. Click to decide.", who.unwrap_or("A sender you trust"))
        }
        (Some(_), _) => format!("{}, whom you have not approved, wants to reach your AI{about}. Click to decide.", who.unwrap_or("An unknown sender")),
        (None, _) => format!("A message from {}{about} is waiting for your consent. Click to decide.", who.unwrap_or("a sender you trust")),
    };
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_may_cross_midnight() {
        let m = |from: &str, to: &str| ApproverMail { email: "a@b".into(), per_hour: 4, quiet_from: Some(from.into()), quiet_to: Some(to.into()) };
        let t = |s: &str| time(s).unwrap();
        assert!(quiet(&m("22:00", "07:00"), t("23:30")) && quiet(&m("22:00", "07:00"), t("06:59")));
        assert!(!quiet(&m("22:00", "07:00"), t("07:00")) && !quiet(&m("22:00", "07:00"), t("12:00")));
        assert!(quiet(&m("12:00", "13:00"), t("12:30")) && !quiet(&m("12:00", "13:00"), t("13:00")));
        assert!(!quiet(&ApproverMail { quiet_from: None, quiet_to: None, ..m("1", "2") }, t("03:00")));
    }

    use crate::serve::ArrivalEvent;

    fn ev(code: Option<&str>, transport: &str, key_change: bool) -> ArrivalEvent {
        ArrivalEvent {
            receipt_id: "r".into(),
            status: crate::serve::Status::Rejected,
            code: code.map(String::from),
            sender: Some("ab".repeat(32)),
            scope: Some("support".into()),
            transport: transport.into(),
            needs_consent: true,
            key_change,
        }
    }

    #[test]
    fn a_notification_names_the_sender_as_the_window_does_and_escapes_it() {
        let knock = desktop_words(&ev(Some("UNTRUSTED_SENDER"), "http", false), Some("Sender abababab"), false);
        assert_eq!(knock, "Sender abababab, whom you have not approved, wants to reach your AI about “support”. Click to decide.");
        let held = desktop_words(&ev(None, "http", false), Some("Dr. <b>Lee</b> & co"), true);
        assert_eq!(held, "A message from Dr. &lt;b&gt;Lee&lt;/b&gt; &amp; co about “support” is waiting for your consent. Click to decide.");
        assert!(desktop_words(&ev(None, "uamp", true), Some("Alice"), true).starts_with("Alice signed with a key"));
        let new_scope = desktop_words(&ev(Some("POLICY_DENIED"), "http", false), Some("Alice"), true);
        assert_eq!(new_scope, "Alice asks to reach your AI about “support”, which you have not allowed it. Click to decide.");
    }
}
