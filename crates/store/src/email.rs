//! Mail accounts followed for envelopes: where each is (as the email crate describes it,
//! kept as JSON), how far it was read (UIDVALIDITY and the last UID handled, written only
//! after that message's envelope was committed and the mail filed), and its state as the
//! user sees it. Passwords are in the keychain, never here.

use crate::sql::{args, Db, Optional, Row};
use serde::Serialize;

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EmailAccountRow {
    pub name: String,
    /// host, port, security, user, folder.
    pub account: serde_json::Value,
    pub added_at: String,
    pub uid_validity: Option<u32>,
    pub last_uid: u32,
    /// new, connecting, connected, idle (waiting with IDLE), polling (a server without
    /// IDLE, asked again after a while), error, stopped
    pub state: String,
    pub last_error: Option<String>,
    pub last_sync: Option<String>,
    /// Mails in the folder not read yet, as of the last fetch.
    pub backlog: u32,
    /// Mails too large to read (over 4 MiB) whose structure shows an envelope part: left
    /// where they are, unread.
    pub left_large: u32,
}

fn row(r: &Row<'_>) -> Result<EmailAccountRow> {
    let account: String = r.get(1)?;
    Ok(EmailAccountRow {
        name: r.get(0)?,
        account: serde_json::from_str(&account).unwrap_or_default(),
        added_at: r.get(2)?,
        uid_validity: r.get(3)?,
        last_uid: r.get(4)?,
        state: r.get(5)?,
        last_error: r.get(6)?,
        last_sync: r.get(7)?,
        backlog: r.get(8)?,
        left_large: r.get(9)?,
    })
}

const COLUMNS: &str = "name, account, added_at, uid_validity, last_uid, state, last_error, last_sync, backlog, left_large";

impl Store {
    /// Adds an account, or changes where it is (which starts its reading over).
    pub fn email_account_put(&self, name: &str, account: &serde_json::Value, at: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO email_accounts (name, account, added_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET account = ?2, uid_validity = NULL, last_uid = 0, backlog = 0, left_large = 0, state = 'new', last_error = NULL",
            args![name, account.to_string(), at],
        )?;
        Ok(())
    }

    pub fn email_accounts(&self) -> Result<Vec<EmailAccountRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM email_accounts ORDER BY name"))?;
            let rows = stmt.query_map(args![], row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub fn email_account(&self, name: &str) -> Result<Option<EmailAccountRow>> {
        self.read(|c| c.query_row(&format!("SELECT {COLUMNS} FROM email_accounts WHERE name = ?1"), args![name], row).optional())
    }

    pub fn email_account_remove(&self, name: &str) -> Result<bool> {
        Ok(self.conn()?.execute("DELETE FROM email_accounts WHERE name = ?1", args![name])? > 0)
    }

    /// How far an account was read: everything up to `last_uid` under `uid_validity` is
    /// handled (committed and filed, or not an envelope mail); `backlog` mails wait after it;
    /// `left_large` more mails too large to read were left in place (a folder read again
    /// under a new UIDVALIDITY counts from nothing).
    pub fn email_progress(&self, name: &str, uid_validity: u32, last_uid: u32, backlog: u32, left_large: u32, at: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE email_accounts SET left_large = CASE WHEN uid_validity IS NOT DISTINCT FROM ?2 THEN left_large ELSE 0 END + ?6,
             uid_validity = ?2, last_uid = ?3, backlog = ?4, last_sync = ?5 WHERE name = ?1",
            args![name, uid_validity, last_uid, backlog, at, left_large],
        )?;
        Ok(())
    }

    pub fn email_state(&self, name: &str, state: &str, error: Option<&str>, at: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE email_accounts SET state = ?2, last_error = coalesce(?3, CASE WHEN ?2 = 'error' THEN last_error ELSE NULL END), last_sync = ?4 WHERE name = ?1",
            args![name, state, error, at],
        )?;
        Ok(())
    }
}

/// A mail waiting to go out, or gone.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct OutboxRow {
    pub id: i64,
    pub account: String,
    /// receipt, reply or envelope
    pub kind: String,
    pub receipt_id: Option<String>,
    pub to_addr: String,
    #[serde(skip)]
    pub message: Vec<u8>,
    /// queued, sent or failed (a server refused it for good)
    pub state: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}

fn outbox_row(r: &Row<'_>) -> Result<OutboxRow> {
    Ok(OutboxRow {
        id: r.get(0)?,
        account: r.get(1)?,
        kind: r.get(2)?,
        receipt_id: r.get(3)?,
        to_addr: r.get(4)?,
        message: r.get(5)?,
        state: r.get(6)?,
        attempts: r.get(7)?,
        last_error: r.get(8)?,
        created_at: r.get(9)?,
        sent_at: r.get(10)?,
    })
}

const OUTBOX: &str = "id, account, kind, receipt_id, to_addr, message, state, attempts, last_error, created_at, sent_at";

/// What an envelope mail said about itself (unverified) and whether its receipt went back.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EmailArrivalRow {
    pub receipt_id: String,
    pub account: String,
    pub from_addr: Option<String>,
    pub message_id: Option<String>,
    pub subject: Option<String>,
    /// The receipt mailed back: its outbox row (state queued, sent or failed).
    pub mailed_back: Option<OutboxRow>,
    /// Why the receipt was not mailed back, in words.
    pub not_mailed: Option<String>,
}

/// One arrival to record: the mail's own claims and what goes back.
pub struct Arrival<'a> {
    pub receipt_id: &'a str,
    pub account: &'a str,
    pub uid_validity: u32,
    pub uid: u32,
    pub from_addr: Option<&'a str>,
    pub message_id: Option<&'a str>,
    pub subject: Option<&'a str>,
    /// The receipt mail (recipient, formatted message), or why none is sent.
    pub reply: std::result::Result<(String, Vec<u8>), String>,
    /// The envelope a mailed receipt answers (sender, envelope id): it is never answered
    /// by mail again, and it counts against the rate of receipt mails.
    pub answers: Option<(&'a str, &'a str)>,
}

/// How long an answered envelope is remembered: longer than any envelope this inbox
/// takes stays valid (30 days by default), so a copy is never answered again.
const ANSWERED_KEPT_MS: i64 = 32 * 24 * 3600 * 1000;

fn put_outbox(c: &Db<'_>, account: &str, kind: &str, receipt_id: Option<&str>, to: &str, message: &[u8], at: &str) -> Result<i64> {
    let inserted_id = c.query_row(
        "INSERT INTO email_outbox (account, kind, receipt_id, to_addr, message, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        args![account, kind, receipt_id, to, message, at],
        |r| r.get::<i64>(0),
    )?;
    Ok(inserted_id)
}

impl Store {
    /// Records envelope mails and, in the same transaction, the receipt mails they get
    /// back: all are there, or none (a crash before sees the mails again). Returns how
    /// many receipt mails were queued.
    pub fn email_arrivals(&self, arrivals: &[Arrival<'_>], at: &str) -> Result<usize> {
        let now_ms = chrono::Utc::now().timestamp_millis();
        let mut c = self.conn()?;
        let tx = c.transaction()?;
        tx.prepare_cached("DELETE FROM email_answered WHERE at_ms < ?1")?.execute(args![now_ms - ANSWERED_KEPT_MS])?;
        let mut queued = 0;
        for a in arrivals {
            let (outbox, why) = match &a.reply {
                Ok((to, message)) => (Some(put_outbox(&tx.db(), a.account, "receipt", Some(a.receipt_id), to, message, at)?), None),
                Err(why) => (None, Some(why.as_str())),
            };
            queued += usize::from(outbox.is_some());
            if let (Some(_), Some((sender, envelope_id))) = (outbox, a.answers) {
                tx.prepare_cached("INSERT INTO email_answered (sender, envelope_id, account, at_ms) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING")?
                    .execute(args![sender, envelope_id, a.account, now_ms])?;
            }
            tx.prepare_cached(
                "INSERT INTO email_arrivals (receipt_id, account, uid_validity, uid, from_addr, message_id, subject, outbox_id, not_mailed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (receipt_id) DO UPDATE SET account = excluded.account, uid_validity = excluded.uid_validity,
                    uid = excluded.uid, from_addr = excluded.from_addr, message_id = excluded.message_id,
                    subject = excluded.subject, outbox_id = excluded.outbox_id, not_mailed = excluded.not_mailed",
            )?
            .execute(args![a.receipt_id, a.account, a.uid_validity, a.uid, a.from_addr, a.message_id, a.subject, outbox, why])?;
        }
        tx.commit()?;
        Ok(queued)
    }

    /// Whether a receipt for this envelope of this sender was mailed before (by any
    /// account): an envelope is answered by mail once, on its first arrival.
    pub fn email_answered(&self, sender: &str, envelope_id: &str) -> Result<bool> {
        self.read(|c| {
            Ok(c.query_row("SELECT 1 FROM email_answered WHERE sender = ?1 AND envelope_id = ?2", args![sender, envelope_id], |_| Ok(())).optional()?.is_some())
        })
    }

    /// Receipt mails queued since `since_ms`: by `account` in all, and to `sender` by any
    /// account.
    pub fn email_answers_since(&self, account: &str, sender: &str, since_ms: i64) -> Result<(u32, u32)> {
        self.read(|c| {
            let mine: u32 = c
                .prepare_cached("SELECT COUNT(*) FROM email_answered WHERE account = ?1 AND at_ms >= ?2")?
                .query_row(args![account, since_ms], |r| r.get(0))?;
            let theirs: u32 =
                c.prepare_cached("SELECT COUNT(*) FROM email_answered WHERE sender = ?1 AND at_ms >= ?2")?.query_row(args![sender, since_ms], |r| r.get(0))?;
            Ok((mine, theirs))
        })
    }

    pub fn email_arrival_get(&self, receipt_id: &str) -> Result<Option<EmailArrivalRow>> {
        self.read(|c| {
            let found = c
                .query_row(
                    "SELECT receipt_id, account, from_addr, message_id, subject, outbox_id, not_mailed FROM email_arrivals WHERE receipt_id = ?1",
                    args![receipt_id],
                    |r| Ok((r.get::<String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get::<Option<i64>>(5)?, r.get(6)?)),
                )
                .optional()?;
            let Some((receipt_id, account, from_addr, message_id, subject, outbox, not_mailed)) = found else { return Ok(None) };
            let mailed_back = match outbox {
                Some(id) => c.query_row(&format!("SELECT {OUTBOX} FROM email_outbox WHERE id = ?1"), args![id], outbox_row).optional()?,
                None => None,
            };
            Ok(Some(EmailArrivalRow { receipt_id, account, from_addr, message_id, subject, mailed_back, not_mailed }))
        })
    }

    /// Whether this mail (by its UID under that UIDVALIDITY) was handled before, and if so
    /// whether its envelope was accepted: after a crash between recording a mail and
    /// filing it, the mail is filed by that outcome instead of being submitted again.
    pub fn email_arrival_outcome(&self, account: &str, uid_validity: u32, uid: u32) -> Result<Option<bool>> {
        self.read(|c| {
            c.query_row(
                "SELECT r.status = 'accepted' FROM email_arrivals a LEFT JOIN receipts r ON r.receipt_id = a.receipt_id
                 WHERE a.account = ?1 AND a.uid_validity = ?2 AND a.uid = ?3 LIMIT 1",
                args![account, uid_validity, uid],
                |r| Ok(r.get::<Option<bool>>(0)?.unwrap_or(false)),
            )
            .optional()
        })
    }

    /// The acceptance of `envelope_id` by mail whose mail was never recorded: what a crash
    /// between the pipeline's commit and the arrival's record leaves. Only the newest mail
    /// receipts are looked at (a crash leaves at most a batch per account unrecorded).
    pub fn email_unrecorded_acceptance(&self, envelope_id: &str) -> Result<Option<serde_json::Value>> {
        self.read(|c| {
            let found: Option<String> = c
                .query_row(
                    "SELECT receipt FROM (SELECT receipt_id, envelope_id, status, receipt FROM receipts WHERE transport = 'email' ORDER BY seq DESC LIMIT 1024) r
                     WHERE r.envelope_id = ?1 AND r.status = 'accepted'
                       AND NOT EXISTS (SELECT 1 FROM email_arrivals a WHERE a.receipt_id = r.receipt_id)",
                    args![envelope_id],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(found.and_then(|t| serde_json::from_str(&t).ok()))
        })
    }

    /// Queues a mail (an answer or an envelope) on an account's outgoing server.
    pub fn email_outbox_put(&self, account: &str, kind: &str, to: &str, message: &[u8], at: &str) -> Result<i64> {
        put_outbox(&self.conn()?.db(), account, kind, None, to, message, at)
    }

    /// The oldest mails still to go out on an account.
    pub fn email_outbox_queued(&self, account: &str, limit: usize) -> Result<Vec<OutboxRow>> {
        self.read(|c| {
            let stmt = c.prepare_cached(&format!("SELECT {OUTBOX} FROM email_outbox WHERE account = ?1 AND state = 'queued' ORDER BY id LIMIT ?2"))?;
            let rows = stmt.query_map(args![account, limit as i64], outbox_row)?.collect::<Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    pub fn email_outbox_get(&self, id: i64) -> Result<Option<OutboxRow>> {
        self.read(|c| c.query_row(&format!("SELECT {OUTBOX} FROM email_outbox WHERE id = ?1"), args![id], outbox_row).optional())
    }

    /// What became of one try: sent; failed for good (`give_up`); or still queued with
    /// the error of this try.
    pub fn email_outbox_tried(&self, id: i64, error: Option<&str>, give_up: bool, at: &str) -> Result<()> {
        let state = match (error, give_up) {
            (None, _) => "sent",
            (Some(_), true) => "failed",
            (Some(_), false) => "queued",
        };
        self.conn()?.execute(
            "UPDATE email_outbox SET state = ?2, attempts = attempts + 1, last_error = ?3, sent_at = CASE WHEN ?2 = 'sent' THEN ?4 ELSE sent_at END WHERE id = ?1",
            args![id, state, error, at],
        )?;
        Ok(())
    }
}
