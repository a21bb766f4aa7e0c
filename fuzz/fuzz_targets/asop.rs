//! What an agent sends the guardian: JSON-RPC requests and batches, checked against the
//! schema and read as steps.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let items = match v {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    for item in items.iter().take(64) {
        if let Ok(req) = gatehouse_asop::jsonrpc::read(item) {
            if gatehouse_asop::schema::check(&req.method, &req.raw).is_ok() {
                let step = gatehouse_asop::Step::of(&req.method, &req.params);
                let _ = step.describe();
            }
        }
    }
});
