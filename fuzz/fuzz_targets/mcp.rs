//! What an MCP client or server sends through the gate: its stream cut into lines (handed
//! over in pieces of any size, against a plain reading of the framing), each message
//! peeked at (whole, and read in pieces), a tools/call read strictly and said in words, a
//! tool list pinned, an answer's words read in windows.
#![no_main]

use gatehouse_mcp::frame::{Framer, Line};
use libfuzzer_sys::fuzz_target;

/// The lines of `stream` as the framing says: cut at each line end; one over `max` bytes
/// told by its length; otherwise without a last carriage return, and skipped when only
/// blanks; a last line without its end taken as it came.
fn plainly(stream: &[u8], max: usize) -> Vec<Line> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    let last = parts.pop().unwrap_or_default();
    for p in parts {
        if p.len() > max {
            out.push(Line::TooLong(p.len()));
            continue;
        }
        let p = p.strip_suffix(b"\r").unwrap_or(p);
        if !p.iter().all(u8::is_ascii_whitespace) {
            out.push(Line::Message(p.to_vec().into()));
        }
    }
    match last.len() {
        0 => {}
        n if n > max => out.push(Line::TooLong(n)),
        _ => out.push(Line::Message(last.to_vec().into())),
    }
    out
}

/// The lines of `stream` handed to a framer in pieces of the sizes `sizes` cycles through.
fn framed(stream: &[u8], max: usize, sizes: &[u8]) -> Vec<Line> {
    let mut framer = Framer::new(max);
    let mut out = Vec::new();
    let (mut at, mut i) = (0, 0);
    while at < stream.len() {
        let size = usize::from(sizes.get(i % sizes.len().max(1)).copied().unwrap_or(7)).max(1);
        i += 1;
        let mut piece = &stream[at..(at + size).min(stream.len())];
        // A reader hands the same buffer again until all of it is taken.
        while !piece.is_empty() {
            let (used, line) = framer.feed(piece);
            assert!(used >= 1 && used <= piece.len(), "took {used} of {}", piece.len());
            out.extend(line);
            piece = &piece[used..];
            at += used;
        }
    }
    out.extend(framer.end());
    out
}

fuzz_target!(|data: &[u8]| {
    if let [m, k, rest @ ..] = data {
        let max = usize::from(*m) * 16 + 1;
        let (sizes, stream) = rest.split_at(usize::from(*k % 8).min(rest.len()));
        let lines = framed(stream, max, sizes);
        assert_eq!(lines, plainly(stream, max));
        assert!(lines.iter().all(|l| match l {
            Line::Message(m) => m.len() <= max,
            Line::TooLong(n) => *n > max,
        }));
    }
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
