//! The one decision: an arrival whose signature, freshness and replay its door has
//! judged, against the user's registry.
//!
//! The order is fixed here, for every door: a blocked key, then a revoked key (neither
//! ever asks the user again); then what the arrival claims outside its signature (a
//! failing claim refuses and never knocks); then an unknown sender knocks; then the
//! sender's proof at the transport (where its door has one), its scopes, delegation, the
//! limits only its door can read, and its size. An accepted arrival is held for the user
//! when its scope's grant has ended or the sender's key changed unverified.

// Others' numbers reach the decision (sizes): nothing here wraps or indexes.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects, clippy::indexing_slicing))]

use chrono::{DateTime, Utc};
use gatehouse_store::{Admission, TrustEntry};

/// What a door asks the gate about one arrival.
#[derive(Debug, Clone)]
pub struct Asked<'a> {
    /// The scopes it asks for, the first being the one its hold is decided by; none for
    /// an arrival that only steers work it was already let in for (acknowledging or
    /// cancelling its own stream).
    pub scopes: &'a [String],
    /// Its size in bytes, as it arrived.
    pub size: u64,
    /// Whether it is sent on someone else's behalf.
    pub delegated: bool,
    pub at: DateTime<Utc>,
}

/// The checks only a door can make, called by [`admit`] at their place in the order.
/// Each refuses in the door's own words (`Refusal`).
pub trait Checks {
    type Refusal;
    /// What the arrival claims outside its signature, judged on its own (a malformed
    /// field, a hash that does not match): after block and revocation, before a knock.
    fn claims(&self) -> Result<(), Self::Refusal> {
        Ok(())
    }
    /// The sender's proof at the transport that it is the key the entry names (a bearer
    /// token the user issued, a client certificate), for a door that has one.
    fn credentials(&self, _entry: &TrustEntry) -> Result<(), Self::Refusal> {
        Ok(())
    }
    /// Limits in the user's entry that only the door can read (declared capabilities).
    fn limits(&self, _entry: &TrustEntry) -> Result<(), Self::Refusal> {
        Ok(())
    }
}

/// A door with no checks of its own.
pub struct NoChecks;

impl Checks for NoChecks {
    type Refusal = std::convert::Infallible;
}

/// Why an arrival is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal<R> {
    /// The user blocked this key: it never asks again.
    Blocked,
    /// The user revoked this key, with the reason they gave (may be empty).
    Revoked(String),
    /// The door's own check refused it.
    Door(R),
    /// A scope the user's entry does not allow.
    Scope(String),
    /// Sent on someone's behalf, which the entry does not allow.
    Delegation,
    /// Larger than the entry allows.
    Size { size: u64, limit: u64 },
}

/// The gate's answer.
#[derive(Debug, PartialEq)]
pub enum Verdict<'v, R> {
    /// Let in under `entry` (the user's, or their one-time consent); `held`: it waits for
    /// the user before anything runs.
    Accept {
        entry: &'v TrustEntry,
        held: bool,
    },
    /// An unknown sender: refused, and the user is asked.
    Knock,
    Refuse(Refusal<R>),
}

impl<R> Verdict<'_, R> {
    pub fn accepted(&self) -> bool {
        matches!(self, Verdict::Accept { .. })
    }
}

/// Decides `arrival` on `view`, the registry as read for its sender. `consent` is the
/// user's one-time "allow once", standing in for a trust entry.
pub fn admit<'v, C: Checks>(view: &'v Admission, consent: Option<&'v TrustEntry>, arrival: &Asked<'_>, checks: &C) -> Verdict<'v, C::Refusal> {
    match decide(view, consent, arrival, checks) {
        Ok(Some(entry)) => {
            let held = arrival.scopes.first().is_some_and(|s| entry.policy.holds(s, arrival.at));
            Verdict::Accept { entry, held }
        }
        Ok(None) => Verdict::Knock,
        Err(r) => Verdict::Refuse(r),
    }
}

/// A key's standing for one scope when nothing else arrives with it to judge (an agent
/// a door registered, a counterpart's pinned key): the same decision, no door checks.
pub fn standing<'v>(view: &'v Admission, scope: &str, at: DateTime<Utc>) -> Verdict<'v, std::convert::Infallible> {
    let scopes = [scope.to_string()];
    admit(view, None, &Asked { scopes: &scopes, size: 0, delegated: false, at }, &NoChecks)
}

/// The entry an admitted arrival is let in under: the user's one-time consent, or their
/// trust entry. None: unknown, it knocks.
pub fn admitted_under<'v>(view: &'v Admission, consent: Option<&'v TrustEntry>) -> Option<&'v TrustEntry> {
    consent.or(view.trust.as_ref())
}

fn decide<'v, C: Checks>(
    view: &'v Admission,
    consent: Option<&'v TrustEntry>,
    a: &Asked<'_>,
    checks: &C,
) -> Result<Option<&'v TrustEntry>, Refusal<C::Refusal>> {
    if view.blocked {
        return Err(Refusal::Blocked);
    }
    if let Some(reason) = &view.revoked {
        return Err(Refusal::Revoked(reason.clone()));
    }
    checks.claims().map_err(Refusal::Door)?;
    let Some(entry) = admitted_under(view, consent) else { return Ok(None) };
    checks.credentials(entry).map_err(Refusal::Door)?;
    let policy = &entry.policy;
    if let Some(s) = a.scopes.iter().find(|s| !policy.allows_scope(s)) {
        return Err(Refusal::Scope(s.clone()));
    }
    if a.delegated && !policy.allow_delegation {
        return Err(Refusal::Delegation);
    }
    checks.limits(entry).map_err(Refusal::Door)?;
    if a.size > policy.max_envelope_size {
        return Err(Refusal::Size { size: a.size, limit: policy.max_envelope_size });
    }
    Ok(Some(entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_store::Policy;

    fn entry(policy: Policy) -> TrustEntry {
        TrustEntry {
            door: "a-door".into(),
            facts: Default::default(),
            public_key: "k".into(),
            name: "Ada".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            policy,
        }
    }

    fn view(trust: Option<TrustEntry>) -> Admission {
        Admission { blocked: false, revoked: None, trust, setting: None, version: 0 }
    }

    fn at() -> DateTime<Utc> {
        "2026-06-01T12:00:00Z".parse().unwrap()
    }

    struct Door {
        claims: bool,
        credentials: bool,
        limits: bool,
    }

    impl Checks for Door {
        type Refusal = &'static str;
        fn claims(&self) -> Result<(), &'static str> {
            if self.claims {
                Ok(())
            } else {
                Err("claims")
            }
        }
        fn credentials(&self, _: &TrustEntry) -> Result<(), &'static str> {
            if self.credentials {
                Ok(())
            } else {
                Err("credentials")
            }
        }
        fn limits(&self, _: &TrustEntry) -> Result<(), &'static str> {
            if self.limits {
                Ok(())
            } else {
                Err("limits")
            }
        }
    }

    const GOOD: Door = Door { claims: true, credentials: true, limits: true };

    /// One row per trust state, as every door meets them.
    #[test]
    fn every_trust_state_gets_its_verdict() {
        let support = vec!["support".to_string()];
        let small = Asked { scopes: &support, size: 100, delegated: false, at: at() };
        let trusted = entry(Policy { allowed_scopes: support.clone(), ..Policy::default() });
        let mut ended = trusted.clone();
        ended.policy.grant_until.insert("support".into(), "2026-05-01T00:00:00Z".into());
        let mut lasting = trusted.clone();
        lasting.policy.grant_until.insert("support".into(), "2026-07-01T00:00:00Z".into());
        let mut changed = trusted.clone();
        changed.policy.key_change_unverified = true;
        let mut tiny = trusted.clone();
        tiny.policy.max_envelope_size = 99;
        let mut no_delegation = trusted.clone();
        no_delegation.policy.allow_delegation = false;
        let other = entry(Policy { allowed_scopes: vec!["billing".into()], ..Policy::default() });
        let blocked = Admission { blocked: true, ..view(Some(trusted.clone())) };
        let revoked = Admission { revoked: Some("lost laptop".into()), ..view(Some(trusted.clone())) };

        let cases: Vec<(&str, Admission, Asked, Verdict<&str>)> = vec![
            ("unknown", view(None), small.clone(), Verdict::Knock),
            ("trusted", view(Some(trusted.clone())), small.clone(), Verdict::Accept { entry: &trusted, held: false }),
            ("blocked", blocked, small.clone(), Verdict::Refuse(Refusal::Blocked)),
            ("revoked", revoked, small.clone(), Verdict::Refuse(Refusal::Revoked("lost laptop".into()))),
            ("grant ended", view(Some(ended.clone())), small.clone(), Verdict::Accept { entry: &ended, held: true }),
            ("grant lasting", view(Some(lasting.clone())), small.clone(), Verdict::Accept { entry: &lasting, held: false }),
            ("key changed", view(Some(changed.clone())), small.clone(), Verdict::Accept { entry: &changed, held: true }),
            ("over scope", view(Some(other)), small.clone(), Verdict::Refuse(Refusal::Scope("support".into()))),
            ("over size", view(Some(tiny)), small.clone(), Verdict::Refuse(Refusal::Size { size: 100, limit: 99 })),
            ("delegated", view(Some(no_delegation)), Asked { delegated: true, ..small.clone() }, Verdict::Refuse(Refusal::Delegation)),
        ];
        for (state, v, a, want) in cases {
            let got = admit(&v, None, &a, &GOOD);
            // An accepted arrival is compared by the entry it was let in under.
            let same = match (&got, &want) {
                (Verdict::Accept { entry: g, held: gh }, Verdict::Accept { entry: w, held: wh }) => g.policy == w.policy && gh == wh,
                _ => got == want,
            };
            assert!(same, "{state}: {got:?}, wanted {want:?}");
        }
    }

    #[test]
    fn blocks_and_revocations_come_before_claims_and_claims_before_a_knock() {
        let support = vec!["support".to_string()];
        let a = Asked { scopes: &support, size: 1, delegated: false, at: at() };
        let bad_claims = Door { claims: false, ..GOOD };
        let blocked = Admission { blocked: true, revoked: Some(String::new()), ..view(None) };
        assert_eq!(admit(&blocked, None, &a, &bad_claims), Verdict::Refuse(Refusal::Blocked));
        let revoked = Admission { revoked: Some(String::new()), ..view(None) };
        assert_eq!(admit(&revoked, None, &a, &bad_claims), Verdict::Refuse(Refusal::Revoked(String::new())));
        // A claim that fails on its own never asks the user.
        assert_eq!(admit(&view(None), None, &a, &bad_claims), Verdict::Refuse(Refusal::Door("claims")));
        // Credentials are asked of a known sender only, before its scopes.
        let other = entry(Policy { allowed_scopes: vec!["billing".into()], ..Policy::default() });
        let no_credentials = Door { credentials: false, ..GOOD };
        assert_eq!(admit(&view(None), None, &a, &no_credentials), Verdict::Knock);
        assert_eq!(admit(&view(Some(other.clone())), None, &a, &no_credentials), Verdict::Refuse(Refusal::Door("credentials")));
        // The door's limits come after scopes, before size.
        let over_limits = Door { limits: false, ..GOOD };
        assert_eq!(admit(&view(Some(other)), None, &a, &over_limits), Verdict::Refuse(Refusal::Scope("support".into())));
        let mut tiny = entry(Policy { allowed_scopes: support.clone(), ..Policy::default() });
        tiny.policy.max_envelope_size = 0;
        assert_eq!(admit(&view(Some(tiny)), None, &a, &over_limits), Verdict::Refuse(Refusal::Door("limits")));
    }

    #[test]
    fn a_one_time_consent_stands_in_for_an_entry_but_not_for_a_block() {
        let support = vec!["support".to_string()];
        let a = Asked { scopes: &support, size: 1, delegated: false, at: at() };
        let once = entry(Policy { allowed_scopes: support.clone(), ..Policy::default() });
        assert!(admit(&view(None), Some(&once), &a, &NoChecks).accepted());
        let blocked = Admission { blocked: true, ..view(None) };
        assert_eq!(admit(&blocked, Some(&once), &a, &NoChecks), Verdict::Refuse(Refusal::Blocked));
    }

    #[test]
    fn an_arrival_that_asks_for_no_scope_is_judged_on_the_rest_and_never_held() {
        let a = Asked { scopes: &[], size: 1, delegated: false, at: at() };
        let mut changed = entry(Policy { allowed_scopes: vec!["billing".into()], ..Policy::default() });
        changed.policy.key_change_unverified = true;
        assert!(matches!(admit(&view(Some(changed)), None, &a, &NoChecks), Verdict::Accept { held: false, .. }));
    }
}
