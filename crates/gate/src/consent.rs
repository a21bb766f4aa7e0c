//! Consent: what a decision on something waiting can be and how long it lasts, what a
//! scope looks like, and the risk flags a prompt shows. What waits, as one list, what a
//! decision names and what is knocking are read by the application layer
//! (`gatehouse_app::waiting`, `gatehouse_app::target`), which knows the doors; decisions
//! are carried out there too, and reach the door holding what is decided.

use chrono::{DateTime, Utc};
use gatehouse_store::{Store, StoreError};
use serde::{Deserialize, Serialize};

/// The risk flags of a message's text, with those the user dismissed marked. Links to the
/// `hosts` the user's own trust entry for the sender allows (as its door reads the entry)
/// are not flagged; what the message itself declares never relaxes a flag (it is
/// unsigned: a sender or relay declaring `com` would silence every .com link).
///
/// `ours` names the message by a receipt id Gatehouse gave it (random, never reused),
/// under which its text never changes: the scan (17 ms for a 1 MiB text) is kept under
/// it, so a list of 256 waiting prompts is not scanned again at every redraw.
pub fn risk_flags(store: &Store, message_id: &str, text: &str, hosts: &[String], ours: Option<&str>) -> Result<Vec<gatehouse_risk::Flag>, StoreError> {
    let mut flags = match ours {
        Some(id) => scanned(id, text, hosts),
        None => gatehouse_risk::scan(text, hosts),
    };
    if !flags.is_empty() {
        let dismissed = store.risk_dismissed(message_id)?;
        for f in &mut flags {
            f.dismissed = dismissed.iter().any(|(k, s)| k == f.kind.as_str() && *s == f.start);
        }
    }
    Ok(flags)
}

/// Scans kept, by our id for the message and the hosts its links were judged against.
const SCANS_KEPT: usize = 4096;

type Scans = std::collections::HashMap<(String, Vec<String>), Vec<gatehouse_risk::Flag>>;

fn scanned(ours: &str, text: &str, hosts: &[String]) -> Vec<gatehouse_risk::Flag> {
    static SCANS: std::sync::OnceLock<std::sync::Mutex<Scans>> = std::sync::OnceLock::new();
    let scans = SCANS.get_or_init(Default::default);
    let key = (ours.to_string(), hosts.to_vec());
    if let Some(f) = scans.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return f.clone();
    }
    let flags = gatehouse_risk::scan(text, hosts);
    let mut kept = scans.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= SCANS_KEPT {
        kept.clear();
    }
    kept.insert(key, flags.clone());
    flags
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    AllowOnce,
    /// Allow the scope for as long as the [`Lasting`] given with it says.
    AlwaysAllowScope,
    /// Neither allow nor deny yet: the prompt waits, out of the way, and asks again later.
    AskLater,
    Deny,
    Block,
}

impl Decision {
    /// Its name as it is written (in JSON, the audit log's `consent.…`, a knock's story).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow_once",
            Decision::AlwaysAllowScope => "always_allow_scope",
            Decision::AskLater => "ask_later",
            Decision::Deny => "deny",
            Decision::Block => "block",
        }
    }
}

/// How long an "allow" for a scope lasts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "for", rename_all = "snake_case")]
pub enum Lasting {
    #[default]
    Always,
    Hour,
    /// Until the end of today, on this computer's clock.
    Tonight,
    /// Until the end of `date` (YYYY-MM-DD), on this computer's clock.
    Until {
        date: String,
    },
}

impl Lasting {
    /// When a grant made at `now` ends; `None` for a grant for good.
    pub fn end(&self, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, ConsentError> {
        use chrono::{Local, NaiveDate, TimeZone};
        // The first moment of the day after `day`, on the user's clock (the earliest
        // reading when a clock change makes it ambiguous).
        let end_of = |day: NaiveDate| {
            let next = day.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)).ok_or_else(|| ConsentError::Invalid("that date is out of range".into()))?;
            Local
                .from_local_datetime(&next)
                .earliest()
                .map(|t| t.with_timezone(&Utc))
                .ok_or_else(|| ConsentError::Invalid("that day has no midnight on this computer's clock".into()))
        };
        match self {
            Lasting::Always => Ok(None),
            Lasting::Hour => Ok(Some(now + chrono::Duration::hours(1))),
            Lasting::Tonight => end_of(now.with_timezone(&Local).date_naive()).map(Some),
            Lasting::Until { date } => {
                let day =
                    NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").map_err(|_| ConsentError::Invalid(format!("{date:?} is not a date (YYYY-MM-DD)")))?;
                let end = end_of(day)?;
                if end <= now {
                    return Err(ConsentError::Invalid(format!("{date} has already passed")));
                }
                Ok(Some(end))
            }
        }
    }

    /// "for 1 hour", "until 17:30", in the user's words.
    pub fn words(end: Option<DateTime<Utc>>) -> String {
        match end {
            None => "for good".into(),
            Some(t) => format!("until {}", t.with_timezone(&chrono::Local).format("%a %-d %b, %H:%M")),
        }
    }
}

/// How long "ask me later" puts a prompt out of the way.
pub const LATER: chrono::Duration = chrono::Duration::hours(1);

#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("nothing is waiting for that decision any more")]
    Gone,
    /// What the prompt showed is no longer what waits: the sender knocked again.
    #[error("{0}")]
    Changed(String),
    #[error("{0}")]
    Invalid(String),
}

impl ConsentError {
    pub fn code(&self) -> gatehouse_code::Code {
        match self {
            ConsentError::Store(_) => gatehouse_code::Code::Store,
            ConsentError::Gone => gatehouse_code::Code::Gone,
            ConsentError::Changed(_) => gatehouse_code::Code::Changed,
            ConsentError::Invalid(_) => gatehouse_code::Code::Invalid,
        }
    }
}

pub fn now_string(now: DateTime<Utc>) -> String {
    crate::clock::utc_string(now)
}

/// A scope as every door names one: letters, digits and hyphens, at most 128 (the strictest door's rule,
/// which the other doors' scopes are held to as well).
pub fn is_scope_like(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::Decision;

    #[test]
    fn a_decision_is_written_by_the_name_its_json_has() {
        for d in [Decision::AllowOnce, Decision::AlwaysAllowScope, Decision::AskLater, Decision::Deny, Decision::Block] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
    }
}
