//! How much of what strangers send is kept: refusals and knocks are stored for the user
//! (with up to 64 KiB, or a knock's whole envelope), but anyone can send them as fast as
//! loopback allows and a fresh signing key costs nothing. So each kind has a budget per
//! minute; past it a sender still gets its receipt, and the refusal is counted instead of
//! kept. The counts survive restarts (the `flood` setting), so the user sees that a flood
//! happened and how large it was.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use gatehouse_store::Store;
use serde::{Deserialize, Serialize};

/// The setting holding what was not kept.
pub const SETTING: &str = "flood";
/// Refusals (malformed, unsigned, expired, replayed, over a limit) kept per minute.
pub const REFUSALS_PER_MINUTE: u32 = 120;
/// Knocks from unknown senders kept per minute (each may hold a whole envelope).
pub const KNOCKS_PER_MINUTE: u32 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Refusal,
    Knock,
}

/// What was not kept, as the user is shown it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Unkept {
    pub refusals: u64,
    pub knocks: u64,
    /// The last minute (UTC, RFC 3339) in which something was not kept.
    pub last: Option<String>,
}

pub struct Gate {
    minute: AtomicI64,
    /// When a dropped request was last announced (ms), so the window's count keeps up
    /// without a redraw per request.
    announced: AtomicI64,
    kept: [AtomicU32; 2],
    /// Not yet written to the store.
    unflushed: [AtomicU64; 2],
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            minute: AtomicI64::new(i64::MIN),
            announced: AtomicI64::new(i64::MIN),
            kept: [AtomicU32::new(0), AtomicU32::new(0)],
            unflushed: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }
}

impl Gate {
    /// Whether one more of `kind` may be kept now. A refusal that may not is counted, and
    /// the counts are written to `store` once per minute in which something was dropped.
    pub fn keep(&self, kind: Kind, now_ms: i64, store: &Arc<Store>) -> bool {
        let minute = now_ms.div_euclid(60_000);
        let seen = self.minute.load(Ordering::Relaxed);
        if minute != seen && self.minute.compare_exchange(seen, minute, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            for k in &self.kept {
                k.store(0, Ordering::Relaxed);
            }
            self.flush(store, seen);
        }
        let (i, budget) = match kind {
            Kind::Refusal => (0, REFUSALS_PER_MINUTE),
            Kind::Knock => (1, KNOCKS_PER_MINUTE),
        };
        if self.kept[i].fetch_add(1, Ordering::Relaxed) < budget {
            return true;
        }
        if self.unflushed[i].fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!(kind = ?kind, "more than the per-minute budget arrived; the rest is counted, not kept");
        }
        false
    }

    /// Adds what was dropped to the stored counts (off the async workers).
    fn flush(&self, store: &Arc<Store>, minute: i64) {
        let refusals = self.unflushed[0].swap(0, Ordering::Relaxed);
        let knocks = self.unflushed[1].swap(0, Ordering::Relaxed);
        if refusals + knocks == 0 {
            return;
        }
        let store = store.clone();
        let write = move || {
            let mut u: Unkept = store.setting(SETTING).ok().flatten().unwrap_or_default();
            u.refusals += refusals;
            u.knocks += knocks;
            u.last = chrono::DateTime::from_timestamp(minute.saturating_mul(60), 0).map(crate::clock::utc_string);
            if let Err(e) = store.set_setting(SETTING, &u) {
                tracing::error!(error = %e, "could not record how much of a flood was not kept");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(write)),
            Err(_) => write(),
        }
    }

    /// Whether a request that was not kept should still be announced (at most once a
    /// second), so whoever shows the counts refreshes them during a flood.
    pub fn announce(&self, now_ms: i64) -> bool {
        let last = self.announced.load(Ordering::Relaxed);
        now_ms.saturating_sub(last) >= 1000 && self.announced.compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// What was not kept: the stored counts plus this minute's.
    pub fn unkept(&self, store: &Store) -> Unkept {
        let mut u: Unkept = store.setting(SETTING).ok().flatten().unwrap_or_default();
        u.refusals += self.unflushed[0].load(Ordering::Relaxed);
        u.knocks += self.unflushed[1].load(Ordering::Relaxed);
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_flood_drops_is_announced_at_most_once_a_second() {
        let g = Gate::default();
        assert!(g.announce(10_000));
        assert!(!g.announce(10_500));
        assert!(!g.announce(10_999));
        assert!(g.announce(11_000));
    }
}
