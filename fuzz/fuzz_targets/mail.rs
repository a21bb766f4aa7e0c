//! What a MAIL swarm streams (event name + data) and task logs the user imports (JSON,
//! JSON arrays, JSONL, the reference's exports).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (event, body) = text.split_once('\n').unwrap_or(("message", text));
    let _ = gatehouse_mail::events::TaskEvent::parse(event, body);
    let _ = gatehouse_mail::import::read(text);
});
