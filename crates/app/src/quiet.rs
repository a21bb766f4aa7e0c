//! Quiet hours: while they last, prompts are collected instead of announced, and one
//! digest says how many waited once they end. The window's notifier asks here whether to
//! notify; the count is kept in the store, so a restart in the night loses nothing.

use crate::Context;
use chrono::{DateTime, Local, NaiveTime, Utc};
use gatehouse_store::Store;
use serde::{Deserialize, Serialize};

use crate::{Code, CommandError, Result};

const SETTING: &str = "quiet_hours";
const DIGEST: &str = "quiet_digest";

/// The digest's count is read, added to and written back; prompts in a burst are counted
/// on several threads, so one at a time (only the window's process counts).
static COUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// From `from` to `to` on this computer's clock ("HH:MM"); over midnight when `to` is
/// earlier than `from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct QuietHours {
    pub from: String,
    pub to: String,
}

/// Prompts that arrived in quiet hours and were not announced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Digest {
    pub count: u32,
    /// When the first of them arrived (UTC).
    pub since: Option<String>,
}

fn time(s: &str) -> Result<NaiveTime> {
    NaiveTime::parse_from_str(s.trim(), "%H:%M").map_err(|_| CommandError::new(Code::Invalid, format!("{s:?} is not a time of day (HH:MM, e.g. 22:00)")))
}

impl QuietHours {
    /// Whether `now` falls in quiet hours on the user's clock.
    pub fn contains(&self, now: DateTime<Utc>) -> bool {
        let (Ok(from), Ok(to)) = (time(&self.from), time(&self.to)) else { return false };
        let t = now.with_timezone(&Local).time();
        if from <= to {
            from <= t && t < to
        } else {
            t >= from || t < to
        }
    }
}

pub fn get(store: &Store) -> Result<Option<QuietHours>> {
    // Turned off, the setting holds null.
    Ok(store.setting::<Option<QuietHours>>(SETTING)?.flatten())
}

/// Sets quiet hours (`None`: off). Audited.
pub fn set(ctx: &Context, quiet: Option<QuietHours>) -> Result<Option<QuietHours>> {
    let store: &Store = &ctx.store;
    let quiet = match quiet {
        Some(q) => {
            let (from, to) = (time(&q.from)?, time(&q.to)?);
            if from == to {
                return Err(CommandError::new(Code::Invalid, "quiet hours must start and end at different times"));
            }
            Some(QuietHours { from: from.format("%H:%M").to_string(), to: to.format("%H:%M").to_string() })
        }
        None => None,
    };
    store.set_setting(SETTING, &quiet)?;
    store.audit("settings.quiet_hours", None, &serde_json::json!({ "quiet_hours": quiet }), &crate::now())?;
    Ok(quiet)
}

/// Quiet hours as the window shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct QuietState {
    pub hours: Option<QuietHours>,
    /// Quiet hours are on now.
    pub active: bool,
    /// Prompts collected so far and not yet given as a digest.
    pub digest: Digest,
}

pub fn state(ctx: &Context, now: DateTime<Utc>) -> Result<QuietState> {
    let store: &Store = &ctx.store;
    let hours = get(store)?;
    Ok(QuietState { active: hours.as_ref().is_some_and(|q| q.contains(now)), hours, digest: digest(ctx)? })
}

pub fn digest(ctx: &Context) -> Result<Digest> {
    let store: &Store = &ctx.store;
    Ok(store.setting(DIGEST)?.unwrap_or_default())
}

/// A prompt arrived: `true` to announce it now; in quiet hours it is counted for the
/// digest instead.
pub fn on_prompt(ctx: &Context, now: DateTime<Utc>) -> Result<bool> {
    let store: &Store = &ctx.store;
    let _one = COUNTING.lock().unwrap_or_else(|p| p.into_inner());
    match get(store)? {
        Some(q) if q.contains(now) => {
            let mut d = digest(ctx)?;
            d.count = d.count.saturating_add(1);
            d.since.get_or_insert_with(|| gatehouse_gate::clock::utc_string(now));
            store.set_setting(DIGEST, &d)?;
            Ok(false)
        }
        _ => Ok(true),
    }
}

/// Called now and then: once quiet hours are over, the digest's words (once), and the
/// count starts again.
pub fn due_digest(ctx: &Context, now: DateTime<Utc>) -> Result<Option<String>> {
    let store: &Store = &ctx.store;
    let _one = COUNTING.lock().unwrap_or_else(|p| p.into_inner());
    let d = digest(ctx)?;
    if d.count == 0 || get(store)?.is_some_and(|q| q.contains(now)) {
        return Ok(None);
    }
    store.set_setting(DIGEST, &Digest::default())?;
    let n = d.count;
    Ok(Some(format!("While your quiet hours were on, {n} request{} waited for you. Open Gatehouse to decide.", if n == 1 { "" } else { "s" })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Local.with_ymd_and_hms(2026, 11, 25, h, m, 0).earliest().unwrap().with_timezone(&Utc)
    }

    #[test]
    fn quiet_hours_over_midnight_and_within_a_day() {
        let night = QuietHours { from: "22:00".into(), to: "07:00".into() };
        assert!(night.contains(at(23, 30)) && night.contains(at(2, 0)) && night.contains(at(22, 0)));
        assert!(!night.contains(at(7, 0)) && !night.contains(at(12, 0)) && !night.contains(at(21, 59)));
        let lunch = QuietHours { from: "12:00".into(), to: "13:30".into() };
        assert!(lunch.contains(at(12, 45)) && !lunch.contains(at(13, 30)) && !lunch.contains(at(11, 0)));
    }

    #[test]
    fn prompts_in_quiet_hours_are_counted_and_announced_once_after() {
        let ctx = crate::Context::with_store(
            std::path::PathBuf::new(),
            ed25519_dalek::SigningKey::from_bytes(&[7; 32]),
            std::sync::Arc::new(Store::open_in_memory().unwrap()),
        );
        assert!(on_prompt(&ctx, at(23, 0)).unwrap(), "no quiet hours set: announced");
        set(&ctx, Some(QuietHours { from: "22:00".into(), to: "7:00".into() })).unwrap();
        assert_eq!(get(&ctx.store).unwrap().unwrap().to, "07:00");
        assert!(!on_prompt(&ctx, at(23, 0)).unwrap());
        assert!(!on_prompt(&ctx, at(3, 0)).unwrap());
        assert_eq!(due_digest(&ctx, at(5, 0)).unwrap(), None, "still quiet");
        let words = due_digest(&ctx, at(7, 1)).unwrap().unwrap();
        assert!(words.contains("2 requests waited"), "{words}");
        assert_eq!(due_digest(&ctx, at(7, 2)).unwrap(), None, "once");
        assert!(on_prompt(&ctx, at(9, 0)).unwrap());
        set(&ctx, None).unwrap();
        assert_eq!(get(&ctx.store).unwrap(), None, "off, and readable as off");
        assert!(on_prompt(&ctx, at(23, 0)).unwrap());
        assert!(set(&ctx, Some(QuietHours { from: "25:00".into(), to: "07:00".into() })).is_err());
        // A burst counted on many threads loses none.
        set(&ctx, Some(QuietHours { from: "22:00".into(), to: "07:00".into() })).unwrap();
        let ctx = std::sync::Arc::new(ctx);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let s = ctx.clone();
                std::thread::spawn(move || (0..25).for_each(|_| assert!(!on_prompt(&s, at(23, 0)).unwrap())))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(digest(&ctx).unwrap().count, 200);
        assert!(set(&ctx, Some(QuietHours { from: "07:00".into(), to: "07:00".into() })).is_err());
    }
}
