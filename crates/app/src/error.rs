//! What either face hears when something the user asked for fails: `{code, message}`, the
//! code one of [`Code`] (mirrored in the window's generated TypeScript, so the UI can
//! branch on it; the CLI prints the message) and the message a sentence for the user.

use serde::Serialize;

pub use gatehouse_code::Code;

#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[error("{message}")]
pub struct CommandError {
    pub code: Code,
    pub message: String,
}

impl CommandError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        CommandError { code, message: message.into() }
    }

    /// The message with its code, as the CLI prints it (`… [NOT_FOUND]`).
    pub fn coded_message(&self) -> String {
        format!("{} [{}]", self.message, self.code.name())
    }
}

impl From<gatehouse_store::StoreError> for CommandError {
    fn from(e: gatehouse_store::StoreError) -> Self {
        let code = match e {
            gatehouse_store::StoreError::AlreadyTrusted(_) => Code::AlreadyTrusted,
            gatehouse_store::StoreError::NotTrusted(_) => Code::NotTrusted,
            gatehouse_store::StoreError::Invalid(_) => Code::Invalid,
            gatehouse_store::StoreError::StateChanged(_) => Code::Changed,
            _ => Code::Store,
        };
        CommandError::new(code, e.to_string())
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> Self {
        CommandError::new(Code::Io, e.to_string())
    }
}

/// Writing our own values as JSON: only a bug fails it.
impl From<serde_json::Error> for CommandError {
    fn from(e: serde_json::Error) -> Self {
        CommandError::new(Code::Internal, e.to_string())
    }
}

impl From<crate::doors::uamp::tls::TlsError> for CommandError {
    fn from(e: crate::doors::uamp::tls::TlsError) -> Self {
        CommandError::new(Code::Tls, e.to_string())
    }
}

impl From<gatehouse_keys::KeyError> for CommandError {
    fn from(e: gatehouse_keys::KeyError) -> Self {
        CommandError::new(Code::Keychain, e.to_string())
    }
}

impl From<crate::doors::gate::consent::ConsentError> for CommandError {
    fn from(e: crate::doors::gate::consent::ConsentError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<crate::doors::intent::IntentError> for CommandError {
    fn from(e: crate::doors::intent::IntentError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<crate::doors::uamp::client::ClientError> for CommandError {
    fn from(e: crate::doors::uamp::client::ClientError) -> Self {
        CommandError::new(e.code(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doors::gate::consent::ConsentError;

    #[test]
    fn a_consent_error_keeps_its_code_across_the_boundary() {
        for (e, code, wire) in [
            (ConsentError::Gone, Code::Gone, "GONE"),
            (ConsentError::Changed("knocked again".into()), Code::Changed, "CHANGED"),
            (ConsentError::Invalid("no".into()), Code::Invalid, "INVALID"),
        ] {
            let c = CommandError::from(e);
            assert_eq!(c.code, code);
            assert_eq!(serde_json::to_value(&c).unwrap()["code"], wire, "as the window reads it");
        }
    }
}
