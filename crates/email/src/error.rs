//! What following or sending mail can fail with, in words a user can act on.

#[derive(Debug, thiserror::Error)]
pub enum EmailError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot reach {0}: {1}")]
    Unreachable(String, String),
    #[error("the server refused the login for {user}: {detail}. Check the user name and password (an app password, where the provider asks for one)")]
    LoginRefused { user: String, detail: String },
    #[error("the IMAP server: {0}")]
    Imap(String),
    /// A server refused what was asked for good (not the login): retrying cannot help.
    #[error("{0}")]
    Refused(String),
}

impl EmailError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            EmailError::Invalid(_) => gatehouse_code::Code::Invalid,
            EmailError::Unreachable(..) => gatehouse_code::Code::Unreachable,
            EmailError::LoginRefused { .. } => gatehouse_code::Code::Unauthorized,
            EmailError::Imap(_) | EmailError::Refused(_) => gatehouse_code::Code::Protocol,
        }
    }

    /// Whether trying again later can help (a refused login cannot).
    pub fn transient(&self) -> bool {
        matches!(self, EmailError::Unreachable(..) | EmailError::Imap(_))
    }
}
