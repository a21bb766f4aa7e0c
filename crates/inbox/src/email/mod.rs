//! The email door (EPP 8.2): a mail account followed over IMAP. Every mail that carries an
//! envelope goes through the same pipeline as HTTP (transport `email`); only after its
//! receipt is committed is the mail filed (`Gatehouse/Accepted` or `Gatehouse/Rejected`,
//! moved where the server can, else copied and flagged; never deleted) and the account's
//! progress (UIDVALIDITY, last UID) written. A crash after the mail was recorded (its
//! receipt, its UID) files it by that outcome after a restart without submitting it again;
//! after a crash between the pipeline's commit and that record, the acceptance is found
//! and recorded for the mail. Either way nothing is accepted twice, and the mail is filed
//! as accepted. Mail without an envelope is never touched. The connection is kept with
//! IDLE (a server without it is asked every minute); a dropped one is made again with
//! backoff; a refused login waits for the user instead of retrying. Receipts go back by
//! mail through the account's outgoing server (`outbox`), queued in the same transaction
//! that records the arrival.

mod outbox;
pub use outbox::{deliver, mail_back, mail_envelope};

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use gatehouse_email::imap::{self, Session};
use gatehouse_email::{Account, Carrier, EmailError, Found};
use gatehouse_epp::{ErrorCode, ReceiptStatus};
use gatehouse_store::Store;

use crate::gate::hub::Inbox;

/// Mails handled per fetch; the next fetch follows at once.
const BATCH: usize = 200;
/// Servers end an IDLE after 30 minutes; it is renewed before that.
const IDLE: Duration = Duration::from_secs(25 * 60);
/// How often a server without IDLE is asked for new mail.
pub const POLL: Duration = Duration::from_secs(60);
/// Reconnect backoff, doubling from the first to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(300));

/// An account to follow, with the passwords the caller read from the keychain.
#[derive(Clone)]
pub struct Follow {
    pub name: String,
    pub account: Account,
    pub password: String,
    /// The outgoing server's password (kept for that server), when the account has one.
    pub smtp_password: Option<String>,
    /// Rung when a mail is queued to go out.
    pub wake: Arc<tokio::sync::Notify>,
    /// How often a server without IDLE is asked for new mail.
    pub poll: Duration,
}

impl Follow {
    pub fn new(name: String, account: Account, password: String, smtp_password: Option<String>) -> Self {
        Follow { name, account, password, smtp_password, wake: Arc::new(tokio::sync::Notify::new()), poll: POLL }
    }
}

fn now() -> String {
    gatehouse_epp::utc_string(Utc::now())
}

/// Store work off the async workers; a store that fails ends the connection like a
/// server that does (it is made again with backoff).
pub(crate) async fn db<T: Send + 'static>(store: &Arc<Store>, f: impl FnOnce(&Store) -> gatehouse_store::Result<T> + Send + 'static) -> Result<T, EmailError> {
    let s = store.clone();
    tokio::task::spawn_blocking(move || f(&s)).await.map_err(|e| EmailError::Imap(e.to_string()))?.map_err(|e| EmailError::Imap(format!("the store: {e}")))
}

async fn state(store: &Arc<Store>, name: &str, state: &'static str, error: Option<String>) {
    let n = name.to_string();
    let _ = db(store, move |s| s.email_state(&n, state, error.as_deref(), &now())).await;
}

/// Follows one account until `stop` resolves. Never returns early: a refused login is
/// shown as the account's state and waits for the user to change it.
pub async fn follow(inbox: Arc<Inbox>, store: Arc<Store>, f: Follow, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let mut backoff = BACKOFF.0;
    loop {
        state(&store, &f.name, "connecting", None).await;
        let r = tokio::select! {
            _ = &mut stop => return,
            r = run(&inbox, &store, &f) => r,
        };
        let e = match r {
            Ok(()) => continue,
            Err(e) => e,
        };
        tracing::warn!(account = %f.name, error = %e, "email account");
        state(&store, &f.name, "error", Some(e.to_string())).await;
        if !e.transient() {
            stop.await;
            return;
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF.1);
    }
}

/// One connection: read what is new, file it, wait with IDLE, again.
async fn run(inbox: &Arc<Inbox>, store: &Arc<Store>, f: &Follow) -> Result<(), EmailError> {
    let mut s = imap::connect(&f.account, &f.password).await?;
    let (accepted, rejected, can_move) = imap::prepare(&mut s).await?;
    let can_idle = s.capabilities().await?.has_str("IDLE");
    let mailbox = s.select(&f.account.folder).await?;
    let validity = mailbox.uid_validity.unwrap_or(0);
    let n = f.name.clone();
    let row = db(store, move |s| s.email_account(&n)).await?;
    // Another UIDVALIDITY means the UIDs name other mail now: read the folder again
    // (what was filed is gone from it; anything seen before is a replay).
    let mut last = match row {
        Some(r) if r.uid_validity == Some(validity) => r.last_uid,
        _ => 0,
    };
    state(store, &f.name, "connected", None).await;
    let mut first = true;
    loop {
        let batch = imap::fetch_after(&mut s, last, BATCH).await?;
        if batch.is_empty() {
            state(store, &f.name, if can_idle { "idle" } else { "polling" }, None).await;
            if can_idle {
                let (again, _) = imap::idle(s, IDLE).await?;
                s = again;
            } else {
                // A server without IDLE is asked again after a while; NOOP lets it tell
                // what arrived (the next fetch reads it either way).
                tokio::time::sleep(f.poll).await;
                s.noop().await?;
            }
            continue;
        }
        for a in batch {
            // Only the first mail after connecting can be one a crash left half done.
            let recovering = std::mem::take(&mut first);
            handle(inbox, store, f, &mut s, &a, (validity, recovering), (&accepted, &rejected, can_move)).await?;
            last = a.uid;
            let n = f.name.clone();
            db(store, move |s| s.email_progress(&n, validity, last, &now())).await?;
        }
    }
}

/// One mail: its envelope through the pipeline, the arrival recorded with the receipt
/// mail it gets back, then the mail filed by the outcome.
async fn handle(
    inbox: &Arc<Inbox>,
    store: &Arc<Store>,
    f: &Follow,
    s: &mut Session,
    a: &imap::Arrived,
    (validity, recovering): (u32, bool),
    (accepted, rejected, can_move): (&str, &str, bool),
) -> Result<(), EmailError> {
    // Recorded before but not filed (a crash in between): filed by what was decided then.
    let (name, uid) = (f.name.clone(), a.uid);
    if recovering {
        if let Some(was_accepted) = db(store, move |s| s.email_arrival_outcome(&name, validity, uid)).await? {
            return imap::file(s, a.uid, if was_accepted { accepted } else { rejected }, can_move).await;
        }
    }
    let (found, carrier) = match &a.bytes {
        None => (Found::Unusable(format!("a mail of {} bytes; at most {} are read", a.size, imap::MAX_MAIL_BYTES)), Carrier::default()),
        Some(raw) => gatehouse_email::find(raw),
    };
    let (receipt, envelope) = match found {
        Found::Nothing => return Ok(()),
        Found::Envelope(bytes) => match recovered(store, recovering, &bytes).await? {
            // Accepted from this very mail before a crash: recorded now, not submitted again.
            Some(receipt) => (receipt, Some(bytes)),
            None => (inbox.submit_async(&bytes, "email", Utc::now()).await.receipt, Some(bytes)),
        },
        Found::Unusable(why) => (inbox.submit_failure_async(ErrorCode::SizeExceeded, why, "email", Utc::now()).await.receipt, None),
    };
    let reply = {
        let (fo, c, r) = (f.clone(), carrier.clone(), receipt.clone());
        db(store, move |s| Ok(mail_back(s, &fo, &r, &c, envelope.as_deref()))).await?
    };
    let queued = reply.is_ok();
    let (receipt_id, name) = (receipt.receipt_id.clone(), f.name.clone());
    db(store, move |s| {
        s.email_arrival(
            &gatehouse_store::email::Arrival {
                receipt_id: &receipt_id,
                account: &name,
                uid_validity: validity,
                uid,
                from_addr: carrier.from.as_deref(),
                message_id: carrier.message_id.as_deref(),
                subject: carrier.subject.as_deref(),
                reply,
            },
            &now(),
        )
    })
    .await?;
    if queued {
        f.wake.notify_one();
    }
    let folder = if receipt.status == ReceiptStatus::Accepted { accepted } else { rejected };
    imap::file(s, a.uid, folder, can_move).await
}

/// The receipt of an acceptance this mail's envelope got before a crash cut its handling
/// short (committed by the pipeline, the mail not yet recorded), when `recovering`.
async fn recovered(store: &Arc<Store>, recovering: bool, envelope: &[u8]) -> Result<Option<gatehouse_epp::Receipt>, EmailError> {
    let id = serde_json::from_slice::<serde_json::Value>(envelope).ok().and_then(|v| v["envelope_id"].as_str().map(str::to_string));
    let Some(id) = id.filter(|_| recovering) else { return Ok(None) };
    let found = db(store, move |s| s.email_unrecorded_acceptance(&id)).await?;
    Ok(found.and_then(|v| serde_json::from_value(v).ok()))
}
