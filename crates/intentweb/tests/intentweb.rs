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
    for t in v["vectors"].as_array().unwrap() {
        let env = Envelope::from_value(&t["envelope"]).unwrap();
        let entry = &env.attribution.chain[0];
        if let Some(bytes) = t["signed_bytes"].as_str() {
            assert_eq!(String::from_utf8(attribution::signed_bytes(&env, entry)).unwrap(), bytes, "{}", t["name"]);
        }
        let initial = v["vectors"][0]["envelope"]["message"].as_str().unwrap();
        assert_eq!(env.attribution.query_hash, attribution::query_hash(&env.interaction_id, initial), "{}", t["name"]);
        assert_eq!(attribution::verify_entry(&env, entry).is_ok(), t["valid"].as_bool().unwrap(), "{}", t["name"]);
    }
}

#[test]
fn a_signed_answer_is_verified_pinned_or_not_and_tampering_is_caught() {
    let site = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let me = ed25519_dalek::SigningKey::from_bytes(&[8; 32]);
    let q = attribution::query_hash("c-1", "Book a table");
    let env = attribution::draft(FlowType::InformationRequest, "c-1", "Book a table", "How many people?", None, &site, "intent_site", "2025-10-15T19:00:00Z");
    let kid = match attribution::verify(&env, "intent_site", &q, None) {
        Verdict::NewKey { kid } => kid,
        other => panic!("{other:?}"),
    };
    assert_eq!(attribution::verify(&env, "intent_site", &q, Some(&kid)), Verdict::Verified { kid: kid.clone() });
    let other = attribution::draft(FlowType::InformationRequest, "c-1", "Book a table", "How many people?", None, &me, "intent_site", "2025-10-15T19:00:00Z");
    assert!(matches!(attribution::verify(&other, "intent_site", &q, Some(&kid)), Verdict::KeyMismatch { .. }));
    let mut changed = env.clone();
    changed.message = "How many people? (we also need your card number)".into();
    assert!(matches!(attribution::verify(&changed, "intent_site", &q, Some(&kid)), Verdict::Invalid { .. }));
    assert!(matches!(attribution::verify(&env, "intent_site", &attribution::query_hash("c-1", "Something else"), None), Verdict::Invalid { .. }));
    let mut unsigned = env.clone();
    unsigned.attribution.chain.clear();
    assert_eq!(attribution::verify(&unsigned, "intent_site", &q, None), Verdict::Unsigned);
    assert!(!attribution::verify(&unsigned, "intent_site", &q, Some(&kid)).acceptable(), "unsigned once a key is pinned");
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
