//! Whatever arrives, the envelope reader answers with an envelope or a typed rejection:
//! no panic, no unbounded allocation, and a readable envelope always has something to
//! verify against.
#![no_main]

use libfuzzer_sys::fuzz_target;

// The inbox the shared vectors are addressed to, so seeded inputs reach the signature check.
const INBOX: &str = "a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f0";

fuzz_target!(|data: &[u8]| {
    let now = chrono::DateTime::from_timestamp(1_790_000_000, 0).expect("a valid instant");
    match gatehouse_epp::Envelope::parse(data) {
        Err(rejection) => {
            // Every rejection names a code a sender can act on.
            assert!(!rejection.message.is_empty());
        }
        Ok(env) => {
            let candidates = gatehouse_epp::canonical::candidates(&env);
            assert!(!candidates.is_empty(), "a readable envelope has a signing payload");
            // Bounded: a pathological envelope costs a few dozen verifications at most.
            assert!(candidates.len() <= 64, "{} candidate payloads", candidates.len());
            let _ = gatehouse_epp::verify(&env);
            let _ = gatehouse_epp::check_parsed(&env, INBOX, now);
        }
    }
});
