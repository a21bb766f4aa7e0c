//! The shapes of EPP v1.1's fields as the reference's own models (pydantic) check them:
//! a field that model refuses is malformed here too (INVALID_FORMAT), whatever else it
//! says. Only shapes: none of these fields is signed, so passing here makes nothing true.
//! Linear in the field's size; nothing here panics on what a sender wrote.

use serde_json::Value;

/// The protocols the reference's capabilities model knows (compared case-insensitively).
const PROTOCOLS: [&str; 7] = ["http", "https", "ws", "wss", "tcp", "udp", "grpc"];

/// Why a v1.1 field is malformed, naming the part (`capabilities.network.protocols[0]`).
pub type Malformed = String;

fn bad<T>(at: &str, why: impl std::fmt::Display) -> Result<T, Malformed> {
    Err(format!("{at}: {why}"))
}

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_key_hex(s: &str) -> bool {
    s.len() == 64 && is_hex(s)
}

/// `[A-Za-z0-9]` plus the listed extra bytes, at least one byte.
fn word(s: &str, extra: &[u8]) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

/// A decimal the way Python's `Decimal` reads one (sign, digits, point, exponent, or
/// infinity), with whether it is above zero. NaN compares with nothing, so the
/// reference's "must be positive" refuses it; here it is no number at all.
fn decimal(s: &str) -> Option<bool> {
    let t = s.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, t.get(1..)?),
        Some(b'+') => (false, t.get(1..)?),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(!neg);
    }
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m.to_string(), Some(e.to_string())),
        None => (lower, None),
    };
    if let Some(e) = exponent {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(&e);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    let (int, frac) = mantissa.split_once('.').unwrap_or((&mantissa, ""));
    let digits_only = |p: &str| p.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if (int.is_empty() && frac.is_empty()) || !digits_only(int) || !digits_only(frac) {
        return None;
    }
    let nonzero = int.bytes().chain(frac.bytes()).any(|b| (b'1'..=b'9').contains(&b));
    Some(nonzero && !neg)
}

/// An ISO-8601 time as Python's `datetime.fromisoformat` takes it (after `Z` → `+00:00`).
fn iso8601(s: &str) -> bool {
    let t = s.replacen('Z', "+00:00", 1);
    chrono::DateTime::parse_from_rfc3339(&t).is_ok()
        || chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
        || chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%dT%H:%M:%S%.f%:z").is_ok()
        || chrono::NaiveDate::parse_from_str(&t, "%Y-%m-%d").is_ok()
}

fn object<'v>(v: &'v Value, at: &str) -> Result<&'v serde_json::Map<String, Value>, Malformed> {
    v.as_object().map_or_else(|| bad(at, "is not an object"), Ok)
}

fn text<'v>(o: &'v serde_json::Map<String, Value>, at: &str, name: &str, required: bool) -> Result<Option<&'v str>, Malformed> {
    match o.get(name) {
        None | Some(Value::Null) if !required => Ok(None),
        None | Some(Value::Null) => bad(&format!("{at}.{name}"), "is required"),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => bad(&format!("{at}.{name}"), "is not a string"),
    }
}

fn strings<'v>(o: &'v serde_json::Map<String, Value>, at: &str, name: &str) -> Result<Vec<&'v str>, Malformed> {
    match o.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(xs)) => {
            xs.iter().enumerate().map(|(i, x)| x.as_str().map_or_else(|| bad(&format!("{at}.{name}[{i}]"), "is not a string"), Ok)).collect()
        }
        Some(_) => bad(&format!("{at}.{name}"), "is not a list"),
    }
}

fn integer(o: &serde_json::Map<String, Value>, at: &str, name: &str) -> Result<(), Malformed> {
    match o.get(name) {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.is_i64() || v.is_u64() => Ok(()),
        Some(_) => bad(&format!("{at}.{name}"), "is not an integer"),
    }
}

fn amount(o: &serde_json::Map<String, Value>, at: &str, positive: bool) -> Result<(), Malformed> {
    let a = text(o, at, "amount", true)?.unwrap_or_default();
    match decimal(a) {
        None => bad(&format!("{at}.amount"), format!("{a:?} is not a decimal number")),
        Some(false) if positive => bad(&format!("{at}.amount"), format!("{a:?} is not above zero")),
        Some(_) => Ok(()),
    }
}

fn time(o: &serde_json::Map<String, Value>, at: &str, name: &str, required: bool) -> Result<(), Malformed> {
    match text(o, at, name, required)? {
        Some(t) if !iso8601(t) => bad(&format!("{at}.{name}"), format!("{t:?} is not an ISO-8601 time")),
        _ => Ok(()),
    }
}

pub fn integrity(v: &Value) -> Result<(), Malformed> {
    let at = "integrity";
    let o = object(v, at)?;
    if let Some(alg) = text(o, at, "alg", false)? {
        if !["sha256", "sha384", "sha512"].contains(&alg) {
            return bad("integrity.alg", format!("{alg:?} is not sha256, sha384 or sha512"));
        }
    }
    match text(o, at, "hash", true)? {
        Some(h) if !is_hex(h) => bad("integrity.hash", "is not hexadecimal"),
        _ => Ok(()),
    }
}

pub fn capabilities(v: &Value) -> Result<(), Malformed> {
    let at = "capabilities";
    let o = object(v, at)?;
    if let Some(fs) = o.get("filesystem").filter(|v| !v.is_null()) {
        let fo = object(fs, "capabilities.filesystem")?;
        for side in ["read", "write"] {
            for (i, p) in strings(fo, "capabilities.filesystem", side)?.into_iter().enumerate() {
                if p.chars().any(|c| (c as u32) < 32) {
                    return bad(&format!("capabilities.filesystem.{side}[{i}]"), "holds a control character");
                }
            }
        }
    }
    if let Some(net) = o.get("network").filter(|v| !v.is_null()) {
        let no = object(net, "capabilities.network")?;
        for (i, d) in strings(no, "capabilities.network", "domains")?.into_iter().enumerate() {
            if !word(d, b"-.*") {
                return bad(&format!("capabilities.network.domains[{i}]"), format!("{d:?} is not a domain pattern"));
            }
        }
        for (i, p) in strings(no, "capabilities.network", "protocols")?.into_iter().enumerate() {
            if !PROTOCOLS.contains(&p.to_ascii_lowercase().as_str()) {
                return bad(&format!("capabilities.network.protocols[{i}]"), format!("{p:?} is not one of {}", PROTOCOLS.join(", ")));
            }
        }
        match no.get("ports") {
            None | Some(Value::Null) => {}
            Some(Value::Array(ps)) => {
                for (i, p) in ps.iter().enumerate() {
                    if p.as_u64().is_none_or(|n| n > u64::from(u16::MAX)) {
                        return bad(&format!("capabilities.network.ports[{i}]"), "is not a port number");
                    }
                }
            }
            Some(_) => return bad("capabilities.network.ports", "is not a list"),
        }
    }
    for (i, a) in strings(o, at, "actions")?.into_iter().enumerate() {
        if a != "*" && !word(a, b"_-:") {
            return bad(&format!("capabilities.actions[{i}]"), format!("{a:?} is not an action identifier"));
        }
    }
    for (i, d) in strings(o, at, "data_access")?.into_iter().enumerate() {
        let (resource, permission) = d.split_once(':').map_or((d, None), |(r, p)| (r, Some(p)));
        if d != "*" && (!word(resource, b"_-") || permission.is_some_and(|p| !word(p, b"_-*"))) {
            return bad(&format!("capabilities.data_access[{i}]"), format!("{d:?} is not a data scope (resource or resource:permission)"));
        }
    }
    match o.get("custom") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(_) => bad("capabilities.custom", "is not an object"),
    }
}

pub fn provenance(v: &Value) -> Result<(), Malformed> {
    let at = "provenance";
    let o = object(v, at)?;
    match text(o, at, "content_hash", true)? {
        Some(h) if !is_hex(h) => return bad("provenance.content_hash", "is not hexadecimal"),
        _ => {}
    }
    let entries = match o.get("entries") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(es)) => es,
        Some(_) => return bad("provenance.entries", "is not a list"),
    };
    for (i, e) in entries.iter().enumerate() {
        let at = format!("provenance.entries[{i}]");
        let eo = object(e, &at)?;
        let role = text(eo, &at, "role", true)?.unwrap_or_default();
        if !word(role, b"_-") {
            return bad(&format!("{at}.role"), format!("{role:?} is not a role name"));
        }
        if !is_key_hex(text(eo, &at, "identity", true)?.unwrap_or_default()) {
            return bad(&format!("{at}.identity"), "is not a 64-character hex public key");
        }
        time(eo, &at, "timestamp", true)?;
        text(eo, &at, "signature", true)?;
        text(eo, &at, "statement", false)?;
        text(eo, &at, "parent_hash", false)?;
    }
    Ok(())
}

pub fn payment(v: &Value) -> Result<(), Malformed> {
    let at = "payment";
    let o = object(v, at)?;
    amount(o, at, true)?;
    let currency = text(o, at, "currency", true)?.unwrap_or_default().to_ascii_uppercase();
    if !(2..=10).contains(&currency.len()) || !word(&currency, b"") {
        return bad("payment.currency", format!("{currency:?} is not a currency code"));
    }
    if !word(text(o, at, "recipient", true)?.unwrap_or_default(), b"._-") {
        return bad("payment.recipient", "is not a wallet address");
    }
    let chain = text(o, at, "chain", true)?.unwrap_or_default().to_ascii_lowercase();
    if !word(&chain, b"-") {
        return bad("payment.chain", format!("{chain:?} is not a chain name"));
    }
    if let Some(r) = o.get("required").filter(|v| !v.is_null()) {
        if !r.is_boolean() {
            return bad("payment.required", "is not true or false");
        }
    }
    text(o, at, "memo", false)?;
    integer(o, at, "min_confirmations")?;
    time(o, at, "expires_at", false)
}

pub fn payment_proof(v: &Value) -> Result<(), Malformed> {
    let at = "payment_proof";
    let o = object(v, at)?;
    let tx = text(o, at, "tx_hash", true)?.unwrap_or_default();
    let base58 = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() && !b"0OIl".contains(&b));
    let ok = match tx.strip_prefix("0x") {
        Some(h) => is_key_hex(h),
        None => (64..=88).contains(&tx.len()) && base58(tx),
    };
    if !ok {
        return bad("payment_proof.tx_hash", "is neither an EVM (0x + 64 hex) nor a Solana transaction hash");
    }
    amount(o, at, false)?;
    for name in ["chain", "currency", "payer", "recipient"] {
        text(o, at, name, true)?;
    }
    integer(o, at, "block")?;
    integer(o, at, "confirmations")?;
    time(o, at, "timestamp", false)
}

pub fn stake(v: &Value) -> Result<(), Malformed> {
    let at = "stake";
    let o = object(v, at)?;
    let contract = text(o, at, "contract", true)?.unwrap_or_default();
    if contract.starts_with("0x") && contract.len() != 42 {
        return bad("stake.contract", "is not an EVM contract address (0x + 40 hex)");
    }
    text(o, at, "chain", true)?;
    text(o, at, "currency", true)?;
    amount(o, at, true)?;
    if !is_key_hex(text(o, at, "staker", true)?.unwrap_or_default()) {
        return bad("stake.staker", "is not a 64-character hex public key");
    }
    for name in ["stake_id", "staked_at", "unlock_at", "slash_conditions"] {
        text(o, at, name, false)?;
    }
    Ok(())
}

/// A check of one v1.1 field's shape.
pub type Check = fn(&Value) -> Result<(), Malformed>;

/// The check for a v1.1 field by name; None for a field v1.1 does not define.
pub fn of(name: &str) -> Option<Check> {
    Some(match name {
        "integrity" => integrity,
        "capabilities" => capabilities,
        "provenance" => provenance,
        "payment" => payment,
        "payment_proof" => payment_proof,
        "stake" => stake,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decimals_read_as_python_reads_them() {
        for (s, want) in [("1", Some(true)), ("0.50", Some(true)), ("1e3", Some(true)), ("-1", Some(false)), ("0", Some(false)), ("0.000", Some(false))] {
            assert_eq!(decimal(s), want, "{s}");
        }
        for s in ["", "abc", "1..2", "NaN", "1e", "-", "."] {
            assert_eq!(decimal(s), None, "{s}");
        }
    }

    #[test]
    fn what_the_reference_refuses_is_malformed() {
        assert!(capabilities(&json!({"network": {"protocols": ["gopher"]}})).unwrap_err().contains("protocols[0]"));
        assert!(capabilities(&json!({"network": {"protocols": ["HTTPS"], "domains": ["*.shop.example"]}})).is_ok());
        assert!(capabilities(&json!({"actions": ["rm -rf"]})).is_err());
        assert!(capabilities(&json!({"data_access": ["contacts:read", "*"]})).is_ok());
        assert!(payment(&json!({"amount": "-1", "currency": "USDC", "recipient": "0xabc", "chain": "base"})).unwrap_err().contains("above zero"));
        assert!(payment(&json!({"amount": "0.50", "currency": "USDC", "recipient": "0xabc", "chain": "base"})).is_ok());
        assert!(stake(&json!({"contract": "c", "chain": "base", "amount": "1", "currency": "ETH", "staker": "zz"})).unwrap_err().contains("staker"));
        assert!(integrity(&json!({"alg": "sha256", "hash": "nothex"})).unwrap_err().contains("hexadecimal"));
        assert!(integrity(&json!({"alg": "md5", "hash": "ab"})).is_err());
        assert!(provenance(
            &json!({"content_hash": "ab", "entries": [{"role": "author", "identity": "xyz", "timestamp": "2026-01-01T00:00:00Z", "signature": "s"}]})
        )
        .unwrap_err()
        .contains("identity"));
        assert!(provenance(&json!({"content_hash": "g1"})).is_err());
    }
}
