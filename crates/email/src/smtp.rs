//! Mail going out (EPP 8.2): receipts mailed back to senders, answers to a sender whose
//! reply endpoint is `mailto:`, and envelopes sent by mail. One submission server per
//! account (implicit TLS, STARTTLS, or plain to this machine only, as for IMAP), with the
//! account's credentials. The messages are built here so every kind is formed one way.

use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};

use crate::{Carrier, EmailError};

/// How long one submission (connect, TLS, login, the message) may take.
const SUBMIT: Duration = Duration::from_secs(30);

/// The media type an envelope travels as; receipts use the same family.
pub const ENVELOPE_TYPE: &str = "application/epp+json";
pub const RECEIPT_TYPE: &str = "application/epp-receipt+json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmtpSecurity {
    /// TLS from the first byte (port 465).
    Tls,
    /// Plain first, then STARTTLS before anything else is said (port 587); a server that
    /// does not offer it is refused.
    StartTls,
    /// No TLS: only to a server on this machine.
    Plain,
}

/// Whose receipts go back by mail. A receipt mailed to whoever a mail claims to be from
/// tells that address this one is read; so strangers get none unless the user says so, and
/// a mail whose envelope did not verify never gets one (its From may be anyone's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailReceipts {
    /// Senders in the trust registry.
    #[default]
    Known,
    /// Also strangers whose signature verified (a knock is answered).
    Everyone,
    /// Nobody.
    Off,
}

/// How many receipt mails an account sends in an hour: to any one sender, and in all.
/// Past either, a receipt is kept and shown but not mailed (a sender that floods, or keys
/// made by the thousand under "everyone", cannot make the account a mail cannon).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptRate {
    pub per_sender_per_hour: u32,
    pub per_account_per_hour: u32,
}

impl Default for ReceiptRate {
    fn default() -> Self {
        ReceiptRate { per_sender_per_hour: 30, per_account_per_hour: 300 }
    }
}

/// The submission server mail goes out through; the password is in the keychain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub user: String,
    /// The address mail is sent from (the account's own).
    pub from: String,
}

impl Submission {
    pub fn check(&self) -> Result<(), EmailError> {
        if self.host.trim().is_empty() || self.user.trim().is_empty() {
            return Err(EmailError::Invalid("give the outgoing (SMTP) server and its user name".into()));
        }
        if self.security == SmtpSecurity::Plain && !gatehouse_http::is_loopback(&self.host) {
            return Err(EmailError::Invalid(format!(
                "{} is not this machine: use TLS or STARTTLS (a password must not cross a network in the clear)",
                self.host
            )));
        }
        mailbox(&self.from, "the address mail is sent from")?;
        Ok(())
    }
}

/// Whether an address is one a mail may be sent to or from.
pub fn mailbox(address: &str, what: &str) -> Result<Mailbox, EmailError> {
    address.trim().parse::<Mailbox>().map_err(|e| EmailError::Invalid(format!("{what} {address:?} is not a mail address: {e}")))
}

/// lettre's TLS settings for the server: the public authorities and `certificate`, the
/// account's own trusted certificate (PEM).
fn lettre_tls(s: &Submission, certificate: Option<&str>) -> Result<TlsParameters, EmailError> {
    let mut b = TlsParameters::builder(s.host.clone());
    if let Some(pem) = certificate {
        for der in crate::tls::certificates(pem)? {
            let c = lettre::transport::smtp::client::Certificate::from_der(der.to_vec())
                .map_err(|e| EmailError::Invalid(format!("the certificate to trust cannot be used: {e}")))?;
            b = b.add_root_certificate(c);
        }
    }
    b.build_rustls().map_err(|e| EmailError::Invalid(format!("{}: {e}", s.host)))
}

/// `certificate`: the account's own trusted certificate (PEM), besides the public authorities.
fn transport(s: &Submission, certificate: Option<&str>, password: &str) -> Result<AsyncSmtpTransport<Tokio1Executor>, EmailError> {
    s.check()?;
    let tls = || lettre_tls(s, certificate);
    let tls = match s.security {
        SmtpSecurity::Tls => Tls::Wrapper(tls()?),
        SmtpSecurity::StartTls => Tls::Required(tls()?),
        SmtpSecurity::Plain => Tls::None,
    };
    Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(s.host.clone())
        .port(s.port)
        .tls(tls)
        .credentials(Credentials::new(s.user.clone(), password.to_string()))
        .timeout(Some(SUBMIT))
        .build())
}

fn smtp_error(s: &Submission, e: lettre::transport::smtp::Error) -> EmailError {
    let at = format!("{}:{}", s.host, s.port);
    let text = e.to_string();
    // 535 and its relatives: the credentials, which retrying cannot fix.
    if e.is_permanent() && (text.contains("535") || text.contains("534") || text.to_ascii_lowercase().contains("authentication")) {
        return EmailError::LoginRefused { user: s.user.clone(), detail: text };
    }
    if e.is_permanent() {
        return EmailError::Refused(format!("the outgoing server {at} refused the mail: {text}"));
    }
    EmailError::Unreachable(at, crate::tls::tls_hint(&text))
}

/// Connects, logs in and says goodbye: what `test` and `add` ask before keeping anything.
pub async fn probe(s: &Submission, certificate: Option<&str>, password: &str) -> Result<(), EmailError> {
    let t = transport(s, certificate, password)?;
    match tokio::time::timeout(SUBMIT, t.test_connection()).await {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err(EmailError::Unreachable(format!("{}:{}", s.host, s.port), "the server did not answer as an SMTP server".into())),
        Ok(Err(e)) => Err(smtp_error(s, e)),
        Err(_) => Err(EmailError::Unreachable(format!("{}:{}", s.host, s.port), format!("no answer within {} s", SUBMIT.as_secs()))),
    }
}

/// An account's outgoing server, ready to send: the mails given to one are sent over one
/// connection, made on the first and made again when the server has closed it. The
/// connection is ours (lettre speaks SMTP over it) so that Nagle's algorithm is off: a
/// message and its closing `\r\n.\r\n` are two writes, and with Nagle on the second
/// waited for the server's delayed ACK, about 48 ms a mail. No NOOP is sent between mails
/// (Exim drops a connection after 10 commands that send nothing).
pub struct Outgoing {
    s: Submission,
    certificate: Option<String>,
    credentials: Credentials,
    conn: tokio::sync::Mutex<Option<AsyncSmtpConnection>>,
}

impl Outgoing {
    pub fn new(s: &Submission, certificate: Option<&str>, password: &str) -> Result<Outgoing, EmailError> {
        s.check()?;
        Ok(Outgoing {
            s: s.clone(),
            certificate: certificate.map(str::to_string),
            credentials: Credentials::new(s.user.clone(), password.to_string()),
            conn: tokio::sync::Mutex::new(None),
        })
    }

    fn unreachable(&self, why: String) -> EmailError {
        EmailError::Unreachable(format!("{}:{}", self.s.host, self.s.port), why)
    }

    /// Connects (TLS from the first byte, or STARTTLS before anything else is said) and
    /// logs in.
    async fn connect(&self) -> Result<AsyncSmtpConnection, EmailError> {
        let s = &self.s;
        let tcp = tokio::net::TcpStream::connect((s.host.as_str(), s.port)).await.map_err(|e| self.unreachable(e.to_string()))?;
        tcp.set_nodelay(true).map_err(|e| self.unreachable(e.to_string()))?;
        let hello = ClientId::default();
        let stream: Box<dyn AsyncTokioStream> = match s.security {
            SmtpSecurity::Tls => {
                let name = rustls::pki_types::ServerName::try_from(s.host.clone()).map_err(|e| EmailError::Invalid(format!("{}: {e}", s.host)))?;
                let tls = crate::tls::tls(self.certificate.as_deref())?
                    .connect(name, tcp)
                    .await
                    .map_err(|e| self.unreachable(format!("TLS: {}", crate::tls::tls_hint(&e.to_string()))))?;
                Box::new(TlsWire(tls))
            }
            SmtpSecurity::StartTls | SmtpSecurity::Plain => Box::new(tcp),
        };
        let mut conn = AsyncSmtpConnection::connect_with_transport(stream, &hello).await.map_err(|e| smtp_error(s, e))?;
        if s.security == SmtpSecurity::StartTls {
            if !conn.can_starttls() {
                return Err(EmailError::Refused(format!(
                    "{}:{} does not offer STARTTLS; the password is not sent without TLS: choose TLS (port 465)",
                    s.host, s.port
                )));
            }
            conn.starttls(lettre_tls(s, self.certificate.as_deref())?, &hello).await.map_err(|e| smtp_error(s, e))?;
        }
        conn.auth(&[Mechanism::Plain, Mechanism::Login], &self.credentials).await.map_err(|e| smtp_error(s, e))?;
        Ok(conn)
    }

    /// Sends one formatted message to `to`. A connection kept from an earlier mail that
    /// the server has closed meanwhile is made again once.
    pub async fn send(&self, to: &str, message: &[u8]) -> Result<(), EmailError> {
        let s = &self.s;
        let from = mailbox(&s.from, "the address mail is sent from")?;
        let to = mailbox(to, "the recipient")?;
        let envelope = lettre::address::Envelope::new(Some(from.email), vec![to.email]).map_err(|e| EmailError::Invalid(e.to_string()))?;
        let go = async {
            let mut kept = self.conn.lock().await;
            for fresh in [false, true] {
                let reused = kept.as_ref().is_some_and(|c| !c.has_broken()) && !fresh;
                if !reused {
                    *kept = Some(self.connect().await?);
                }
                let Some(conn) = kept.as_mut() else { continue };
                match conn.send(&envelope, message).await {
                    Ok(_) => return Ok(()),
                    // The server may have ended a connection kept since the last mail.
                    Err(e) if reused && !e.is_permanent() => *kept = None,
                    Err(e) => {
                        *kept = None;
                        return Err(smtp_error(s, e));
                    }
                }
            }
            Err(self.unreachable("the server closed the connection twice".into()))
        };
        tokio::time::timeout(SUBMIT, go).await.map_err(|_| self.unreachable(format!("no answer within {} s", SUBMIT.as_secs())))?
    }
}

/// TLS from the first byte, over a connection of ours.
#[derive(Debug)]
struct TlsWire(tokio_rustls::client::TlsStream<tokio::net::TcpStream>);

impl AsyncTokioStream for TlsWire {
    fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.0.get_ref().0.peer_addr()
    }
}

impl tokio::io::AsyncRead for TlsWire {
    fn poll_read(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for TlsWire {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// Sends one formatted message to `to`.
pub async fn send(s: &Submission, certificate: Option<&str>, password: &str, to: &str, message: &[u8]) -> Result<(), EmailError> {
    Outgoing::new(s, certificate, password)?.send(to, message).await
}

/// A Message-ID in the sender's own domain.
fn message_id(from: &Mailbox) -> String {
    format!("<{}@{}>", uuid::Uuid::new_v4(), from.email.domain())
}

fn built(b: Result<Message, lettre::error::Error>) -> Result<Vec<u8>, EmailError> {
    b.map(|m| m.formatted()).map_err(|e| EmailError::Invalid(format!("the mail could not be written: {e}")))
}

/// The receipt for an envelope that came by mail, as a reply to that mail: to its
/// Reply-To or From, In-Reply-To its Message-ID, the receipt JSON attached.
pub fn receipt_reply(from: &str, to_addr: &str, carrier: &Carrier, receipt_json: &str, summary: &str) -> Result<(String, Vec<u8>), EmailError> {
    let from = mailbox(from, "the address mail is sent from")?;
    let to = mailbox(to_addr, "the sender's address")?;
    // The subject is ours: the mail's own was written by whoever sent it, which a receipt
    // must not carry to another address.
    let mut b = Message::builder().from(from.clone()).to(to).subject("EPP receipt").message_id(Some(message_id(&from)));
    if let Some(id) = &carrier.message_id {
        let id = format!("<{}>", id.trim_matches(['<', '>']));
        b = b.in_reply_to(id.clone()).references(id);
    }
    let body = MultiPart::mixed().singlepart(SinglePart::plain(format!("{summary}\n\nThe EPP receipt is attached.\n"))).singlepart(
        Attachment::new("receipt.epp-receipt.json".into()).body(receipt_json.to_string(), ContentType::parse(RECEIPT_TYPE).expect("a valid media type")),
    );
    Ok((to_addr.to_string(), built(b.multipart(body))?))
}

/// An envelope sent by mail: a short note and the envelope attached as
/// `application/epp+json` (`envelope.epp.json`), which is how Gatehouse finds one.
pub fn envelope_mail(from: &str, to: &str, subject: &str, envelope_json: &str) -> Result<Vec<u8>, EmailError> {
    let from = mailbox(from, "the address mail is sent from")?;
    let to = mailbox(to, "the recipient")?;
    let body = MultiPart::mixed()
        .singlepart(SinglePart::plain(
            "This mail carries a signed EPP envelope (attached). The recipient's Gatehouse checks its signature; the mail itself is only the carrier.\n"
                .to_string(),
        ))
        .singlepart(
            Attachment::new("envelope.epp.json".into()).body(envelope_json.to_string(), ContentType::parse(ENVELOPE_TYPE).expect("a valid media type")),
        );
    built(Message::builder().from(from.clone()).to(to).subject(subject).message_id(Some(message_id(&from))).multipart(body))
}

/// A short plain-text notice of the gate's own words (to an approver): no attachment, and
/// nothing a sender wrote.
pub fn notice_mail(from: &str, to: &str, subject: &str, text: &str) -> Result<Vec<u8>, EmailError> {
    let from = mailbox(from, "the address mail is sent from")?;
    let to = mailbox(to, "the recipient")?;
    built(Message::builder().from(from.clone()).to(to).subject(subject).message_id(Some(message_id(&from))).singlepart(SinglePart::plain(text.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carrier() -> Carrier {
        Carrier { from: Some("agent@clinic.example".into()), reply_to: None, message_id: Some("env1@clinic.example".into()), subject: Some("results".into()) }
    }

    #[test]
    fn a_receipt_answers_the_mail_it_is_for_with_the_receipt_attached() {
        let (to, raw) = receipt_reply("me@home.example", "agent@clinic.example", &carrier(), r#"{"status":"accepted"}"#, "Accepted.").unwrap();
        assert_eq!(to, "agent@clinic.example");
        let text = String::from_utf8(raw).unwrap();
        assert!(text.contains("In-Reply-To: <env1@clinic.example>"), "{text}");
        assert!(text.contains("Subject: EPP receipt"), "the subject is ours, not the sender's: {text}");
        assert!(!text.contains("results"), "{text}");
        assert!(text.contains(RECEIPT_TYPE), "{text}");
        let m = mail_parser::MessageParser::default().parse(text.as_bytes()).unwrap();
        let receipt = m.attachments().next().unwrap();
        assert_eq!(receipt.contents(), br#"{"status":"accepted"}"#);
    }

    #[test]
    fn an_envelope_mail_is_found_again_by_the_reader() {
        let env = r#"{"version":"1","sender":"ab","signature":"cd","payload":{}}"#;
        let raw = envelope_mail("me@home.example", "clinic@example.org", "an order", env).unwrap();
        assert_eq!(crate::find(&raw).0, crate::Found::Envelope(env.as_bytes().to_vec()));
    }

    #[test]
    fn a_plain_connection_is_for_this_machine_only() {
        let s = Submission { host: "smtp.example.com".into(), port: 25, security: SmtpSecurity::Plain, user: "me".into(), from: "me@example.com".into() };
        assert!(matches!(s.check(), Err(EmailError::Invalid(w)) if w.contains("not this machine")));
        let bad_from = Submission { host: "127.0.0.1".into(), from: "not an address".into(), ..s };
        assert!(bad_from.check().is_err());
    }
}
