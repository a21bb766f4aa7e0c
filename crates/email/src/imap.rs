//! One IMAP account as Gatehouse follows it: connect (implicit TLS, STARTTLS, or plain on
//! loopback only: a password never crosses a network in the clear), log in, make the folders mail
//! is filed into, fetch what arrived after a UID, file a message, wait with IDLE.

use std::fmt::Debug;
use std::time::Duration;

use async_imap::extensions::idle::IdleResponse;
use futures_util::TryStreamExt as _;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::tls::{certificates, tls, tls_hint};
use crate::EmailError;

/// How long one connect (TCP, TLS, greeting, login) may take.
const CONNECT: Duration = Duration::from_secs(20);
/// A message larger than this is not downloaded: it is left where it is, never filed.
pub const MAX_MAIL_BYTES: u32 = 4 * 1024 * 1024;

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Debug> Io for T {}
pub type Session = async_imap::Session<Box<dyn Io>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Security {
    /// TLS from the first byte (port 993).
    Tls,
    /// Plain first, then STARTTLS before the login (port 143); a server that does not
    /// offer it is refused, never logged in to in the clear.
    StartTls,
    /// No TLS: only to a server on this machine.
    Plain,
}

/// Where and as whom; the password is kept elsewhere (the keychain).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub user: String,
    /// The folder envelope mail arrives in (a filter moves `+gatehouse` mail there).
    pub folder: String,
    /// Where mail goes out (receipts, answers, envelopes); none: nothing is mailed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp: Option<crate::smtp::Submission>,
    /// Whose receipts are mailed back.
    #[serde(default)]
    pub receipts: crate::smtp::MailReceipts,
    /// How many receipt mails go out per hour, per sender and in all.
    #[serde(default)]
    pub receipt_rate: crate::smtp::ReceiptRate,
    /// A certificate (PEM) trusted for this account's servers besides the public
    /// authorities: a self-hosted server's own. The server's name must still match it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
}

/// A login the server did not take: refused for good (the credentials), unless the server
/// says its authentication is down for now (RFC 5530's `[UNAVAILABLE]`, Dovecot's
/// "Temporary authentication failure"), which trying again later can mend: an account is
/// not left waiting for the user because the provider's login service hiccupped.
fn refused_login(user: &str, detail: String) -> EmailError {
    if detail.contains("[UNAVAILABLE]") {
        return EmailError::Imap(format!("the server could not check the login for {user} just now: {detail}"));
    }
    EmailError::LoginRefused { user: user.to_string(), detail }
}

impl From<async_imap::error::Error> for EmailError {
    fn from(e: async_imap::error::Error) -> Self {
        EmailError::Imap(e.to_string())
    }
}

impl Account {
    /// Checks what the user typed.
    pub fn check(&self) -> Result<(), EmailError> {
        if self.host.trim().is_empty() || self.user.trim().is_empty() || self.folder.trim().is_empty() {
            return Err(EmailError::Invalid("give the server, the user name and the folder to follow".into()));
        }
        if self.security == Security::Plain && !gatehouse_http::is_loopback(&self.host) {
            return Err(EmailError::Invalid(format!("{} is not this machine: use TLS (a password must not cross a network in the clear)", self.host)));
        }
        if let Some(pem) = &self.certificate {
            certificates(pem)?;
        }
        if let Some(s) = &self.smtp {
            s.check()?;
        }
        Ok(())
    }
}

async fn wrap(a: &Account, at: &str, tcp: TcpStream) -> Result<Box<dyn Io>, EmailError> {
    let name = rustls::pki_types::ServerName::try_from(a.host.clone()).map_err(|e| EmailError::Invalid(format!("{}: {e}", a.host)))?;
    let tls = tls(a.certificate.as_deref())?
        .connect(name, tcp)
        .await
        .map_err(|e| EmailError::Unreachable(at.to_string(), format!("TLS: {}", tls_hint(&e.to_string()))))?;
    Ok(Box::new(tls))
}

async fn greeting<T: Io>(client: &mut async_imap::Client<T>, at: &str) -> Result<(), EmailError> {
    client
        .read_response()
        .await
        .map_err(|e| EmailError::Imap(e.to_string()))?
        .ok_or_else(|| EmailError::Unreachable(at.to_string(), "closed before greeting".into()))?;
    Ok(())
}

/// Connects and logs in.
pub async fn connect(a: &Account, password: &str) -> Result<Session, EmailError> {
    a.check()?;
    let at = format!("{}:{}", a.host, a.port);
    let go = async {
        let tcp = TcpStream::connect((a.host.as_str(), a.port)).await.map_err(|e| EmailError::Unreachable(at.clone(), e.to_string()))?;
        let client = match a.security {
            Security::Plain => {
                let mut c = async_imap::Client::new(Box::new(tcp) as Box<dyn Io>);
                greeting(&mut c, &at).await?;
                c
            }
            Security::Tls => {
                let mut c = async_imap::Client::new(wrap(a, &at, tcp).await?);
                greeting(&mut c, &at).await?;
                c
            }
            Security::StartTls => {
                let mut plain = async_imap::Client::new(tcp);
                greeting(&mut plain, &at).await?;
                plain.run_command_and_check_ok("STARTTLS", None).await.map_err(|e| {
                    EmailError::Refused(format!("{at} does not offer STARTTLS ({e}); the password is not sent without TLS: choose TLS (port 993)"))
                })?;
                // Whatever the server sent after its OK is dropped with the plain client:
                // nothing said before TLS may be read as if it came over TLS.
                async_imap::Client::new(wrap(a, &at, plain.into_inner()).await?)
            }
        };
        client.login(&a.user, password).await.map_err(|(e, _)| refused_login(&a.user, e.to_string()))
    };
    tokio::time::timeout(CONNECT, go).await.map_err(|_| EmailError::Unreachable(at.clone(), format!("no answer within {} s", CONNECT.as_secs())))?
}

/// The server's folder separator, and the folders `Gatehouse<sep>Accepted` and
/// `Gatehouse<sep>Rejected` (made when missing). Returns their names and whether the
/// server can MOVE.
pub async fn prepare(s: &mut Session) -> Result<(String, String, bool), EmailError> {
    // `LIST "" ""` names the separator; some clients' parsers drop that reply, so the
    // separator of INBOX (every server has one) is asked as well.
    let mut sep = None;
    for pattern in ["", "INBOX"] {
        let names: Vec<_> = s.list(Some(""), Some(pattern)).await?.try_collect().await?;
        sep = names.iter().find_map(|n| n.delimiter().map(str::to_string));
        if sep.is_some() {
            break;
        }
    }
    let sep = sep.unwrap_or_else(|| "/".into());
    let accepted = format!("Gatehouse{sep}Accepted");
    let rejected = format!("Gatehouse{sep}Rejected");
    for f in [&accepted, &rejected] {
        let known: Vec<_> = s.list(Some(""), Some(f)).await?.try_collect().await?;
        if known.is_empty() {
            s.create(f).await?;
        }
    }
    let can_move = s.capabilities().await?.has_str("MOVE");
    Ok((accepted, rejected, can_move))
}

/// A message that arrived: its UID and its bytes (None when larger than the limit).
pub struct Arrived {
    pub uid: u32,
    pub size: u32,
    pub bytes: Option<Vec<u8>>,
    /// For a mail too large to download: whether its structure (read from the server,
    /// not downloaded) shows a part that may be an envelope.
    pub may_carry_envelope: bool,
}

/// Whether a mail's MIME structure has a part typed `application/epp+json` or named
/// `*.epp.json`: the only way an envelope is found in a mail (`crate::find`).
fn may_carry_envelope(b: &async_imap::imap_proto::BodyStructure<'_>) -> bool {
    use async_imap::imap_proto::BodyStructure as B;
    let (common, children): (_, &[B<'_>]) = match b {
        B::Basic { common, .. } | B::Text { common, .. } => (common, &[]),
        B::Message { common, body, .. } => (common, std::slice::from_ref(body.as_ref())),
        B::Multipart { common, bodies, .. } => (common, bodies.as_slice()),
    };
    let typed = common.ty.ty.eq_ignore_ascii_case("application") && common.ty.subtype.eq_ignore_ascii_case("epp+json");
    let params = common.ty.params.iter().flatten().chain(common.disposition.iter().flat_map(|d| d.params.iter().flatten()));
    let named = params
        .filter(|(k, _)| k.eq_ignore_ascii_case("name") || k.eq_ignore_ascii_case("filename"))
        .any(|(_, v)| v.to_ascii_lowercase().ends_with(".epp.json"));
    typed || named || children.iter().any(may_carry_envelope)
}

/// Up to `max` messages after `after_uid`, oldest first, whose bodies together stay
/// within `max_bytes` (the first is always taken), and how many more wait after them.
/// Sizes are asked first so a huge mail is never downloaded, and only for the mails of
/// this batch: the UIDs of the rest are all that is read of them (a backlog is not
/// described again at every batch).
pub async fn fetch_after(s: &mut Session, after_uid: u32, max: usize, max_bytes: u64) -> Result<(Vec<Arrived>, usize), EmailError> {
    // A server that said its last UID was u32::MAX has nothing after it (never a wrap to 0).
    let Some(next) = after_uid.checked_add(1) else { return Ok((Vec::new(), 0)) };
    let mut uids: Vec<u32> = s.uid_search(format!("UID {next}:*")).await?.into_iter().filter(|u| *u > after_uid).collect();
    uids.sort_unstable();
    let waiting = uids.len();
    uids.truncate(max);
    if uids.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let sized: Vec<(u32, u32)> = {
        let fetches: Vec<_> = s.uid_fetch(uid_set(&uids), "(UID RFC822.SIZE)").await?.try_collect().await?;
        let mut v: Vec<(u32, u32)> = fetches.iter().filter_map(|f| Some((f.uid?, f.size.unwrap_or(0)))).filter(|(u, _)| *u > after_uid).collect();
        v.sort_unstable();
        let mut total = 0u64;
        let within = v
            .iter()
            .position(|(_, size)| {
                // Mails not downloaded (too large) take no room.
                total = total.saturating_add(if *size <= MAX_MAIL_BYTES { u64::from(*size) } else { 0 });
                total > max_bytes
            })
            .unwrap_or(v.len());
        v.truncate(within.max(1));
        v
    };
    let wanted: Vec<String> = sized.iter().filter(|(_, size)| *size <= MAX_MAIL_BYTES).map(|(u, _)| u.to_string()).collect();
    // A mail too large to read is never downloaded; its structure says whether it may
    // carry an envelope (then it is counted for the user), without its bytes.
    let large: Vec<String> = sized.iter().filter(|(_, size)| *size > MAX_MAIL_BYTES).map(|(u, _)| u.to_string()).collect();
    let mut carrying = std::collections::HashSet::new();
    if !large.is_empty() {
        let fetches: Vec<_> = s.uid_fetch(large.join(","), "(UID BODYSTRUCTURE)").await?.try_collect().await?;
        carrying.extend(fetches.iter().filter(|f| f.bodystructure().is_some_and(may_carry_envelope)).filter_map(|f| f.uid));
    }
    let mut bodies = std::collections::HashMap::new();
    if !wanted.is_empty() {
        let fetches: Vec<_> = s.uid_fetch(wanted.join(","), "(UID BODY.PEEK[])").await?.try_collect().await?;
        for f in &fetches {
            if let (Some(uid), Some(b)) = (f.uid, f.body()) {
                bodies.insert(uid, b.to_vec());
            }
        }
    }
    // The server's FETCH may answer UIDs its SEARCH did not name: never a wrap.
    let more = waiting.saturating_sub(sized.len());
    Ok((sized.into_iter().map(|(uid, size)| Arrived { uid, size, bytes: bodies.remove(&uid), may_carry_envelope: carrying.contains(&uid) }).collect(), more))
}

/// A UID set in IMAP's form, runs written as ranges (`1:200,205`).
pub fn uid_set(uids: &[u32]) -> String {
    let mut sorted = uids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    // Runs of consecutive UIDs, as (first, last); a UID of u32::MAX ends its run.
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for uid in sorted {
        match runs.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(uid) => *last = uid,
            _ => runs.push((uid, uid)),
        }
    }
    runs.iter().map(|(a, b)| if a == b { a.to_string() } else { format!("{a}:{b}") }).collect::<Vec<_>>().join(",")
}

/// Files messages into `folder` with one command: moved where the server can, else copied
/// there and flagged in place (never deleted).
pub async fn file(s: &mut Session, uids: &[u32], folder: &str, can_move: bool) -> Result<(), EmailError> {
    if uids.is_empty() {
        return Ok(());
    }
    let set = uid_set(uids);
    if can_move {
        s.uid_mv(&set, folder).await?;
    } else {
        s.uid_copy(&set, folder).await?;
        let _: Vec<_> = s.uid_store(&set, "+FLAGS (\\Flagged)").await?.try_collect().await?;
    }
    Ok(())
}

/// Waits for the server to say something changed, at most `timeout` (servers drop an
/// IDLE after 30 minutes). Returns the session and whether it woke for news.
pub async fn idle(s: Session, timeout: Duration) -> Result<(Session, bool), EmailError> {
    let mut h = s.idle();
    h.init().await?;
    let (wait, _stop) = h.wait_with_timeout(timeout);
    let news = matches!(wait.await?, IdleResponse::NewData(_));
    Ok((h.done().await?, news))
}

#[cfg(test)]
mod tests {
    #[test]
    fn uid_sets_are_written_as_ranges() {
        assert_eq!(super::uid_set(&[5, 1, 2, 3, 9, 10, 3]), "1:3,5,9:10");
        assert_eq!(super::uid_set(&[7]), "7");
        assert_eq!(super::uid_set(&[]), "");
        assert_eq!(super::uid_set(&[u32::MAX - 1, u32::MAX]), format!("{}:{}", u32::MAX - 1, u32::MAX), "the last UID does not wrap");
    }

    /// Dovecot's answer while its auth process is busy or starting (seen in CI): the
    /// account is tried again, not left for the user; a wrong password still is.
    #[test]
    fn a_login_refused_for_now_is_tried_again_and_a_wrong_password_is_not() {
        let busy = super::refused_login(
            "alice",
            r#"no response: code: None, info: Some("[UNAVAILABLE] Temporary authentication failure. [vm:2026-11-27 03:09:32]")"#.into(),
        );
        assert!(busy.transient(), "{busy}");
        let wrong = super::refused_login("alice", r#"no response: code: None, info: Some("[AUTHENTICATIONFAILED] Authentication failed.")"#.into());
        assert!(!wrong.transient() && wrong.code() == gatehouse_code::Code::Unauthorized, "{wrong}");
    }
}
