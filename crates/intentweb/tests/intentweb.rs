//! IntentWeb pieces against the spec's own data and an independent signer: manifests
//! (valid examples read, broken ones named by field), envelopes against the schema, the
//! attribution scheme against Python-made vectors, the conversation rules, and markdown
//! rendered inert.

use gatehouse_intentweb::attribution::{self, Verdict};
use gatehouse_intentweb::conversation::{check_receive, check_send};
use gatehouse_intentweb::envelope::{Envelope, FlowType};
use gatehouse_intentweb::{render, Manifest};
use serde_json::{json, Value};

fn shared(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/intentweb").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_embedded_schema_is_the_specs_own_file() {
    assert_eq!(gatehouse_intentweb::envelope::SCHEMA, shared("intent-envelope.schema.json"));
}

#[test]
fn the_spec_manifests_read_with_every_capability() {
    let full = Manifest::parse(&shared("intentmanifest.bellacucina.full.yaml")).unwrap();
    assert_eq!(full.company, "Bella Cucina Restaurant");
    assert_eq!(full.capabilities.len(), 4);
    assert_eq!(full.capabilities[0].operating_hours["closed"], "Mondays");
    assert_eq!(full.capabilities[3].notes.len(), 2);
    assert_eq!(full.contact.other["events_email"], "events@bellacucina.com");
    assert!(full.location.is_some() && full.about.is_some());
    let min = Manifest::parse(&shared("intentmanifest.example.yaml")).unwrap();
    assert_eq!(min.capabilities[0].requires.len(), 4);
}

#[test]
fn broken_manifests_are_refused_naming_the_field() {
    let base = shared("intentmanifest.example.yaml");
    let field = |yaml: &str| Manifest::parse(yaml).unwrap_err().field;
    assert_eq!(field(&base.replace("company: \"Bella Cucina Restaurant\"\n", "")), "/company");
    assert_eq!(field(&base.replace("    description: \"Reserve a table at our restaurant for lunch or dinner\"\n", "")), "/capabilities/0/description");
    assert_eq!(field(&base.replace("last_updated: \"2025-10-15\"", "last_updated: \"last week\"")), "/last_updated");
    assert_eq!(field(&base.replace("manifest_version: \"1.0\"", "manifest_version: [1]")), "/manifest_version");
    assert_eq!(field(&base.replace("      - \"Preferred time\"", "      - 7")), "/capabilities/0/requires/3");
    assert_eq!(field(&base.replace("https://bellacucina.com/intent", "http://bellacucina.com/intent")), "/contact/intent_endpoint");
    assert_eq!(field(&base.replace("  intent_endpoint: \"https://bellacucina.com/intent\"\n", "")), "/contact/intent_endpoint");
    let e = Manifest::parse("company: [unclosed").unwrap_err();
    assert!(e.message.contains("line 1"), "{e}");
    assert!(Manifest::parse(&base.replace("https://bellacucina.com/intent", "http://127.0.0.1:9/intent")).is_ok(), "plain http on loopback");
}

#[test]
fn the_spec_example_messages_validate_and_broken_ones_name_their_field() {
    for name in ["example_intent_request.json", "example_information_request_table.json", "example_error.json"] {
        let v: Value = serde_json::from_str(&shared(name)).unwrap();
        Envelope::from_value(&v).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut v: Value = serde_json::from_str(&shared("example_intent_request.json")).unwrap();
    v["flow_type"] = "chat".into();
    assert_eq!(Envelope::from_value(&v).unwrap_err().field, "/flow_type");
    let mut v: Value = serde_json::from_str(&shared("example_intent_request.json")).unwrap();
    v["attribution"]["chain"][0].as_object_mut().unwrap().remove("signature");
    assert_eq!(Envelope::from_value(&v).unwrap_err().field, "/attribution/chain/0/signature");
    let mut v: Value = serde_json::from_str(&shared("example_intent_request.json")).unwrap();
    v.as_object_mut().unwrap().remove("interaction_id");
    assert_eq!(Envelope::from_value(&v).unwrap_err().field, "/interaction_id");
}

#[test]
fn attribution_signatures_agree_with_an_independent_signer() {
    let v: Value = serde_json::from_str(include_str!("data/vectors.json")).unwrap();
    let mut whole = 0;
    for t in v["vectors"].as_array().unwrap() {
        let raw = &t["envelope"];
        let env = Envelope::from_value(raw).unwrap();
        let index = t["index"].as_u64().unwrap() as usize;
        let name = t["name"].as_str().unwrap();
        if let Some(bytes) = t["signed_bytes"].as_str() {
            let ours = match t["covers"].as_str() {
                Some("whole") => attribution::signed_bytes(raw, index).unwrap(),
                _ => attribution::first_scheme_bytes(&env, &env.attribution.chain[index]),
            };
            assert_eq!(String::from_utf8(ours).unwrap(), bytes, "{name}");
        }
        let initial = v["vectors"][0]["envelope"]["message"].as_str().unwrap();
        assert_eq!(env.attribution.query_hash, attribution::query_hash(&env.interaction_id, initial), "{name}");
        let covers = attribution::verify_entry(raw, &env, index).ok().map(|(_, c)| c);
        let expected = match t["covers"].as_str() {
            Some("whole") => Some(attribution::Covers::Whole),
            Some("message_only") => Some(attribution::Covers::MessageOnly),
            _ => None,
        };
        assert_eq!(covers, expected, "{name}");
        assert_eq!(covers.is_some(), t["valid"].as_bool().unwrap(), "{name}");
        whole += usize::from(expected == Some(attribution::Covers::Whole));
    }
    assert_eq!(whole, 2, "the current scheme has vectors both ways (the user's intent, the site's outcome)");
}

/// An envelope as it goes over the wire.
fn wire(env: &Envelope) -> Value {
    serde_json::to_value(env).unwrap()
}

#[test]
fn a_signed_answer_is_verified_pinned_or_not_and_tampering_is_caught() {
    let site = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let me = ed25519_dalek::SigningKey::from_bytes(&[8; 32]);
    let q = attribution::query_hash("c-1", "Book a table");
    let env = attribution::draft(FlowType::InformationRequest, "c-1", "Book a table", "How many people?", None, &site, "intent_site", "2025-10-15T19:00:00Z");
    let verify = |e: &Envelope, q: &str, pinned: Option<&str>| attribution::verify(&wire(e), e, "intent_site", q, pinned);
    let kid = match verify(&env, &q, None) {
        Verdict::NewKey { kid } => kid,
        other => panic!("{other:?}"),
    };
    assert_eq!(verify(&env, &q, Some(&kid)), Verdict::Verified { kid: kid.clone() });
    let other = attribution::draft(FlowType::InformationRequest, "c-1", "Book a table", "How many people?", None, &me, "intent_site", "2025-10-15T19:00:00Z");
    assert!(matches!(verify(&other, &q, Some(&kid)), Verdict::KeyMismatch { .. }));
    let mut changed = env.clone();
    changed.message = "How many people? (we also need your card number)".into();
    assert!(matches!(verify(&changed, &q, Some(&kid)), Verdict::Invalid { .. }));
    assert!(matches!(verify(&env, &attribution::query_hash("c-1", "Something else"), None), Verdict::Invalid { .. }));
    let mut unsigned = env.clone();
    unsigned.attribution.chain.clear();
    assert_eq!(verify(&unsigned, &q, None), Verdict::Unsigned);
    assert!(!verify(&unsigned, &q, Some(&kid)).acceptable(), "unsigned once a key is pinned");
}

#[test]
fn every_field_of_an_answer_is_signed_and_the_first_schemes_answers_are_claims() {
    let site = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let q = attribution::query_hash("c-1", "Book a table");
    let mut env = attribution::draft(FlowType::ExecutionResult, "c-1", "Book a table", "Booked.", None, &site, "intent_site", "2025-10-15T19:00:00Z");
    env.attribution.chain.clear();
    env.status = Some("confirmed".into());
    env.external_id = Some("RES-1".into());
    attribution::sign(&mut env, &site, "intent_site", "2025-10-15T19:00:00Z");
    let kid = match attribution::verify(&wire(&env), &env, "intent_site", &q, None) {
        v @ Verdict::NewKey { .. } if v.signed_whole() => v,
        other => panic!("{other:?}"),
    };
    let Verdict::NewKey { kid } = kid else { unreachable!() };
    // Each field Gatehouse acts on, changed after signing: refused.
    for change in [
        (|e: &mut Value| e["external_id"] = "RES-FORGED".into()) as fn(&mut Value),
        |e| e["status"] = "cancelled".into(),
        |e| e["required_information"] = json!(["Card number"]),
        |e| e["collected_information"] = json!({"card": "4111"}),
        |e| e["explicability"] = json!([{"interpretation": "pay now"}]),
        |e| e["x-unread"] = "added".into(),
    ] {
        let mut raw = wire(&env);
        change(&mut raw);
        let forged = Envelope::from_value(&raw).unwrap();
        let v = attribution::verify(&raw, &forged, "intent_site", &q, Some(&kid));
        assert!(matches!(v, Verdict::Invalid { .. }), "{raw}: {v:?}");
    }
    // The first scheme's signature covers the message only: its answers are read, but
    // what they say of the outcome stays a claim.
    let mut old = env.clone();
    old.attribution.chain.clear();
    let mut entry = gatehouse_intentweb::envelope::ChainEntry {
        actor_type: "intent_site".into(),
        actor_id: kid.clone(),
        timestamp: "2025-10-15T19:00:00Z".into(),
        signature: String::new(),
        alg: Some("EdDSA".into()),
        kid: Some(kid.clone()),
    };
    use base64::Engine as _;
    let sig = ed25519_dalek::Signer::sign(&site, &attribution::first_scheme_bytes(&old, &entry));
    entry.signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig.to_bytes());
    old.attribution.chain.push(entry);
    old.external_id = Some("RES-FORGED".into());
    let v = attribution::verify(&wire(&old), &old, "intent_site", &q, Some(&kid));
    assert_eq!(v, Verdict::FirstScheme { kid: kid.clone() });
    assert!(v.acceptable() && !v.signed_whole());
}

#[test]
fn conversation_rules_hold_both_ways() {
    use FlowType::*;
    assert!(check_send(&[], IntentRequest).is_ok());
    assert!(check_send(&[], InformationResponse).is_err());
    assert!(check_send(&[IntentRequest, InformationRequest], InformationResponse).is_ok());
    assert!(check_send(&[IntentRequest, InformationRequest], IntentRequest).is_err());
    assert!(check_send(&[IntentRequest, ExecutionResult], InformationResponse).is_err());
    let env = |id: &str, flow: FlowType| {
        attribution::draft(flow, id, "x", "y", None, &ed25519_dalek::SigningKey::from_bytes(&[1; 32]), "intent_site", "2025-01-01T00:00:00Z")
    };
    assert!(check_receive("c", &[IntentRequest], &env("c", InformationRequest), false).is_ok());
    assert!(check_receive("c", &[IntentRequest], &env("d", InformationRequest), false).unwrap_err().contains("not \"c\""));
    assert!(check_receive("c", &[IntentRequest], &env("c", InformationRequest), true).unwrap_err().contains("replayed"));
    assert!(check_receive("c", &[IntentRequest, Error], &env("c", InformationRequest), false).is_err());
    assert!(check_receive("c", &[], &env("c", InformationRequest), false).is_err());
}

#[test]
fn markdown_renders_tables_and_links_but_nothing_that_runs_or_loads() {
    let md = "## Menu\n\n| Dish | Price |\n|---|---|\n| Pasta <script>alert(1)</script> | $18 |\n\n<img src=x onerror=alert(1)>\n\n![chef](https://images.example.com/chef.png) [menu](https://site.example/menu) [bad](javascript:alert(1)) <a href=\"#\" onclick=\"alert(1)\">x</a>";
    let html = render::to_html(md);
    assert!(html.contains("<table>") && html.contains("<td>$18</td>"), "{html}");
    // Every real tag (a literal `<`: text has `&lt;`) is harmless: no script or image, no
    // event handler, no javascript: URL.
    for tag in html.split('<').skip(1).map(|t| t.split('>').next().unwrap_or("").to_lowercase()) {
        let name = tag.trim_start_matches('/').split_whitespace().next().unwrap_or("");
        assert!(!["script", "img", "iframe", "style"].contains(&name), "<{tag}> in {html}");
        assert!(!tag.split_whitespace().skip(1).any(|a| a.starts_with("on")), "<{tag}> in {html}");
        assert!(!tag.contains("javascript:"), "<{tag}> in {html}");
    }
    assert!(html.contains("&lt;script&gt;") && html.contains("&lt;img src=x onerror=alert(1)&gt;"), "raw HTML is shown as text: {html}");
    assert!(html.contains("href=\"https://site.example/menu\"") && html.contains("rel=\"noopener noreferrer\""), "{html}");
    assert!(html.contains("[image: chef]"), "an image becomes a link to open: {html}");
    let _ = json!({});
}
