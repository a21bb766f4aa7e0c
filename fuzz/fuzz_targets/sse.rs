//! Server-sent events from peers, split into chunks anywhere: every event read is within
//! the bound, and reading ends.
#![no_main]

use futures_util::{FutureExt as _, StreamExt as _};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let size = usize::from(split).max(1);
    let chunks: Vec<Result<bytes::Bytes, String>> = rest.chunks(size).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
    let events = gatehouse_sse::events(futures_util::stream::iter(chunks), 4096);
    let all: Vec<_> = events.collect::<Vec<_>>().now_or_never().expect("a ready stream reads to its end at once");
    for e in all.iter().flatten() {
        assert!(e.data.len() <= 4096);
    }
});
