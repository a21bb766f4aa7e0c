//! A mail from anyone: finding the envelope in it never panics, and what is handed on is
//! within the bound (a larger envelope is refused unread).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let (gatehouse_email::Found::Envelope(bytes), _) = gatehouse_email::find(data) {
        assert!(bytes.len() <= gatehouse_email::extract::MAX_ENVELOPE_BYTES);
    }
});
