//! Capability tokens (spec 6.2): a JWT whose `aud` must name this inbox, whose `exp` must
//! be in the future, and whose `scope` (space-separated, as OAuth) the sender's policy
//! must allow. Its signature must come from the sender's own key or from this inbox's
//! key (a token the user's Gatehouse issued). CWT tokens are refused with a clear reason.

use serde_json::Value;

use crate::did::PublicKey;
use crate::error::{Code, UampError};
use crate::jws::Compact;

#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    pub aud: Vec<String>,
    pub exp: i64,
    pub scopes: Vec<String>,
    pub iss: Option<String>,
    pub sub: Option<String>,
}

fn refuse(reason: &'static str, message: impl Into<String>) -> UampError {
    UampError::new(Code::Unauthorized, reason, message)
}

/// Checks `token` for `audiences` (any of them names this inbox) at `now` (Unix seconds).
pub fn check(token: &str, audiences: &[&str], now: i64, keys: &[PublicKey]) -> Result<Claims, UampError> {
    if token.matches('.').count() != 2 {
        return Err(refuse("cap_token_unsupported", "cap_token is not a JWT (compact JWS); CWT tokens are not supported by this inbox"));
    }
    let jws = Compact::parse(token).map_err(|e| refuse("cap_token_invalid", format!("cap_token: {e}")))?;
    if !keys.iter().any(|k| jws.verify(&jws.payload(), k)) {
        return Err(refuse("cap_token_invalid", "cap_token's signature is not from the sender's key or this inbox's key"));
    }
    let claims: Value = serde_json::from_slice(&jws.payload()).map_err(|_| refuse("cap_token_invalid", "cap_token's claims are not JSON"))?;
    let aud = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        _ => return Err(refuse("cap_token_audience", "cap_token has no aud claim")),
    };
    if !aud.iter().any(|a| audiences.contains(&a.as_str())) {
        return Err(refuse("cap_token_audience", format!("cap_token is for {aud:?}, not this inbox")));
    }
    let exp = claims.get("exp").and_then(|v| v.as_i64()).ok_or_else(|| refuse("cap_token_invalid", "cap_token has no numeric exp claim"))?;
    if exp <= now {
        return Err(refuse("cap_token_expired", format!("cap_token expired at {exp} (now {now})")));
    }
    let scopes = claims.get("scope").and_then(|v| v.as_str()).map(|s| s.split_whitespace().map(str::to_string).collect()).unwrap_or_default();
    let text = |k: &str| claims.get(k).and_then(|v| v.as_str()).map(str::to_string);
    Ok(Claims { aud, exp, scopes, iss: text("iss"), sub: text("sub") })
}

/// Issues a token signed by this inbox (used for tests and for the app to hand a peer).
pub fn issue(key: &ed25519_dalek::SigningKey, kid: &str, claims: &Value) -> String {
    crate::jws::sign_eddsa(&serde_json::to_vec(claims).expect("claims serialise"), key, kid, Some("JWT"), false)
}
