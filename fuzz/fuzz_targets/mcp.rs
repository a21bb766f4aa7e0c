//! What an MCP client or server sends through the gate: each message peeked at (whole,
//! and read in pieces), a tools/call read strictly and said in words, a tool list
//! pinned, an answer's words read in windows.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(gatehouse_mcp::message::Kind::Request { id, .. }) = gatehouse_mcp::message::peek(data) {
        let _ = gatehouse_mcp::reply::error(&id, gatehouse_mcp::reply::REFUSED, "refused");
    }
    let _ = gatehouse_mcp::message::peek_read(data);
    let _ = gatehouse_mcp::texts::texts(data, 1024, &["text", "message"], 300, |w, fresh| {
        assert!(fresh <= w.len() && w.is_char_boundary(fresh));
    });
    if let Ok(call) = gatehouse_mcp::call::ToolCall::read(data) {
        let _ = (call.in_words(), call.digest());
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(p) = gatehouse_mcp::tools::pins(&v) {
            let _ = gatehouse_mcp::tools::changes(&p, &p);
        }
    }
});
