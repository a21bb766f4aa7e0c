//! The gate's clock: what "now" is when a grant, a deferral or an envelope's freshness is
//! decided. Tests of a grant that lasts an hour cannot wait an hour, so a debug build reads
//! an offset from the file `GATEHOUSE_TEST_CLOCK` names (whole seconds, may be negative),
//! at every reading; a release build has no such file and reads the system clock only.

use chrono::{DateTime, Utc};

pub fn now() -> DateTime<Utc> {
    Utc::now() + skew()
}

/// `now()` as the store keeps times.
pub fn now_string() -> String {
    utc_string(now())
}

/// How the store keeps a time: RFC 3339 in UTC, to the second.
pub fn utc_string(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// With milliseconds, for receipts (so their order is visible within a second).
pub fn utc_string_ms(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(debug_assertions)]
fn skew() -> chrono::Duration {
    static FILE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let Some(path) = FILE.get_or_init(|| std::env::var_os("GATEHOUSE_TEST_CLOCK").map(Into::into)) else {
        return chrono::Duration::zero();
    };
    let secs = std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(0);
    chrono::Duration::seconds(secs)
}

#[cfg(not(debug_assertions))]
fn skew() -> chrono::Duration {
    chrono::Duration::zero()
}
