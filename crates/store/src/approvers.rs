//! Approvers: the devices (a member's desktop, a phone) that may decide what waits, each
//! with a key of its own, registered through a one-time invitation. What a device may do
//! is read from here on every request, so a device removed on one node is refused at
//! once by every node of a team's gate.

use crate::open::Tx;
use crate::seal::{Judged, APPROVERS, APPROVER_MAIL, INVITES};
use crate::sql::{args, Optional};
use crate::*;

/// A registered approver device.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Approver {
    pub id: String,
    pub name: String,
    /// Its public key (P-256, SEC1 uncompressed, base64url without padding).
    pub public_key: String,
    pub added_at: String,
    pub last_seen: Option<String>,
    /// The approval page's address as its invitation gave it (where a notice points).
    #[serde(default)]
    pub page_url: Option<String>,
}

/// Where and how often a device's person is told by mail that something waits.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ApproverMail {
    pub email: String,
    /// At most this many notices an hour.
    pub per_hour: u32,
    /// No notices between these times (HH:MM, the gate's local time), when both are set.
    pub quiet_from: Option<String>,
    pub quiet_to: Option<String>,
}

fn approver(r: &crate::sql::Row<'_>) -> Result<Approver> {
    Ok(Approver { id: r.get(0)?, name: r.get(1)?, public_key: r.get(2)?, added_at: r.get(3)?, last_seen: r.get(4)?, page_url: r.get(5)? })
}

const APPROVER: &str = "SELECT id, name, public_key, added_at, last_seen, page_url FROM approvers";

/// Why an invitation could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InviteRefusal {
    /// No invitation has this code, or it was used, or it ran out.
    Unknown,
    /// The key is already registered (as another device).
    KeyTaken,
}

/// Whether an invitation's sealed row (`seal::INVITES`' columns) can still be taken.
fn open_invite(cols: &[Option<String>], now_ms: i64) -> bool {
    let expires = cols.get(2).and_then(|c| c.as_deref()).and_then(|e| e.parse::<i64>().ok()).unwrap_or(0);
    cols.get(3).is_some_and(Option::is_none) && expires > now_ms
}

impl Store {
    /// Keeps an invitation by its code's hash (the code itself is shown once, never kept).
    pub fn approver_invite_add(&self, code_sha256: &str, name: &str, created_at: &str, expires_ms: i64, page_url: &str) -> Result<()> {
        self.sealed_write(|tx| {
            tx.execute("DELETE FROM approver_invites WHERE expires_ms < ?1 AND used_by IS NULL", args![expires_ms - 86_400_000])?;
            tx.execute(
                "INSERT INTO approver_invites (code_sha256, name, created_at, expires_ms, page_url) VALUES (?1, ?2, ?3, ?4, ?5)",
                args![code_sha256, name, created_at, expires_ms, page_url],
            )?;
            Ok(())
        })
    }

    /// Whether an invitation whose code hashes to `code_sha256` can still be taken.
    pub fn approver_invite_open(&self, code_sha256: &str, now_ms: i64) -> Result<bool> {
        self.read(|c| {
            c.snapshot(|db| {
                // Only an invitation the gate sealed (one added outside Gatehouse enrolls nobody).
                let (judged, row) = self.judge(db, INVITES, code_sha256)?;
                Ok(judged == Judged::Sealed && row.is_some_and(|cols| open_invite(&cols, now_ms)))
            })
        })
    }

    /// Takes the invitation whose code hashes to `code_sha256` (once, before it runs out)
    /// and registers the device, in one transaction: two devices racing for one code (on
    /// two nodes) register one.
    pub fn approver_join(&self, code_sha256: &str, now_ms: i64, device: &Approver) -> Result<std::result::Result<Approver, InviteRefusal>> {
        self.sealed_write(|tx| self.join_in(tx, code_sha256, now_ms, device))
    }

    fn join_in(&self, tx: &Tx<'_>, code_sha256: &str, now_ms: i64, device: &Approver) -> Result<std::result::Result<Approver, InviteRefusal>> {
        if self.judge(&tx.db(), INVITES, code_sha256)?.0 != Judged::Sealed {
            return Ok(Err(InviteRefusal::Unknown));
        }
        let invited: Option<(String, Option<String>)> = tx
            .query_row(
                "UPDATE approver_invites SET used_by = ?3 WHERE code_sha256 = ?1 AND used_by IS NULL AND expires_ms > ?2 RETURNING name, page_url",
                args![code_sha256, now_ms, device.id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((invited_as, page_url)) = invited else { return Ok(Err(InviteRefusal::Unknown)) };
        let taken = tx.query_row("SELECT count(*) FROM approvers WHERE public_key = ?1", args![device.public_key], |r| r.get::<i64>(0))? > 0;
        if taken {
            return Ok(Err(InviteRefusal::KeyTaken));
        }
        // The device is named by whoever invited it, never by itself: a joining device
        // cannot pass for another in a vote.
        let name = invited_as;
        tx.execute(
            "INSERT INTO approvers (id, name, public_key, added_at, page_url) VALUES (?1, ?2, ?3, ?4, ?5)",
            args![device.id, name, device.public_key, device.added_at, page_url],
        )?;
        Ok(Ok(Approver { name, page_url, ..device.clone() }))
    }

    /// The device, if the gate enrolled it (a row added or changed outside Gatehouse is
    /// no device: its requests are refused, its votes not counted).
    pub fn approver(&self, id: &str) -> Result<Option<Approver>> {
        self.read(|c| {
            c.snapshot(|db| {
                if self.judge(db, APPROVERS, id)?.0 != Judged::Sealed {
                    return Ok(None);
                }
                db.query_row(&format!("{APPROVER} WHERE id = ?1"), args![id], approver).optional()
            })
        })
    }

    /// Every device the gate enrolled.
    pub fn approvers(&self) -> Result<Vec<Approver>> {
        self.read(|c| {
            c.snapshot(|db| {
                let sealed = self.sealed_ids(db, APPROVERS)?;
                db.query_map(&format!("{APPROVER} ORDER BY added_at, id"), args![], approver)?
                    .filter(|a| a.as_ref().map_or(true, |a| sealed.contains(&a.id)))
                    .collect()
            })
        })
    }

    /// Whether it was there.
    pub fn approver_remove(&self, id: &str) -> Result<bool> {
        self.sealed_write(|tx| {
            tx.execute("DELETE FROM approver_nonces WHERE approver_id = ?1", args![id])?;
            tx.execute("DELETE FROM approver_mail WHERE approver_id = ?1", args![id])?;
            // Its votes on what is still undecided are withdrawn with it: a removed device no
            // longer counts towards any quorum (votes that decided stay, as the record).
            tx.execute(
                "DELETE FROM quorum_votes WHERE approver_id = ?1
                 AND EXISTS (SELECT 1 FROM quorum_items i WHERE i.item = quorum_votes.item AND i.digest = quorum_votes.digest AND i.decided IS NULL)",
                args![id],
            )?;
            Ok(tx.execute("DELETE FROM approvers WHERE id = ?1", args![id])? > 0)
        })
    }

    /// Whether it was there (as the gate enrolled it).
    pub fn approver_rename(&self, id: &str, name: &str) -> Result<bool> {
        self.sealed_write(|tx| {
            if self.judge(&tx.db(), APPROVERS, id)?.0 != Judged::Sealed {
                return Ok(false);
            }
            Ok(tx.execute("UPDATE approvers SET name = ?2 WHERE id = ?1", args![id, name])? > 0)
        })
    }

    /// Records a signed request's nonce for its device; false if the device used it
    /// before (a replay). Nonces are kept until their request could no longer be fresh.
    pub fn approver_nonce_use(&self, id: &str, nonce: &str, now_ms: i64, expires_ms: i64, seen_at: &str) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM approver_nonces WHERE approver_id = ?1 AND expires_ms < ?2", args![id, now_ms])?;
        let fresh = tx.execute(
            "INSERT INTO approver_nonces (approver_id, nonce, expires_ms) VALUES (?1, ?2, ?3) ON CONFLICT (approver_id, nonce) DO NOTHING",
            args![id, nonce, expires_ms],
        )? == 1;
        tx.execute("UPDATE approvers SET last_seen = ?2 WHERE id = ?1", args![id, seen_at])?;
        tx.commit()?;
        Ok(fresh)
    }

    /// Notes that device `id` is looking (its live view is open).
    pub fn approver_seen(&self, id: &str, seen_at: &str) -> Result<()> {
        self.conn()?.execute("UPDATE approvers SET last_seen = ?2 WHERE id = ?1", args![id, seen_at])?;
        Ok(())
    }

    /// Sets (or, with None, stops) the mail notices of a device; whether it is there.
    pub fn approver_mail_set(&self, id: &str, mail: Option<&ApproverMail>) -> Result<bool> {
        self.sealed_write(|tx| {
            if self.judge(&tx.db(), APPROVERS, id)?.0 != Judged::Sealed {
                return Ok(false);
            }
            tx.execute("DELETE FROM approver_mail WHERE approver_id = ?1", args![id])?;
            if let Some(m) = mail {
                tx.execute(
                    "INSERT INTO approver_mail (approver_id, email, per_hour, quiet_from, quiet_to) VALUES (?1, ?2, ?3, ?4, ?5)",
                    args![id, m.email, i64::from(m.per_hour), m.quiet_from, m.quiet_to],
                )?;
            }
            Ok(true)
        })
    }

    /// Every enrolled device whose person gets mail notices, with how (both as sealed:
    /// an address put in outside Gatehouse is told nothing).
    pub fn approver_mails(&self) -> Result<Vec<(Approver, ApproverMail)>> {
        self.read(|c| {
            c.snapshot(|db| {
                let devices = self.sealed_ids(db, APPROVERS)?;
                let mails = self.sealed_ids(db, APPROVER_MAIL)?;
                let all = db.query_map(
                    "SELECT a.id, a.name, a.public_key, a.added_at, a.last_seen, a.page_url, m.email, m.per_hour, m.quiet_from, m.quiet_to
                     FROM approvers a JOIN approver_mail m ON m.approver_id = a.id ORDER BY a.added_at, a.id",
                    args![],
                    |r| {
                        let mail = ApproverMail {
                            email: r.get(6)?,
                            per_hour: u32::try_from(r.get::<i64>(7)?).unwrap_or(0),
                            quiet_from: r.get(8)?,
                            quiet_to: r.get(9)?,
                        };
                        Ok((approver(r)?, mail))
                    },
                )?;
                all.filter(|m| m.as_ref().map_or(true, |(a, _)| devices.contains(&a.id) && mails.contains(&a.id))).collect()
            })
        })
    }

    /// Notices mailed to `email` since `since` (RFC 3339): the hourly bound counts what the
    /// outbox holds, at whichever node it was queued.
    pub fn approver_notices_since(&self, email: &str, since: &str) -> Result<u32> {
        let n: i64 = self.read(|c| {
            c.query_row("SELECT count(*) FROM email_outbox WHERE kind = 'approver-notice' AND to_addr = ?1 AND created_at >= ?2", args![email, since], |r| {
                r.get(0)
            })
        })?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }
}
