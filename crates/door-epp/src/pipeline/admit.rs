//! Steps 8–10 as EPP says them: the gate decides on the registry and keeps the record
//! ([`gatehouse_gate::Gate::accept`]); this door adds the checks only it can make (the
//! v1.1 fields no signature covers, a trust entry's capability limit) and words each
//! verdict as an EPP receipt.

use gatehouse_epp::{Envelope, ErrorCode, Receipt, Rejection};
use gatehouse_gate::{Arrival, Refusal, Why, Words};
use gatehouse_store::TrustEntry;

/// Why this door's own checks refuse an envelope.
pub(crate) struct EppRefusal {
    pub(super) code: ErrorCode,
    message: String,
}

impl EppRefusal {
    fn new(code: ErrorCode, message: String) -> Self {
        EppRefusal { code, message }
    }
}

/// What an EPP refusal is, in no door's words.
pub(crate) fn outcome_of(code: ErrorCode) -> gatehouse_code::Outcome {
    use gatehouse_code::Outcome;
    match code {
        ErrorCode::InvalidFormat | ErrorCode::UnsupportedVersion | ErrorCode::IntegrityMismatch => Outcome::Malformed,
        ErrorCode::InvalidSignature | ErrorCode::ProvenanceInvalid => Outcome::Unproven,
        ErrorCode::WrongRecipient => Outcome::WrongRecipient,
        ErrorCode::Expired => Outcome::Stale,
        ErrorCode::ReplayDetected => Outcome::Replay,
        // Said of a block too; the gate names which it is where it decided.
        ErrorCode::UntrustedSender => Outcome::Knock,
        ErrorCode::PolicyDenied => Outcome::NotAllowed,
        ErrorCode::SizeExceeded => Outcome::TooLarge,
        ErrorCode::RateLimited => Outcome::RateLimited,
        ErrorCode::InternalError => Outcome::Internal,
        ErrorCode::SenderRevoked => Outcome::Revoked,
    }
}

/// One verified envelope at the gate: what only EPP reads of it, and EPP's words.
pub(super) struct EppDoor<'a> {
    pub(super) env: &'a Envelope,
    pub(super) unsigned: &'a Unsigned,
}

impl gatehouse_gate::Door for EppDoor<'_> {
    type Answer = Receipt;

    fn accepted(&self, a: &Arrival<'_>, executor: &str, held: bool) -> Words<Receipt> {
        let receipt = Receipt::accepted(a.kept.id.clone(), a.received_at.to_string(), a.receipt_id.to_string(), executor.to_string(), held);
        Words { code: None, message: None, receipt: serde_json::to_value(&receipt).expect("receipts serialise"), answer: receipt, keep: true }
    }

    fn outcome(&self, r: &EppRefusal) -> gatehouse_code::Outcome {
        outcome_of(r.code)
    }

    fn refused(&self, a: &Arrival<'_>, why: &Why<EppRefusal>) -> Words<Receipt> {
        let (code, message) = match why {
            Why::Knock => (
                ErrorCode::UntrustedSender,
                format!("sender {}… is not in this inbox's trust registry; the owner has been asked", a.sender.chars().take(16).collect::<String>()),
            ),
            Why::Refused(Refusal::Blocked) => (ErrorCode::UntrustedSender, "sender is blocked by the owner of this inbox".into()),
            Why::Refused(Refusal::Revoked(reason)) => {
                let why = if reason.is_empty() { String::new() } else { format!(": {reason}") };
                (ErrorCode::SenderRevoked, format!("this sender's key was revoked by the owner of this inbox{why}"))
            }
            Why::Refused(Refusal::Door(r)) => (r.code, r.message.clone()),
            Why::Refused(Refusal::Scope(s)) => (ErrorCode::PolicyDenied, format!("scope {s:?} is not allowed for this sender")),
            Why::Refused(Refusal::Delegation) => (ErrorCode::PolicyDenied, "this sender may not send delegated envelopes".into()),
            Why::Refused(Refusal::Size { size, limit }) => (ErrorCode::SizeExceeded, format!("envelope is {size} bytes; this sender's limit is {limit}")),
            Why::Reserved(s) => (ErrorCode::InvalidFormat, format!("scope \"{s}\" is reserved for Gatehouse's own agents and sites")),
            Why::Replay => (ErrorCode::ReplayDetected, "this nonce has been used before".into()),
            Why::RateLimited { window, limit, retry_after_secs } => {
                (ErrorCode::RateLimited, format!("this sender may send {limit} envelopes per {window}; try again in {retry_after_secs} s"))
            }
            Why::Unsettled => (ErrorCode::InternalError, "the trust registry kept changing while this envelope was being stored; send it again".into()),
            Why::Executor(m) => (ErrorCode::InternalError, m.clone()),
            Why::Store(e) => (ErrorCode::InternalError, format!("could not store the envelope: {e}")),
        };
        let rejection = Rejection::new(code, message).with_envelope_id(Some(self.env.envelope_id.clone()));
        let receipt = Receipt::rejected(&rejection, a.received_at.to_string(), a.receipt_id.to_string());
        Words {
            code: Some(code.as_str().to_string()),
            message: Some(rejection.message),
            receipt: serde_json::to_value(&receipt).expect("receipts serialise"),
            answer: receipt,
            keep: true,
        }
    }
}

/// An envelope's EPP v1.1 fields, read and checked once: what they claim, or why they are
/// refused (malformed, an integrity hash that does not match, a forged attestation).
pub(super) type Unsigned = Result<gatehouse_epp::v11::Extensions, Rejection>;

/// What only the EPP door can check, at the gate's places for it: the v1.1 fields, which
/// no signature covers (claims: a malformed one refuses and never knocks), and a trust
/// entry's limit on the capabilities an envelope declares.
impl gatehouse_gate::Checks for EppDoor<'_> {
    type Refusal = EppRefusal;
    fn claims(&self) -> Result<(), EppRefusal> {
        self.unsigned.as_ref().map(|_| ()).map_err(|r| EppRefusal::new(r.code, r.message.clone()))
    }
    fn limits(&self, entry: &TrustEntry) -> Result<(), EppRefusal> {
        match (entry.facts.capabilities(), self.unsigned) {
            (Some(limit), Ok(ext)) => capability_policy(limit, ext.capabilities.as_ref()),
            _ => Ok(()),
        }
    }
}

pub(super) fn unsigned(env: &Envelope) -> Unsigned {
    let ext = gatehouse_epp::v11::Extensions::read(env)?;
    gatehouse_epp::v11::verify(env, &ext)?;
    Ok(ext)
}

/// A trust entry's EPP v1.1 capability limit: what the envelope declares must lie within
/// it, and with `require` it must declare something. The declaration is unsigned, so it
/// can only refuse: asking beyond the limit is refused, asking within it admits nothing
/// the sender's trust entry did not already.
fn capability_policy(limit: &gatehouse_store::CapabilityLimit, asked: Option<&gatehouse_epp::v11::Capabilities>) -> Result<(), EppRefusal> {
    use gatehouse_epp::v11;
    let Some(asked) = asked else {
        return match limit.require {
            true => Err(EppRefusal::new(
                ErrorCode::PolicyDenied,
                "this sender must declare the capabilities it asks for (EPP v1.1 capabilities), and this envelope declares none".into(),
            )),
            false => Ok(()),
        };
    };
    let allowed: v11::Capabilities = serde_json::from_value(limit.allowed.clone()).unwrap_or_default();
    let over = v11::beyond(asked, &allowed);
    if over.is_empty() {
        return Ok(());
    }
    Err(EppRefusal::new(ErrorCode::PolicyDenied, format!("it asks to {}, beyond what this sender may", over.join("; "))))
}
