//! The Agent Card this gate serves at [`crate::CARD_PATH`], and the bytes its signature
//! covers: the card without `signatures`, empty strings, lists and objects removed, in
//! RFC 8785 (JCS) form — what `a2a-sdk`'s `create_signature_verifier` checks.

use serde_json::{json, Map, Value};

/// What the card says of this agent.
pub struct About<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// The JSON-RPC endpoint, whole (`https://host:port/a2a`).
    pub url: &'a str,
    pub version: &'a str,
}

/// The card, unsigned. Callers authenticate with a bearer token the user issued or a
/// client certificate (mTLS); the card names both.
pub fn card(about: &About<'_>) -> Value {
    json!({
        "name": about.name,
        "description": about.description,
        "supportedInterfaces": [{"url": about.url, "protocolBinding": "JSONRPC", "protocolVersion": crate::VERSION}],
        "version": about.version,
        "capabilities": {"streaming": true, "pushNotifications": false},
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "a token the user of this gate issued to you"}},
            "mtls": {"mtlsSecurityScheme": {"description": "a client certificate: its key is who you are to this gate"}}
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}, {"schemes": {"mtls": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "ask",
            "name": "Ask this person's AI",
            "description": "A message for the AI of the person this gate belongs to. They decide who may reach it: a new agent waits for their consent.",
            "tags": ["gatehouse", "consent"]
        }]
    })
}

/// What a signature over `card` signs: the canonical form `a2a-sdk` computes.
pub fn signing_input(card: &Value) -> String {
    let mut c = card.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("signatures");
    }
    let mut out = String::new();
    if let Some(v) = clean(&c) {
        jcs(&v, &mut out);
    }
    out
}

/// Drops empty strings, lists and objects, bottom up.
fn clean(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) => {
            let kept: Vec<Value> = a.iter().filter_map(clean).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(o) => {
            let kept: Map<String, Value> = o.iter().filter_map(|(k, v)| clean(v).map(|v| (k.clone(), v))).collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// RFC 8785: members sorted by their names' UTF-16 code units, no whitespace; strings as
/// ECMAScript writes them (serde_json's escaping is the same for what a card holds).
fn jcs(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                if let Some(v) = o.get(*k) {
                    jcs(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                jcs(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_form_drops_empties_and_signatures_and_sorts_members() {
        let c = json!({"b": [], "a": {"x": "", "y": 1}, "signatures": [{"protected": "p"}], "é": true, "Z": {"list": []}});
        assert_eq!(signing_input(&c), r#"{"a":{"y":1},"é":true}"#);
        let card = card(&About { name: "G", description: "d", url: "https://127.0.0.1:1/a2a", version: "1" });
        let signed = signing_input(&card);
        // The empty StringLists leave nothing of the requirements, as the SDK cleans them.
        assert!(!signed.contains("securityRequirements"), "{signed}");
        assert!(signed.starts_with(r#"{"capabilities":{"pushNotifications":false,"streaming":true}"#), "{signed}");
    }
}
