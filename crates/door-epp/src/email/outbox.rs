//! Mail going out on an account: which receipts are mailed back (decided once, here), and
//! the sender that hands queued mail to the account's submission server. A mail leaves the
//! queue only once the server took it, or refused it for good; a server that cannot be
//! reached is tried again with backoff; a refused login waits for the user. With nothing
//! queued the sender sleeps until a mail is (no timer).

use std::sync::Arc;
use std::time::Duration;

use gatehouse_email::smtp::{self, MailReceipts};
use gatehouse_email::{Carrier, EmailError};
use gatehouse_epp::{ErrorCode, Receipt, ReceiptStatus};
use gatehouse_store::Store;

use super::{db, now, Follow};

/// Mails handed to the server per round.
const BATCH: usize = 50;
/// Connections to the submission server at once. A server takes one mail at a time on a
/// connection, writing it to disk before it answers (Exim: ~5 ms a mail); mail transfer
/// agents spread a queue over a few connections for that reason (Postfix up to 20 per
/// destination); 4 stays below the limits mail providers put on one client.
const CONNECTIONS: usize = 4;
/// Backoff while the server cannot be reached, doubling from the first to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(600));

/// The receipts that are mailed at all (an allow-list): an acceptance, a knock, and a
/// trusted sender's scope or policy refusal. Each comes only after the sender's
/// signature, freshness, replay and revocation were judged and passed, so the envelope is
/// the sender's own and this is its first arrival. Every other outcome (a replay, a
/// revoked key, an unsigned v1.1 field that failed, a flood, anything before the
/// signature) could be made by whoever relays a copy, and is never answered by mail.
fn answerable(receipt: &Receipt) -> bool {
    match (receipt.status, receipt.error.as_ref().map(|e| e.code)) {
        (ReceiptStatus::Accepted, _) => true,
        (_, Some(code)) => matches!(code, ErrorCode::UntrustedSender | ErrorCode::PolicyDenied),
        _ => false,
    }
}

/// What a receipt mail says, by outcome only: never text from the envelope or the mail
/// (a scope, a capability, an attestation's role), which the sender or a relay chose.
fn summary(receipt: &Receipt) -> &'static str {
    match (receipt.status, receipt.error.as_ref().map(|e| e.code)) {
        (ReceiptStatus::Accepted, _) if receipt.held_for_consent => "Your envelope was accepted and is held until the recipient looks at it.",
        (ReceiptStatus::Accepted, _) => "Your envelope was accepted.",
        (_, Some(ErrorCode::UntrustedSender)) => "Your envelope is waiting: the recipient has not let your key in yet.",
        (_, Some(ErrorCode::PolicyDenied)) => "Your envelope was refused: the recipient's policy for your key does not allow it (POLICY_DENIED).",
        _ => "Your envelope was refused.",
    }
}

/// Receipt mails already counted in this batch, beside what the store has counted: the
/// batch's arrivals are recorded together, after every mail was decided.
#[derive(Default)]
pub struct Budget {
    account: Option<u32>,
    senders: std::collections::HashMap<String, u32>,
    answered: std::collections::HashSet<(String, String)>,
}

/// The receipt mail for an envelope that came by mail (recipient, formatted message), or
/// why none is sent, in words the inbox shows. `answers` is set to the envelope it
/// answers when one is sent.
pub fn mail_back<'r>(
    store: &Store,
    f: &Follow,
    budget: &mut Budget,
    receipt: &'r Receipt,
    carrier: &Carrier,
    sender: Option<&'r str>,
) -> Result<(String, Vec<u8>), String> {
    let Some(out) = &f.account.smtp else { return Err("no outgoing (SMTP) server is set for this account".into()) };
    if f.smtp_password.is_none() {
        return Err("no password is kept for the outgoing server".into());
    }
    if f.account.receipts == MailReceipts::Off {
        return Err("receipts by mail are off for this account".into());
    }
    let (Some(sender), Some(envelope_id)) = (sender, receipt.envelope_id.as_deref()) else {
        return Err("the envelope did not verify, so who sent it is unknown: a receipt would go to whatever address the mail names".into());
    };
    if !answerable(receipt) {
        return Err(match receipt.error.as_ref().map(|e| e.code) {
            Some(ErrorCode::ReplayDetected) => "a replay: the envelope's first arrival was answered".into(),
            Some(ErrorCode::SenderRevoked) => "the sender's key is revoked".into(),
            Some(
                ErrorCode::InvalidFormat
                | ErrorCode::UnsupportedVersion
                | ErrorCode::WrongRecipient
                | ErrorCode::Expired
                | ErrorCode::InvalidSignature
                | ErrorCode::SizeExceeded
                | ErrorCode::InternalError,
            ) => "the envelope did not verify, so who sent it is unknown: a receipt would go to whatever address the mail names".into(),
            Some(c) => format!("{} is not answered by mail: anyone relaying a copy of the envelope could cause it", c.as_str()),
            None => "nothing to answer".into(),
        });
    }
    // Where it goes: an address bound to the sender in the user's own entries; only a
    // stranger's knock, when the user asked for strangers to be answered, goes to the
    // mail's From (never Reply-To), once.
    let trust = store.trust_get(sender).map_err(|e| e.to_string())?;
    let to = match &trust {
        Some(t) => t
            .facts
            .mail_to()
            .ok_or("no mail address of this sender's is in your trust registry (the From of the mail you let it in from, or a mailto: reply endpoint)")?,
        None if f.account.receipts != MailReceipts::Everyone => {
            return Err("the sender is not in your trust registry; receipts by mail go to strangers only if you allow it".into())
        }
        None => carrier.from.clone().ok_or("the mail names no sender to answer")?,
    };
    let key = (sender.to_string(), envelope_id.to_string());
    if budget.answered.contains(&key) || store.email_answered(sender, envelope_id).map_err(|e| e.to_string())? {
        return Err("this envelope was answered by mail already (on its first arrival)".into());
    }
    let since = chrono::Utc::now().timestamp_millis() - 3600 * 1000;
    let (account_sent, sender_sent) = store.email_answers_since(&f.name, sender, since).map_err(|e| e.to_string())?;
    let account_now = budget.account.get_or_insert(account_sent);
    let sender_now = budget.senders.entry(sender.to_string()).or_insert(sender_sent);
    let rate = f.account.receipt_rate;
    if *sender_now >= rate.per_sender_per_hour {
        return Err(format!("{} receipt mails went to this sender in the last hour (at most {})", sender_now, rate.per_sender_per_hour));
    }
    if *account_now >= rate.per_account_per_hour {
        return Err(format!("this account mailed {} receipts in the last hour (at most {})", account_now, rate.per_account_per_hour));
    }
    let json = serde_json::to_string_pretty(receipt).map_err(|e| e.to_string())?;
    let mail = smtp::receipt_reply(&out.from, &to, carrier, &json, summary(receipt)).map_err(|e| e.to_string())?;
    *account_now += 1;
    *sender_now += 1;
    budget.answered.insert(key);
    Ok(mail)
}

/// Sends a signed envelope (an answer to a sender whose reply endpoint is `mailto:`) by
/// mail at once: through the account `prefer` (the one the envelope being answered came
/// by) when it can send, else the first account that can. Returns what was done, in words.
pub async fn mail_envelope(mail: &[Follow], prefer: Option<&str>, to: &str, subject: &str, envelope: &serde_json::Value) -> Result<String, String> {
    let senders: Vec<_> = mail.iter().filter_map(|f| Some((f, f.account.smtp.as_ref()?, f.smtp_password.as_ref()?))).collect();
    let (f, out, password) = senders
        .iter()
        .find(|(f, ..)| Some(f.name.as_str()) == prefer)
        .or(senders.first())
        .copied()
        .ok_or("no mail account can send (none has an outgoing server with its password): add one to answer by mail")?;
    let json = serde_json::to_string_pretty(envelope).map_err(|e| e.to_string())?;
    let message = smtp::envelope_mail(&out.from, to, subject, &json).map_err(|e| e.to_string())?;
    smtp::send(out, f.account.certificate.as_deref(), password, to, &message).await.map_err(|e| e.to_string())?;
    Ok(format!("mailed to {to} through {} as {}", f.name, out.from))
}

/// Hands an account's queued mail to its submission server until `stop` resolves.
pub async fn deliver(store: Arc<Store>, f: Follow, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    // The service ends when any of its tasks does: an account with nothing to send waits.
    let (Some(out), Some(password)) = (f.account.smtp.clone(), f.smtp_password.clone()) else { return stop.await };
    let mut backoff = BACKOFF.0;
    // Connections kept for as long as mail keeps coming (each made by the first mail it
    // carries, made again when the server has closed it).
    let lanes: Vec<_> = (0..CONNECTIONS).map(|_| smtp::Outgoing::new(&out, f.account.certificate.as_deref(), &password)).collect();
    loop {
        let name = f.name.clone();
        let queued = match db(&store, move |s| s.email_outbox_queued(&name, BATCH)).await {
            Ok(q) => q,
            Err(e) => {
                tracing::error!(account = %f.name, error = %e, "email outbox");
                Vec::new()
            }
        };
        if queued.is_empty() {
            tokio::select! {
                _ = &mut stop => return,
                _ = f.wake.notified() => continue,
            }
        }
        // Mail i goes on connection i mod CONNECTIONS: a few mails use one connection.
        let mut shares: Vec<Vec<_>> = lanes.iter().map(|_| Vec::new()).collect();
        for (i, m) in queued.into_iter().enumerate() {
            if let Some(share) = shares.get_mut(i % CONNECTIONS) {
                share.push(m);
            }
        }
        let sent = lanes.iter().zip(shares).filter(|(_, share)| !share.is_empty()).map(|(lane, share)| send_share(&store, &f.name, lane, share));
        // A refused login outweighs an unreachable server: nothing is tried until the user acts.
        let stopped = futures_util::future::join_all(sent).await.into_iter().flatten().min();
        match stopped {
            None => backoff = BACKOFF.0,
            // A refused login: nothing is tried again until the user changes the account.
            Some(Stopped::LoginRefused) => return stop.await,
            Some(Stopped::Unreachable) => {
                tokio::select! {
                    _ = &mut stop => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(BACKOFF.1);
            }
        }
    }
}

/// Why a connection's share of a round stopped short (the rest waits), the weightier first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stopped {
    /// The server refused the login: nothing more until the user changes the account.
    LoginRefused,
    /// The server cannot be reached now: tried again after a backoff.
    Unreachable,
}

/// Sends one connection's share of a round, one mail after another, and records each
/// outcome; why it stopped short, if it did.
async fn send_share(
    store: &Arc<Store>,
    account: &str,
    outgoing: &Result<smtp::Outgoing, EmailError>,
    share: Vec<gatehouse_store::email::OutboxRow>,
) -> Option<Stopped> {
    for m in share {
        let sent = match outgoing {
            Ok(o) => o.send(&m.to_addr, &m.message).await,
            Err(e) => Err(EmailError::Invalid(e.to_string())),
        };
        let (error, give_up) = match &sent {
            Ok(()) => (None, false),
            Err(EmailError::Refused(_) | EmailError::Invalid(_)) => (sent.as_ref().err().map(ToString::to_string), true),
            Err(e) => (Some(e.to_string()), false),
        };
        let id = m.id;
        let _ = db(store, move |s| s.email_outbox_tried(id, error.as_deref(), give_up, &now())).await;
        match sent {
            Ok(()) => tracing::info!(account = %account, to = %m.to_addr, kind = %m.kind, "mail sent"),
            Err(e @ EmailError::LoginRefused { .. }) => {
                tracing::warn!(account = %account, error = %e, "the outgoing server refused the login");
                return Some(Stopped::LoginRefused);
            }
            Err(e) if !give_up => {
                tracing::warn!(account = %account, error = %e, "the outgoing server cannot be reached; trying again later");
                return Some(Stopped::Unreachable);
            }
            Err(e) => tracing::warn!(account = %account, error = %e, "a mail was refused for good"),
        }
    }
    None
}
