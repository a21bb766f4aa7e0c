//! A picture someone sent as their QR code: whatever its bytes, reading it ends with texts
//! or a reason, never a panic, within the memory limits the script sets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = gatehouse_qr::texts(data);
});
