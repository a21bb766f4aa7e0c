//! Where an EPP envelope is in a mail (EPP 8.2): an attachment typed
//! `application/epp+json` or named `*.epp.json`, or else a body that is itself one
//! (a JSON object with the envelope's `version`, `sender`, `signature`). Mail with none of
//! these is not Gatehouse's and is left alone.

use mail_parser::{MessageParser, MimeHeaders as _, PartType};

/// An envelope larger than this is refused (with a receipt) without being read; the EPP
/// limit is applied again by the pipeline.
pub const MAX_ENVELOPE_BYTES: usize = 1024 * 1024 + 64 * 1024;

/// What a mail carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Not an envelope mail: left untouched.
    Nothing,
    /// The envelope's bytes, for the pipeline.
    Envelope(Vec<u8>),
    /// An envelope attachment that cannot be handed to the pipeline (why, in words).
    Unusable(String),
}

/// Context about the mail that carried it: the transport's own claims, unverified (the
/// envelope's key is the identity).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Carrier {
    pub from: Option<String>,
    /// Where the sender asked answers to go, when it is not From.
    pub reply_to: Option<String>,
    pub message_id: Option<String>,
    pub subject: Option<String>,
}

fn is_envelope_part(content_type: Option<(&str, Option<&str>)>, name: Option<&str>) -> bool {
    let typed = content_type.is_some_and(|(t, s)| t.eq_ignore_ascii_case("application") && s.is_some_and(|s| s.eq_ignore_ascii_case("epp+json")));
    let named = name.is_some_and(|n| n.to_ascii_lowercase().ends_with(".epp.json"));
    typed || named
}

/// Whether a body looks like an envelope (not a proof: the pipeline decides).
fn looks_like_envelope(text: &str) -> bool {
    let t = text.trim();
    t.starts_with('{') && t.ends_with('}') && ["\"version\"", "\"sender\"", "\"signature\""].iter().all(|k| t.contains(k))
}

/// Finds the envelope in a raw RFC 5322 message.
pub fn find(raw: &[u8]) -> (Found, Carrier) {
    let Some(msg) = MessageParser::default().parse(raw) else {
        return (Found::Nothing, Carrier::default());
    };
    let carrier = Carrier {
        from: msg.from().and_then(|f| f.first()).and_then(|a| a.address()).map(str::to_string),
        reply_to: msg.reply_to().and_then(|f| f.first()).and_then(|a| a.address()).map(str::to_string),
        message_id: msg.message_id().map(str::to_string),
        subject: msg.subject().map(str::to_string),
    };
    let mut bodies = Vec::new();
    for part in msg.parts.iter() {
        let ct = part.content_type().map(|c| (c.ctype(), c.subtype()));
        if is_envelope_part(ct, part.attachment_name()) {
            let bytes = part.contents();
            if bytes.len() > MAX_ENVELOPE_BYTES {
                return (Found::Unusable(format!("the envelope attachment is {} bytes; at most {MAX_ENVELOPE_BYTES} are read", bytes.len())), carrier);
            }
            return (Found::Envelope(bytes.to_vec()), carrier);
        }
        if let PartType::Text(t) = &part.body {
            bodies.push(t.as_ref());
        }
    }
    match bodies.into_iter().find(|b| looks_like_envelope(b)) {
        Some(b) if b.len() > MAX_ENVELOPE_BYTES => {
            (Found::Unusable(format!("the envelope in the body is {} bytes; at most {MAX_ENVELOPE_BYTES} are read", b.len())), carrier)
        }
        Some(b) => (Found::Envelope(b.trim().as_bytes().to_vec()), carrier),
        None => (Found::Nothing, carrier),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = r#"{"version":"1","sender":"ab","signature":"cd","payload":{}}"#;

    fn attached(ctype: &str, name: &str, body: &str) -> Vec<u8> {
        format!(
            "From: Clinic <agent@clinic.example>\r\nTo: me+gatehouse@example.com\r\nMessage-ID: <m1@clinic.example>\r\nSubject: Results\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n--b\r\nContent-Type: {ctype}\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\r\n{body}\r\n--b--\r\n"
        )
        .into_bytes()
    }

    #[test]
    fn an_attachment_by_type_or_by_name_is_the_envelope() {
        let (f, c) = find(&attached("application/epp+json", "x.json", ENV));
        assert_eq!(f, Found::Envelope(ENV.as_bytes().to_vec()));
        assert_eq!((c.from.as_deref(), c.message_id.as_deref()), (Some("agent@clinic.example"), Some("m1@clinic.example")));
        let (f, _) = find(&attached("application/octet-stream", "order.epp.json", ENV));
        assert_eq!(f, Found::Envelope(ENV.as_bytes().to_vec()));
    }

    #[test]
    fn a_body_that_is_an_envelope_counts_and_ordinary_mail_does_not() {
        let body = format!("From: a@b.example\r\nSubject: x\r\n\r\n{ENV}\r\n");
        assert_eq!(find(body.as_bytes()).0, Found::Envelope(ENV.as_bytes().to_vec()));
        let plain = b"From: a@b.example\r\nSubject: lunch?\r\n\r\nAre you free at noon? {\"version\": 2}\r\n";
        assert_eq!(find(plain).0, Found::Nothing);
        assert_eq!(find(b"\x00\x01 not mail at all").0, Found::Nothing);
    }

    #[test]
    fn an_oversize_attachment_is_refused_unread() {
        let big = format!("{{\"pad\":\"{}\"}}", "a".repeat(MAX_ENVELOPE_BYTES));
        let (f, _) = find(&attached("application/epp+json", "big.epp.json", &big));
        assert!(matches!(f, Found::Unusable(why) if why.contains("at most")));
    }
}
