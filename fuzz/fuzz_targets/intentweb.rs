//! What an IntentSite serves: its YAML manifest (aliases bounded) and its envelopes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = gatehouse_intentweb::manifest::Manifest::parse(text);
    }
    let _ = gatehouse_intentweb::envelope::Envelope::parse(data);
});
