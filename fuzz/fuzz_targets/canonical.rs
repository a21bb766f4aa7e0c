//! The canonical serialisations: any JSON the strict reader accepts is written in every
//! signing style without panicking, and what is written reads back to the same text
//! (so the bytes a signature covers are a fixed point, not an accident of one pass).
#![no_main]

use gatehouse_epp::json::{parse, to_compact, NumberStyle, Style};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = parse(data) else { return };
    for sort_keys in [true, false] {
        for ascii in [true, false] {
            for numbers in [NumberStyle::AsSent, NumberStyle::Python] {
                let style = Style { sort_keys, ascii, numbers };
                let out = to_compact(&doc, style);
                match parse(out.as_bytes()) {
                    Ok(again) => assert_eq!(to_compact(&again, style), out, "{style:?} is not stable"),
                    // Python's float text can leave JSON (1e400 becomes Infinity), as the
                    // reference implementation's does; as-sent text never may.
                    Err(e) => assert!(numbers == NumberStyle::Python, "{style:?} wrote unreadable JSON: {e:?}\n{out}"),
                }
            }
        }
    }
});
