//! A strict JSON reader that keeps what a signature depends on.
//!
//! serde_json is not enough for signed envelopes: it silently keeps the last of two
//! duplicate keys (so one signed field could carry two meanings) and it turns numbers into
//! f64, losing the digits a sender signed. This reader rejects duplicate keys, keeps each
//! number's exact text, keeps object key order (the spec's "compact JSON" is not
//! necessarily sorted) and bounds nesting depth so hostile input cannot exhaust the stack.

// It reads a stranger's bytes: no slicing inside a character, no offset or count that
// wraps, no index trusted to be in range (docs/threat-model.md 1).
#![cfg_attr(not(test), deny(clippy::string_slice, clippy::arithmetic_side_effects, clippy::indexing_slicing))]

use std::fmt::Write as _;

/// Nesting deeper than this is refused; no real payload comes near it.
pub const MAX_DEPTH: usize = 128;
/// Objects up to this many keys are checked for duplicates by a scan; larger ones by hashing.
const SCAN_KEYS: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number exactly as written on the wire (already checked against RFC 8259).
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in wire order; keys are unique (duplicates are a parse error).
    Object(Vec<(String, Json)>),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at byte {offset}")]
pub struct JsonError {
    pub message: String,
    pub offset: usize,
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// Converts to serde_json for storage and display (numbers may lose precision there;
    /// never use the result for signing).
    pub fn to_serde(&self) -> serde_json::Value {
        match self {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(*b),
            Json::Number(n) => serde_json::from_str(n).unwrap_or(serde_json::Value::Null),
            Json::String(s) => serde_json::Value::String(s.clone()),
            Json::Array(a) => serde_json::Value::Array(a.iter().map(Json::to_serde).collect()),
            Json::Object(m) => serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_serde())).collect()),
        }
    }

    /// Converts from serde_json (used when Gatehouse itself builds a payload to sign).
    pub fn from_serde(v: &serde_json::Value) -> Json {
        match v {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.to_string()),
            serde_json::Value::String(s) => Json::String(s.clone()),
            serde_json::Value::Array(a) => Json::Array(a.iter().map(Json::from_serde).collect()),
            serde_json::Value::Object(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), Json::from_serde(v))).collect()),
        }
    }
}

/// Parses one JSON document (RFC 8259), rejecting duplicate object keys.
pub fn parse(input: &[u8]) -> Result<Json, JsonError> {
    let text = std::str::from_utf8(input).map_err(|e| JsonError { message: "input is not valid UTF-8".into(), offset: e.valid_up_to() })?;
    let mut p = Parser { s: text.as_bytes(), text, pos: 0 };
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.err("unexpected data after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, message: &str) -> JsonError {
        JsonError { message: message.to_string(), offset: self.pos }
    }

    /// Moves past `n` bytes the caller has looked at: `pos` never passes the input's
    /// length, so the addition cannot wrap.
    fn bump(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n);
    }

    /// What is left to read.
    fn rest(&self) -> &'a [u8] {
        self.s.get(self.pos..).unwrap_or_default()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.bump(1);
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.s.get(self.pos) {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, JsonError> {
        if self.rest().starts_with(word.as_bytes()) {
            self.bump(word.len());
            Ok(v)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.bump(1);
        let mut members: Vec<(String, Json)> = Vec::new();
        // Small objects (every envelope) are checked by scanning; past that a hash set
        // keeps the duplicate check linear in the object's size, whatever a sender sends.
        let mut seen: Option<std::collections::HashSet<String>> = None;
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.bump(1);
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_ws();
            if self.s.get(self.pos) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let key_at = self.pos;
            let key = self.string()?;
            let duplicate = match &mut seen {
                Some(set) => !set.insert(key.clone()),
                None if members.len() < SCAN_KEYS => members.iter().any(|(k, _)| *k == key),
                None => {
                    let set = seen.insert(members.iter().map(|(k, _)| k.clone()).collect());
                    !set.insert(key.clone())
                }
            };
            if duplicate {
                return Err(JsonError { message: format!("duplicate key \"{key}\""), offset: key_at });
            }
            self.skip_ws();
            if self.s.get(self.pos) != Some(&b':') {
                return Err(self.err("expected ':'"));
            }
            self.bump(1);
            self.skip_ws();
            let v = self.value(depth.saturating_add(1))?;
            members.push((key, v));
            self.skip_ws();
            match self.s.get(self.pos) {
                Some(b',') => self.bump(1),
                Some(b'}') => {
                    self.bump(1);
                    return Ok(Json::Object(members));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        self.bump(1);
        let mut items = Vec::new();
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.bump(1);
            return Ok(Json::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth.saturating_add(1))?);
            self.skip_ws();
            match self.s.get(self.pos) {
                Some(b',') => self.bump(1),
                Some(b']') => {
                    self.bump(1);
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while let Some(b'0'..=b'9') = p.s.get(p.pos) {
                p.bump(1);
            }
            p.pos > from
        };
        if self.s.get(self.pos) == Some(&b'-') {
            self.bump(1);
        }
        match self.s.get(self.pos) {
            Some(b'0') => self.bump(1),
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.err("invalid number")),
        }
        if self.s.get(self.pos) == Some(&b'.') {
            self.bump(1);
            if !digits(self) {
                return Err(self.err("invalid number: digits expected after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.pos) {
            self.bump(1);
            if let Some(b'+' | b'-') = self.s.get(self.pos) {
                self.bump(1);
            }
            if !digits(self) {
                return Err(self.err("invalid number: digits expected in exponent"));
            }
        }
        // Both ends are at ASCII bytes the number grammar matched: character boundaries.
        let number = self.text.get(start..self.pos).ok_or_else(|| self.err("invalid number"))?;
        Ok(Json::Number(number.to_string()))
    }

    fn hex4(&mut self) -> Result<u16, JsonError> {
        let h = self.s.get(self.pos..self.pos.saturating_add(4)).ok_or_else(|| self.err("truncated \\u escape"))?;
        let h = std::str::from_utf8(h).map_err(|_| self.err("invalid \\u escape"))?;
        let v = u16::from_str_radix(h, 16).map_err(|_| self.err("invalid \\u escape"))?;
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.err("invalid \\u escape"));
        }
        self.bump(4);
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.bump(1); // opening quote
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(&b) = self.s.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.bump(1);
            }
            // The run stops at a quote, a backslash or a control byte (ASCII), or at the end:
            // a character boundary on both ends.
            out.push_str(self.text.get(run_start..self.pos).ok_or_else(|| self.err("unterminated string"))?);
            match self.s.get(self.pos) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.bump(1);
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.bump(1);
                    let c = *self.s.get(self.pos).ok_or_else(|| self.err("unterminated escape"))?;
                    self.bump(1);
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let ch = if (0xD800..0xDC00).contains(&hi) {
                                if !self.rest().starts_with(b"\\u") {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                self.bump(2);
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                // hi is D800–DBFF and lo DC00–DFFF: their low ten bits are the code
                                // point's, less 0x10000 (at most 0xFFFFF: the sum stays within u32).
                                let cp = ((u32::from(hi & 0x3FF) << 10) | u32::from(lo & 0x3FF)).saturating_add(0x10000);
                                char::from_u32(cp)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                None
                            } else {
                                char::from_u32(hi as u32)
                            };
                            out.push(ch.ok_or_else(|| self.err("unpaired surrogate in \\u escape"))?);
                        }
                        _ => {
                            self.pos = self.pos.saturating_sub(1);
                            return Err(self.err("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }
}

/// How numbers are written when serialising.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberStyle {
    /// Exactly as they arrived (what a sender whose serializer round-trips its own text signed).
    AsSent,
    /// As Python's `json.dumps` writes them after `json.loads` (the reference implementation).
    Python,
}

/// A compact serialisation variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub sort_keys: bool,
    /// Escape every non-ASCII character (and DEL) as \uXXXX, as Python's `ensure_ascii`.
    pub ascii: bool,
    pub numbers: NumberStyle,
}

impl Style {
    /// The form Gatehouse signs in and the reference implementation verifies.
    pub const REFERENCE: Style = Style { sort_keys: true, ascii: true, numbers: NumberStyle::Python };
}

/// Writes `v` compactly (no whitespace) in the given style.
pub fn to_compact(v: &Json, style: Style) -> String {
    let mut out = String::new();
    write_value(&mut out, v, style);
    out
}

fn write_value(out: &mut String, v: &Json, style: Style) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(true) => out.push_str("true"),
        Json::Bool(false) => out.push_str("false"),
        Json::Number(n) => match style.numbers {
            NumberStyle::AsSent => out.push_str(n),
            NumberStyle::Python => out.push_str(&python_number(n)),
        },
        Json::String(s) => write_string(out, s, style.ascii),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, style);
            }
            out.push(']');
        }
        Json::Object(members) => {
            let mut refs: Vec<&(String, Json)> = members.iter().collect();
            if style.sort_keys {
                // Python sorts str keys by code point; Rust's str order is byte order of
                // UTF-8, which is the same order.
                refs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (i, (k, val)) in refs.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k, style.ascii);
                out.push(':');
                write_value(out, val, style);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ascii && (c as u32) >= 0x7f => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", unit);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `json.dumps(json.loads(text))` for one number: integers keep every digit,
/// anything with a fraction or exponent becomes a float written by `repr`.
pub fn python_number(text: &str) -> String {
    if !text.contains(['.', 'e', 'E']) {
        // Python ints are arbitrary precision, so every digit survives; only the sign of
        // zero does not (int("-0") == 0).
        let neg = text.starts_with('-');
        let digits = text.trim_start_matches('-');
        return if neg && digits.bytes().all(|b| b == b'0') { "0".into() } else { text.into() };
    }
    let f: f64 = match text.parse() {
        Ok(f) => f,
        Err(_) => return text.into(),
    };
    python_float_repr(f)
}

/// `repr(float)` as CPython writes it: the shortest round-trip digits, positional when
/// the decimal exponent is in -4..16, otherwise scientific with a signed two-digit exponent.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "1.2345e-7".
    let sci = format!("{:e}", f);
    let (mantissa, exp) = sci.split_once('e').expect("LowerExp always has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let neg = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    // Decimal point position relative to the digit string (CPython's `decpt`).
    let decpt = exp.saturating_add(1);
    if (-4 < decpt) && (decpt <= 16) {
        let n = digits.len() as i32;
        if decpt <= 0 {
            format!("{sign}0.{}{}", "0".repeat(decpt.unsigned_abs() as usize), digits)
        } else if decpt >= n {
            format!("{sign}{}{}.0", digits, "0".repeat(decpt.saturating_sub(n) as usize))
        } else {
            let (a, b) = digits.split_at(decpt as usize);
            format!("{sign}{a}.{b}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let mant = if rest.is_empty() { first.to_string() } else { format!("{first}.{rest}") };
        let e = decpt.saturating_sub(1);
        format!("{sign}{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_duplicate_keys_even_nested() {
        let e = parse(br#"{"a":1,"b":{"c":1,"c":2}}"#).unwrap_err();
        assert!(e.message.contains("duplicate key \"c\""), "{e}");
        assert!(parse(br#"{"a":1,"a":1}"#).is_err());
    }

    #[test]
    fn duplicate_keys_are_found_in_large_objects_in_linear_time() {
        // 200,000 distinct keys took minutes with a scan per key; hashed, well under a second
        // even unoptimised. The duplicate at the end must still be found, wherever it is.
        let mut doc = String::from("{");
        for i in 0..200_000 {
            doc.push_str(&format!("\"k{i}\":0,"));
        }
        let ok = format!("{}\"last\":1}}", doc);
        let started = std::time::Instant::now();
        assert!(parse(ok.as_bytes()).is_ok());
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "took {:?}", started.elapsed());
        let dup = format!("{}\"k17\":1}}", doc);
        let e = parse(dup.as_bytes()).unwrap_err();
        assert!(e.message.contains("duplicate key \"k17\""), "{e}");
        let early = r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18}"#;
        assert!(parse(early.as_bytes()).unwrap_err().message.contains("duplicate key \"a\""));
    }

    #[test]
    fn keeps_number_text_and_key_order() {
        let v = parse(br#"{"z":1.50,"a":[1e2,-0,12345678901234567890123]}"#).unwrap();
        let as_sent = Style { sort_keys: false, ascii: false, numbers: NumberStyle::AsSent };
        assert_eq!(to_compact(&v, as_sent), r#"{"z":1.50,"a":[1e2,-0,12345678901234567890123]}"#);
        assert_eq!(to_compact(&v, Style::REFERENCE), r#"{"a":[100.0,0,12345678901234567890123],"z":1.5}"#);
    }

    #[test]
    fn python_float_repr_matches_cpython() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-10, "-2.5e-10"),
            (123.456, "123.456"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(python_float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn ascii_escaping_matches_python_ensure_ascii() {
        let v = Json::String("Café ☕ 🐑 \u{7f}\u{1}\u{2028}\"\\/".into());
        assert_eq!(to_compact(&v, Style::REFERENCE), r#""Caf\u00e9 \u2615 \ud83d\udc11 \u007f\u0001\u2028\"\\/""#);
    }

    #[test]
    fn rejects_malformed_input_with_position() {
        for bad in [&b"{"[..], b"[1,]", b"01", b"1.", b"\"\\x\"", b"\"\\ud800\"", b"{} x", b"\"a\nb\"", b"\xff"] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert!(parse(deep.as_bytes()).unwrap_err().message.contains("too deep"));
    }

    #[test]
    fn a_surrogate_pair_past_the_first_plane_decodes_to_its_own_character() {
        // U+20411: its high surrogate carries a bit the 0x10000 offset overlaps (a fuzz
        // finding: OR-ing the offset in read it as U+10411).
        assert_eq!(parse(br#""\ud841\udc11""#).unwrap(), Json::String("\u{20411}".into()));
        assert_eq!(parse(br#""\udbff\udfff""#).unwrap(), Json::String("\u{10FFFF}".into()));
        assert_eq!(parse(br#""\ud800\udc00""#).unwrap(), Json::String("\u{10000}".into()));
    }

    #[test]
    fn decodes_escapes_and_surrogate_pairs() {
        let v = parse(br#""\ud83d\udc11\u00e9\n\/""#).unwrap();
        assert_eq!(v, Json::String("🐑é\n/".into()));
    }
}
