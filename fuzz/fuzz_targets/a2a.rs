//! What an A2A caller sends: a JSON-RPC request read into a typed call, and a message's
//! text as the user and the executor read it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match gatehouse_a2a::rpc::parse(data) {
        Ok(req) => {
            if let gatehouse_a2a::rpc::Call::Send { send, .. } = &req.call {
                let _ = send.message.prompt();
                let _ = serde_json::to_string(&send.message);
            }
        }
        Err((id, e)) => {
            let _ = gatehouse_a2a::rpc::error(&id, &e);
        }
    }
});
