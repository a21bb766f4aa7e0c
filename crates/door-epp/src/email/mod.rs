//! The email door (EPP 8.2): a mail account followed over IMAP. Every mail that carries an
//! envelope goes through the same pipeline as HTTP (transport `email`); only after its
//! receipt is committed is the mail filed (`Gatehouse/Accepted` or `Gatehouse/Rejected`,
//! moved where the server can, else copied and flagged; never deleted) and the account's
//! progress (UIDVALIDITY, last UID) written. A crash after the mail was recorded (its
//! receipt, its UID) files it by that outcome after a restart without submitting it again;
//! after a crash between the pipeline's commit and that record, the acceptance is found
//! and recorded for the mail. Either way nothing is accepted twice, and the mail is filed
//! as accepted. Mail without an envelope is never touched, nor is mail too large to read
//! (over 4 MiB: left where it is; counted when its structure shows an envelope part). The connection is kept with
//! IDLE (a server without it is asked every minute); a dropped one is made again with
//! backoff; a refused login waits for the user instead of retrying. Receipts go back by
//! mail through the account's outgoing server (`outbox`), queued in the same transaction
//! that records the arrival.

mod outbox;
pub use outbox::{deliver, mail_back, mail_envelope};

use crate::pipeline::Submit as _;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use gatehouse_email::imap;
use gatehouse_email::{Account, Carrier, EmailError, Found};
use gatehouse_epp::{ErrorCode, ReceiptStatus};
use gatehouse_store::Store;

use gatehouse_gate::state::Gate;

/// Mails handled per fetch, and the bytes their bodies may take together; the next fetch
/// follows at once. A batch's envelopes go through the pipeline together (sharing its
/// commits), its arrivals are recorded in one transaction and its mails filed with one
/// command per folder. A crash can leave a whole batch half done: the store looks for
/// unrecorded acceptances among more recent receipts than a batch holds.
const BATCH: usize = 200;
const BATCH_BYTES: u64 = 32 * 1024 * 1024;
/// Envelopes of a batch in the pipeline at once.
const SUBMITTING: usize = 64;
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
pub async fn follow(inbox: Arc<Gate>, store: Arc<Store>, f: Follow, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let mut backoff = BACKOFF.0;
    loop {
        state(&store, &f.name, "connecting", None).await;
        let mut connected = false;
        let r = tokio::select! {
            _ = &mut stop => return,
            r = run(&inbox, &store, &f, &mut connected) => r,
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
        let wait = next_wait(&mut backoff, connected);
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// How long to wait before connecting again: the backoff doubles while connecting fails,
/// and starts over after a connection that worked (a server restarted once a day is not
/// waited for as long as one that has been down for an hour).
fn next_wait(backoff: &mut Duration, connected: bool) -> Duration {
    if connected {
        *backoff = BACKOFF.0;
    }
    let wait = *backoff;
    *backoff = (*backoff * 2).min(BACKOFF.1);
    wait
}

/// One connection: read what is new, file it, wait with IDLE, again.
async fn run(inbox: &Arc<Gate>, store: &Arc<Store>, f: &Follow, connected: &mut bool) -> Result<(), EmailError> {
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
    *connected = true;
    let mut first = true;
    loop {
        let (batch, more) = imap::fetch_after(&mut s, last, BATCH, BATCH_BYTES).await?;
        let Some(newest) = batch.last().map(|a| a.uid) else {
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
        };
        // Only the first batch after connecting can hold mail a crash left half done.
        let recovering = std::mem::take(&mut first);
        let (outcomes, left_large) = handle(inbox, store, f, batch, validity, recovering).await?;
        let (ok, refused): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(|(_, accepted)| *accepted);
        imap::file(&mut s, &ok.iter().map(|(uid, _)| *uid).collect::<Vec<_>>(), &accepted, can_move).await?;
        imap::file(&mut s, &refused.iter().map(|(uid, _)| *uid).collect::<Vec<_>>(), &rejected, can_move).await?;
        last = newest;
        let n = f.name.clone();
        let more = u32::try_from(more).unwrap_or(u32::MAX);
        db(store, move |s| s.email_progress(&n, validity, last, more, left_large, &now())).await?;
    }
}

/// What became of one mail before it is filed.
enum Decided {
    /// No envelope in it: left where it is.
    Leave,
    /// Recorded before a crash: filed by what was decided then (accepted or not).
    File(bool),
    /// Through the pipeline now: recorded with the receipt mail it gets back, then filed.
    /// `sender` is the key the envelope names (it is only trusted where the receipt says
    /// the signature verified).
    Record { receipt: Box<gatehouse_epp::Receipt>, carrier: Carrier, sender: Option<String> },
}

/// A batch of mails: their envelopes through the pipeline, the arrivals recorded with the
/// receipt mails they get back (one transaction). Returns the mails to file, by UID, and
/// whether each was accepted; and how many mails too large to read may carry an envelope.
async fn handle(
    inbox: &Arc<Gate>,
    store: &Arc<Store>,
    f: &Follow,
    batch: Vec<imap::Arrived>,
    validity: u32,
    recovering: bool,
) -> Result<(Vec<(u32, bool)>, u32), EmailError> {
    use futures_util::{StreamExt as _, TryStreamExt as _};
    // A mail too large to read is the user's, whatever it holds: it is left where it is,
    // never moved or answered; one whose structure may hold an envelope is counted, so
    // the user is told.
    let left_large = batch.iter().filter(|a| a.bytes.is_none() && a.may_carry_envelope).count();
    // Reading up to 32 MiB of MIME, and each envelope's names, is not work for an async
    // worker; each envelope is read for them once.
    let read: Vec<Mail> = tokio::task::spawn_blocking(move || {
        batch
            .into_iter()
            .map(|a| {
                let (found, carrier) = match &a.bytes {
                    None => (Found::Nothing, Carrier::default()),
                    Some(raw) => gatehouse_email::find(raw),
                };
                let names = match &found {
                    Found::Envelope(b) => Names::of(b),
                    _ => Names::default(),
                };
                Mail { uid: a.uid, found, carrier, names }
            })
            .collect()
    })
    .await
    .map_err(|e| EmailError::Imap(e.to_string()))?;
    // Copies of one envelope in a batch go through in mail order: the first mail's is
    // accepted and a later copy (under any From) is the replay, never the other way round.
    let mut seen = std::collections::HashSet::new();
    let (first, copies): (Vec<_>, Vec<_>) = read.into_iter().partition(|m| m.names.envelope_id.clone().is_none_or(|id| seen.insert(id)));
    let mut decided: Vec<(u32, Decided)> = Vec::new();
    // A copy never takes over an acceptance found unrecorded: that acceptance is its
    // first mail's, just made (or made before a crash); the copy is a replay.
    for (part, copy) in [(first, false), (copies, true)] {
        let done: Vec<(u32, Decided)> = futures_util::stream::iter(part)
            .map(|m| async move { Ok::<_, EmailError>((m.uid, decide(inbox, store, &f.name, m, validity, (recovering, recovering && !copy)).await?)) })
            .buffered(SUBMITTING)
            .try_collect()
            .await?;
        decided.extend(done);
    }
    decided.sort_by_key(|(uid, _)| *uid);
    let mut filing = Vec::with_capacity(decided.len());
    let mut records = Vec::new();
    for (uid, d) in decided {
        match d {
            Decided::Leave => {}
            Decided::File(accepted) => filing.push((uid, accepted)),
            Decided::Record { receipt, carrier, sender } => {
                filing.push((uid, receipt.status == ReceiptStatus::Accepted));
                records.push((uid, receipt, carrier, sender));
            }
        }
    }
    let left_large = u32::try_from(left_large).unwrap_or(u32::MAX);
    if records.is_empty() {
        return Ok((filing, left_large));
    }
    let fo = f.clone();
    let queued = db(store, move |s| {
        let mut budget = outbox::Budget::default();
        let replies: Vec<_> = records.iter().map(|(_, r, c, sender)| mail_back(s, &fo, &mut budget, r, c, sender.as_deref())).collect();
        let arrivals: Vec<_> = records
            .iter()
            .zip(replies)
            .map(|((uid, r, c, sender), reply)| gatehouse_store::email::Arrival {
                answers: reply.as_ref().ok().and(sender.as_deref().zip(r.envelope_id.as_deref())),
                receipt_id: &r.receipt_id,
                account: &fo.name,
                uid_validity: validity,
                uid: *uid,
                from_addr: c.from.as_deref(),
                message_id: c.message_id.as_deref(),
                subject: c.subject.as_deref(),
                reply,
            })
            .collect();
        s.email_arrivals(&arrivals, &now())
    })
    .await?;
    if queued > 0 {
        f.wake.notify_one();
    }
    Ok((filing, left_large))
}

/// One mail: recorded before (when recovering), without an envelope, or through the pipeline.
async fn decide(
    inbox: &Arc<Gate>,
    store: &Arc<Store>,
    account: &str,
    Mail { uid, found, carrier, names }: Mail,
    validity: u32,
    (recovering, may_take_over): (bool, bool),
) -> Result<Decided, EmailError> {
    if recovering {
        let name = account.to_string();
        if let Some(was_accepted) = db(store, move |s| s.email_arrival_outcome(&name, validity, uid)).await? {
            return Ok(Decided::File(was_accepted));
        }
    }
    let (receipt, sender) = match found {
        Found::Nothing => return Ok(Decided::Leave),
        Found::Envelope(bytes) => match recovered(store, may_take_over, names.envelope_id).await? {
            // Accepted from this very mail before a crash: recorded now, not submitted again.
            Some(receipt) => (receipt, names.sender),
            None => {
                let outcome = inbox.submit_async(&bytes, "email", gatehouse_gate::clock::now()).await;
                // Nothing could be committed (the gate's database did not answer; HTTP
                // would say 503): the mail stays where it is and is read again, never
                // filed or answered as refused.
                if outcome.http_status() == 503 {
                    return Err(EmailError::Imap("the store did not answer; the mail is read again once it does".into()));
                }
                (outcome.receipt, names.sender)
            }
        },
        // An envelope part too large to be one: the mail is an envelope mail, refused.
        Found::Unusable(why) => (inbox.submit_failure_async(ErrorCode::SizeExceeded, why, "email", gatehouse_gate::clock::now()).await.receipt, None),
    };
    Ok(Decided::Record { receipt: Box::new(receipt), carrier, sender })
}

/// One mail of a batch, read.
struct Mail {
    uid: u32,
    found: Found,
    carrier: Carrier,
    names: Names,
}

/// What an envelope names, read before the pipeline judges it (claims until then): its
/// id, which orders copies of one envelope in a batch, and its sender key as the registry
/// writes it, trusted only where the receipt says the signature verified.
#[derive(Default)]
struct Names {
    envelope_id: Option<String>,
    sender: Option<String>,
}

impl Names {
    fn of(envelope: &[u8]) -> Names {
        // Only the two names are kept; the rest (the payload) is skipped, not built.
        #[derive(serde::Deserialize)]
        struct Raw<'a> {
            #[serde(borrow)]
            envelope_id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            sender: Option<&'a serde_json::value::RawValue>,
        }
        let Ok(raw) = serde_json::from_slice::<Raw>(envelope) else { return Names::default() };
        let text = |v: Option<&serde_json::value::RawValue>| v.and_then(|v| serde_json::from_str::<String>(v.get()).ok());
        Names { envelope_id: text(raw.envelope_id), sender: text(raw.sender).as_deref().map(gatehouse_store::sender_key) }
    }
}

/// The receipt of an acceptance this mail's envelope got before a crash cut its handling
/// short (committed by the pipeline, the mail not yet recorded), when `recovering`.
async fn recovered(store: &Arc<Store>, recovering: bool, envelope_id: Option<String>) -> Result<Option<gatehouse_epp::Receipt>, EmailError> {
    let Some(id) = envelope_id.filter(|_| recovering) else { return Ok(None) };
    let found = db(store, move |s| s.email_unrecorded_acceptance(&id)).await?;
    Ok(found.and_then(|v| serde_json::from_value(v).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_is_read_for_its_id_and_sender_only_as_text() {
        let key = "AB".repeat(32);
        let n = Names::of(format!(r#"{{"payload":{{"prompt":"x"}},"envelope_id":"id-\u0031","sender":"{key}"}}"#).as_bytes());
        assert_eq!((n.envelope_id.as_deref(), n.sender), (Some("id-1"), Some(gatehouse_store::sender_key(&key))));
        let n = Names::of(br#"{"envelope_id":7,"sender":["a"]}"#);
        assert_eq!((n.envelope_id, n.sender), (None, None));
        assert!(Names::of(b"not json").envelope_id.is_none());
    }

    #[test]
    fn the_reconnect_backoff_doubles_while_failing_and_starts_over_after_a_connection() {
        let mut b = BACKOFF.0;
        let waits: Vec<u64> = (0..4).map(|_| next_wait(&mut b, false).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8]);
        assert_eq!(next_wait(&mut b, true), BACKOFF.0, "a connection that worked starts the backoff over");
        assert_eq!(next_wait(&mut b, false).as_secs(), 2);
        for _ in 0..20 {
            next_wait(&mut b, false);
        }
        assert_eq!(next_wait(&mut b, false), BACKOFF.1);
    }
}
