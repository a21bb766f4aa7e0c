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
/// Backoff while the server cannot be reached, doubling from the first to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(600));

/// Codes given before the signature was checked: the envelope's sender is unknown, so the
/// mail's From is only a claim and a receipt there could go to anyone (backscatter).
fn verified(receipt: &Receipt) -> bool {
    !matches!(
        receipt.error.as_ref().map(|e| e.code),
        Some(
            ErrorCode::InvalidFormat
                | ErrorCode::UnsupportedVersion
                | ErrorCode::WrongRecipient
                | ErrorCode::Expired
                | ErrorCode::InvalidSignature
                | ErrorCode::SizeExceeded
                | ErrorCode::InternalError
        )
    )
}

/// The receipt mail for an envelope that came by mail (recipient, formatted message), or
/// why none is sent, in words the inbox shows.
pub fn mail_back(store: &Store, f: &Follow, receipt: &Receipt, carrier: &Carrier, envelope: Option<&[u8]>) -> Result<(String, Vec<u8>), String> {
    let Some(out) = &f.account.smtp else { return Err("no outgoing (SMTP) server is set for this account".into()) };
    if f.smtp_password.is_none() {
        return Err("no password is kept for the outgoing server".into());
    }
    if f.account.receipts == MailReceipts::Off {
        return Err("receipts by mail are off for this account".into());
    }
    if !verified(receipt) {
        return Err("the envelope did not verify, so who sent the mail is unknown: a receipt would go to whatever address the mail names".into());
    }
    match receipt.error.as_ref().map(|e| e.code) {
        Some(ErrorCode::SenderRevoked) => return Err("the sender's key is revoked".into()),
        // Anyone can mail a copy of someone's envelope with their own From: answering
        // replays would let them send mail from this account to any address. The
        // envelope's first arrival was answered.
        Some(ErrorCode::ReplayDetected) => return Err("a replay: the envelope's first arrival was answered".into()),
        _ => {}
    }
    let sender = envelope.and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok()).and_then(|v| v["sender"].as_str().map(str::to_string));
    let known = match &sender {
        Some(k) => store.trust_get(k).map_err(|e| e.to_string())?.is_some(),
        None => false,
    };
    if !known && f.account.receipts == MailReceipts::Known {
        return Err("the sender is not in your trust registry; receipts by mail go to strangers only if you allow it".into());
    }
    let summary = match (&receipt.status, &receipt.error) {
        (ReceiptStatus::Accepted, _) if receipt.held_for_consent => "Your envelope was accepted and is held until the recipient looks at it.".to_string(),
        (ReceiptStatus::Accepted, _) => "Your envelope was accepted.".to_string(),
        (_, Some(e)) if e.code == ErrorCode::UntrustedSender => "Your envelope is waiting: the recipient has not let your key in yet.".to_string(),
        (_, Some(e)) => format!("Your envelope was rejected: {} ({}).", e.message, e.code.as_str()),
        (_, None) => "Your envelope was rejected.".to_string(),
    };
    let json = serde_json::to_string_pretty(receipt).map_err(|e| e.to_string())?;
    smtp::receipt_reply(&out.from, carrier, &json, &summary).map_err(|e| e.to_string())
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
        let mut wait = None;
        // One connection for the round (opened by the first mail).
        let outgoing = smtp::Outgoing::new(&out, f.account.certificate.as_deref(), &password);
        for m in queued {
            let sent = match &outgoing {
                Ok(o) => o.send(&m.to_addr, &m.message).await,
                Err(e) => Err(EmailError::Invalid(e.to_string())),
            };
            let (error, give_up) = match &sent {
                Ok(()) => (None, false),
                Err(EmailError::Refused(_) | EmailError::Invalid(_)) => (sent.as_ref().err().map(ToString::to_string), true),
                Err(e) => (Some(e.to_string()), false),
            };
            let id = m.id;
            let err = error.clone();
            let _ = db(&store, move |s| s.email_outbox_tried(id, err.as_deref(), give_up, &now())).await;
            match sent {
                Ok(()) => tracing::info!(account = %f.name, to = %m.to_addr, kind = %m.kind, "mail sent"),
                Err(e @ EmailError::LoginRefused { .. }) => {
                    tracing::warn!(account = %f.name, error = %e, "the outgoing server refused the login");
                    wait = Some(None);
                    break;
                }
                Err(e) if !give_up => {
                    tracing::warn!(account = %f.name, error = %e, "the outgoing server cannot be reached; trying again later");
                    wait = Some(Some(backoff));
                    break;
                }
                Err(e) => tracing::warn!(account = %f.name, error = %e, "a mail was refused for good"),
            }
        }
        match wait {
            None => backoff = BACKOFF.0,
            // A refused login: nothing is tried again until the user changes the account.
            Some(None) => return stop.await,
            Some(Some(d)) => {
                tokio::select! {
                    _ = &mut stop => return,
                    _ = tokio::time::sleep(d) => {}
                }
                backoff = (backoff * 2).min(BACKOFF.1);
            }
        }
    }
}
