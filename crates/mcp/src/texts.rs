//! The words a message carries, read in windows of bounded size without holding the
//! message twice: every JSON string in it decoded (escapes, surrogate pairs), one after
//! another with a line between them, handed over a window at a time. Windows overlap by
//! [`OVERLAP`] bytes so a phrase cut by a window's end is still seen whole in the next.
//! A tool's result is read this way for the risk flags: a 10 MB result is scanned with a
//! few kilobytes beside it.

use std::io::Read;

/// How much of a window is read again at the start of the next.
pub const OVERLAP: usize = 512;

enum State {
    Outside,
    Inside,
    Escape,
    /// Within `\uXXXX`: the digits read, their value so far, and the high surrogate
    /// before it, when this is meant to be a pair's low half.
    Unicode {
        digits: u8,
        value: u32,
        high: Option<u32>,
    },
    /// A high surrogate read: its low half's `\u` should follow.
    AfterHigh(u32),
    AfterHighSlash(u32),
}

/// Calls `each(window, fresh_from)` for each window of at least `window` bytes (the last
/// may be shorter) of the strings read from `r` (keys and values alike); `fresh_from` is
/// where, in the window, what was not in the previous one begins (a byte offset at a
/// character's start). Returns the first `excerpt` characters of the values of the keys
/// `shown` (a result's `text`, an error's `message`), one after another.
pub fn texts(mut r: impl Read, window: usize, shown: &[&str], excerpt: usize, mut each: impl FnMut(&str, usize)) -> std::io::Result<String> {
    let window = window.max(OVERLAP.saturating_mul(2));
    let mut out: Vec<u8> = Vec::with_capacity(window.saturating_add(8));
    let mut fresh_from = 0;
    let mut state = State::Outside;
    let mut words = Words { shown, max: excerpt, ..Words::default() };
    let mut buf = [0u8; 8192];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        for &b in buf.get(..n).unwrap_or_default() {
            let before = out.len();
            let was_inside = !matches!(state, State::Outside);
            state = step(state, b, &mut out);
            words.saw(b, was_inside, !matches!(state, State::Outside), out.get(before..).unwrap_or_default());
            if out.len() >= window {
                fresh_from = flush(&mut out, fresh_from, &mut each);
            }
        }
    }
    if out.len() > fresh_from {
        let text = String::from_utf8_lossy(&out);
        each(&text, fresh_from.min(text.len()));
    }
    Ok(String::from_utf8_lossy(&words.excerpt).chars().take(excerpt).collect())
}

/// Follows which key each string value is under, and keeps the first words of those shown.
#[derive(Default)]
struct Words<'a> {
    shown: &'a [&'a str],
    max: usize,
    /// The string being read (decoded so far), while it may still be a key.
    string: Vec<u8>,
    /// The key the next value is under.
    key: Option<Vec<u8>>,
    /// The string being read is a value of a key shown.
    in_shown: bool,
    /// A string just ended: a key if a `:` follows.
    ended: Option<Vec<u8>>,
    excerpt: Vec<u8>,
}

/// Keys longer than this are never among those shown; their bytes are not kept.
const KEY_MAX: usize = 64;

impl Words<'_> {
    fn saw(&mut self, b: u8, was_inside: bool, inside: bool, decoded: &[u8]) {
        match (was_inside, inside) {
            (false, true) => {
                self.string.clear();
                self.in_shown = self.key.as_deref().is_some_and(|k| self.shown.iter().any(|s| s.as_bytes() == k));
            }
            (true, true) => {
                if self.string.len() < KEY_MAX {
                    self.string.extend_from_slice(decoded);
                }
                // The excerpt takes at most `max` characters of at most 4 bytes each.
                if self.in_shown && self.excerpt.len() < self.max.saturating_mul(4) {
                    self.excerpt.extend_from_slice(decoded);
                }
            }
            (true, false) => {
                self.ended = (self.string.len() < KEY_MAX).then(|| std::mem::take(&mut self.string));
                if self.in_shown {
                    self.excerpt.push(b'\n');
                    self.in_shown = false;
                }
            }
            (false, false) => match b {
                b':' => self.key = self.ended.take(),
                b',' | b'{' | b'}' => {
                    self.key = None;
                    self.ended = None;
                }
                _ if b.is_ascii_whitespace() => {}
                _ => self.ended = None,
            },
        }
    }
}

/// Hands over the window and keeps its last [`OVERLAP`] bytes (from a character's start)
/// as the next one's beginning: where the next one's fresh part starts.
fn flush(out: &mut Vec<u8>, fresh_from: usize, each: &mut impl FnMut(&str, usize)) -> usize {
    // A character cut by the window's end waits for its other bytes.
    let whole = match std::str::from_utf8(out) {
        Ok(_) => out.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => out.len(),
    };
    let (done, tail) = out.split_at(whole);
    let text = String::from_utf8_lossy(done);
    each(&text, fresh_from.min(text.len()));
    let mut keep_from = text.len().saturating_sub(OVERLAP);
    while !text.is_char_boundary(keep_from) {
        keep_from = keep_from.saturating_sub(1);
    }
    let mut next = text.as_bytes().get(keep_from..).unwrap_or_default().to_vec();
    let fresh = next.len();
    next.extend_from_slice(tail);
    *out = next;
    fresh
}

fn push_char(out: &mut Vec<u8>, c: u32) {
    let c = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
    let mut b = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
}

fn step(state: State, b: u8, out: &mut Vec<u8>) -> State {
    match state {
        State::Outside if b == b'"' => State::Inside,
        State::Outside => State::Outside,
        State::Inside => match b {
            b'\\' => State::Escape,
            b'"' => {
                out.push(b'\n');
                State::Outside
            }
            other => {
                out.push(other);
                State::Inside
            }
        },
        State::Escape => {
            let c = match b {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'b' => 0x08,
                b'f' => 0x0c,
                b'u' => return State::Unicode { digits: 0, value: 0, high: None },
                other => other,
            };
            out.push(c);
            State::Inside
        }
        State::Unicode { digits, value, high } => {
            let Some(d) = (b as char).to_digit(16) else {
                push_char(out, 0xFFFD);
                return step(State::Inside, b, out);
            };
            let value = value.wrapping_shl(4) | d;
            if digits < 3 {
                return State::Unicode { digits: digits.saturating_add(1), value, high };
            }
            match (high, value) {
                (Some(h), 0xDC00..=0xDFFF) => {
                    // In range by the arms above: no step can overflow.
                    push_char(out, h.saturating_sub(0xD800).saturating_mul(0x400).saturating_add(value.saturating_sub(0xDC00)).saturating_add(0x10000));
                    State::Inside
                }
                (h, 0xD800..=0xDBFF) => {
                    if h.is_some() {
                        push_char(out, 0xFFFD);
                    }
                    State::AfterHigh(value)
                }
                (h, v) => {
                    if h.is_some() {
                        push_char(out, 0xFFFD);
                    }
                    push_char(out, v);
                    State::Inside
                }
            }
        }
        State::AfterHigh(high) if b == b'\\' => State::AfterHighSlash(high),
        State::AfterHigh(_) => {
            push_char(out, 0xFFFD);
            step(State::Inside, b, out)
        }
        State::AfterHighSlash(high) if b == b'u' => State::Unicode { digits: 0, value: 0, high: Some(high) },
        State::AfterHighSlash(_) => {
            push_char(out, 0xFFFD);
            step(State::Escape, b, out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(json: &str, window: usize) -> Vec<(String, usize)> {
        let mut got = Vec::new();
        texts(json.as_bytes(), window, &[], 0, |w, fresh| got.push((w.to_string(), fresh))).unwrap();
        got
    }

    #[test]
    fn the_excerpt_is_the_first_words_of_the_values_shown() {
        let json =
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"first \u00e9"},{"type":"text", "text" : "second"}],"text":{"text":"x"}}}"#;
        let excerpt = texts(json.as_bytes(), 4096, &["text", "message"], 100, |_, _| {}).unwrap();
        assert_eq!(excerpt, "first é\nsecond\nx\n");
        let cut = texts(json.as_bytes(), 4096, &["text"], 3, |_, _| {}).unwrap();
        assert_eq!(cut, "fir");
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool: nope"}}"#;
        assert_eq!(texts(error.as_bytes(), 4096, &["text", "message"], 100, |_, _| {}).unwrap(), "Unknown tool: nope\n");
    }

    #[test]
    fn strings_are_decoded_with_their_escapes_and_pairs() {
        let json = r#"{"result":{"content":[{"type":"text","text":"a\nb \"q\" \u200b \ud83d\ude00 \udc00x é"}],"n":12}}"#;
        let got = windows(json, 4096);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "result\ncontent\ntype\ntext\ntext\na\nb \"q\" \u{200b} 😀 \u{fffd}x é\nn\n");
        assert_eq!(got[0].1, 0);
    }

    #[test]
    fn a_long_text_comes_in_overlapping_windows_and_each_byte_is_fresh_once() {
        let text: String = (0..20_000).map(|i| if i % 97 == 0 { 'é' } else { 'x' }).collect();
        let json = format!(r#"{{"text":"{text}"}}"#);
        let got = windows(&json, 2048);
        assert!(got.len() > 5);
        let fresh: String = got.iter().map(|(w, f)| &w[*f..]).collect();
        assert_eq!(fresh, format!("text\n{text}\n"));
        for pair in got.windows(2) {
            assert!(pair[1].1 > 0 && pair[1].1 <= OVERLAP + 3, "each window starts with the end of the last: {}", pair[1].1);
            assert!(pair[0].0.ends_with(&pair[1].0[..pair[1].1]));
        }
    }
}
