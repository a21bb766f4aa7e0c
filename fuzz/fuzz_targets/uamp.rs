//! What a UAMP peer sends: envelopes (strict JSON, schema, detached JWS), compact JWS
//! tokens and stream frames. Nothing may panic or run away; what is read is well formed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(env) = gatehouse_uamp::envelope::Envelope::parse(data) {
        assert!(!env.from.is_empty());
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = gatehouse_uamp::jws::Compact::parse(text);
        let _ = gatehouse_uamp::envelope::is_stream_id(text);
    }
    if let Ok(d) = gatehouse_uamp::Delta::parse_from_peer(data, "str-1") {
        assert_eq!(d.stream_id, "str-1");
    }
});
