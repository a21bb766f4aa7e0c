//! Every way an envelope can be malformed gets a precise error naming its field.

use gatehouse_uamp::{captoken, did, manifest, sign, verify, Code, Delta, Envelope, Intent, Manifest};
use serde_json::{json, Value};

fn key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[42; 32])
}

fn good() -> Value {
    let k = key();
    sign::sign(sign::draft(&sign::did_of(&k), &["did:web:inbox.example"], Intent::Ask, "text/plain", "hello"), &k)
}

fn refused(v: &Value) -> gatehouse_uamp::UampError {
    Envelope::parse(&serde_json::to_vec(v).unwrap()).expect_err("must be refused")
}

#[test]
fn a_signed_draft_reads_back_and_verifies() {
    let env = Envelope::parse(&serde_json::to_vec(&good()).unwrap()).unwrap();
    assert_eq!(env.intent, Intent::Ask);
    assert_eq!(env.delta_window, 64);
    assert_eq!(env.body.encoding, "utf-8");
    assert!(env.is_for("did:web:inbox.example"));
    verify::verify(&env, &verify::key_for(&env, &[]).unwrap()).unwrap();
}

/// One edit of an envelope's JSON.
type Change = Box<dyn Fn(&mut Value)>;

#[test]
fn each_malformation_names_its_field() {
    let cases: Vec<(&str, Change)> = vec![
        ("/sig", Box::new(|v| drop(v.as_object_mut().unwrap().remove("sig")))),
        ("/body", Box::new(|v| drop(v.as_object_mut().unwrap().remove("body")))),
        ("/body/content", Box::new(|v| v["body"]["content"] = json!(5))),
        ("/body/type", Box::new(|v| drop(v["body"].as_object_mut().unwrap().remove("type")))),
        ("/surprise", Box::new(|v| v["surprise"] = json!(1))),
        ("/intent", Box::new(|v| v["intent"] = json!("shout"))),
        ("/to", Box::new(|v| v["to"] = json!([]))),
        ("/to/0", Box::new(|v| v["to"] = json!(["not a uri"]))),
        ("/from", Box::new(|v| v["from"] = json!(7))),
        ("/ts", Box::new(|v| v["ts"] = json!("yesterday"))),
        ("/id", Box::new(|v| v["id"] = json!("urn:uuid:not-a-uuid"))),
        ("/reply_to", Box::new(|v| v["reply_to"] = json!("12"))),
        ("/delta_window", Box::new(|v| v["delta_window"] = json!(0))),
        ("/delta_window", Box::new(|v| v["delta_window"] = json!(1.5))),
        ("/context/0/hash", Box::new(|v| v["context"] = json!([{"id": "1b4e28ba-2fa1-11d2-883f-0016cb401bbc", "hash": "md5:00"}]))),
        ("/context/0/id", Box::new(|v| v["context"] = json!([{"hash": format!("sha256:{}", "a".repeat(64))}]))),
        ("/ext", Box::new(|v| v["ext"] = json!("x"))),
        ("/sig", Box::new(|v| v["sig"] = json!("abc"))),
    ];
    for (field, mutate) in cases {
        let mut v = good();
        mutate(&mut v);
        let e = refused(&v);
        assert_eq!(e.code, Code::BadRequest, "{field}: {e}");
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
        assert_eq!(e.code.http_status(), 400);
    }
}

#[test]
fn raw_input_that_is_not_an_envelope_is_refused_precisely() {
    let cases: &[&[u8]] = &[b"", b"{", b"[]", b"null", b"{\"id\":1,\"id\":2}", b"\xff\xfe", &[b'['; 100_000]];
    for c in cases {
        let e = Envelope::parse(c).unwrap_err();
        assert_eq!(e.code, Code::BadRequest);
        assert!(e.field.is_some());
    }
    let mut huge = good();
    huge["body"]["content"] = "x".repeat(gatehouse_uamp::MAX_ENVELOPE_BYTES).into();
    let e = refused(&huge);
    assert_eq!((e.code, e.code.http_status()), (Code::PayloadTooLarge, 413));
}

#[test]
fn any_change_after_signing_breaks_the_signature() {
    let base = good();
    let changes: Vec<Change> = vec![
        Box::new(|v| v["body"]["content"] = json!("hello!")),
        Box::new(|v| v["intent"] = json!("inform")),
        Box::new(|v| v["delta_window"] = json!(65)),
        Box::new(|v| v["to"] = json!(["did:web:other.example"])),
        Box::new(|v| v["ts"] = json!("2020-01-01T00:00:00Z")),
        Box::new(|v| v["ext"] = json!({})),
    ];
    for change in changes {
        let mut v = base.clone();
        change(&mut v);
        let env = Envelope::parse(&serde_json::to_vec(&v).unwrap()).unwrap();
        let e = verify::verify(&env, &verify::key_for(&env, &[]).unwrap()).unwrap_err();
        assert_eq!((e.code, e.reason), (Code::Unauthenticated, "invalid_signature"));
    }
    // Reordering members or adding whitespace is not a change.
    let text = serde_json::to_string_pretty(&base).unwrap();
    let env = Envelope::parse(text.as_bytes()).unwrap();
    verify::verify(&env, &verify::key_for(&env, &[]).unwrap()).unwrap();
}

#[test]
fn did_web_addresses() {
    assert_eq!(did::did_web_url("did:web:example.com").unwrap(), "https://example.com/.well-known/did.json");
    assert_eq!(did::did_web_url("did:web:example.com%3A8443:user:alice#k").unwrap(), "https://example.com:8443/user/alice/did.json");
    assert!(did::did_web_url("did:web:").is_err());
    assert!(did::did_web_url("did:web:evil.com@good.com").is_err());
    assert!(did::did_web_url("did:web:a.com:..:x").is_err());
    assert!(did::did_web_url("did:key:z6Mk").is_err());
}

#[test]
fn manifests_sign_verify_and_follow_schema_a3() {
    let k = key();
    let m = Manifest {
        agent: "uamp/1.0".into(),
        description: "Gatehouse".into(),
        intents: vec!["ask".into()],
        body_types: vec!["text/plain".into()],
        auth: vec!["oauth2".into(), "mtls".into()],
        limits: manifest::Limits { max_body_kb: Some(1024), rate_lph: None },
    };
    let signed = manifest::SignedManifest::parse(&m.sign(&k, &sign::kid_of(&k))).unwrap();
    assert_eq!(signed.manifest, m);
    let pk = did::resolve_did_key(&signed.kid).unwrap();
    assert!(signed.verify(&pk));
    assert!(!signed.verify(&did::PublicKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key())));
    let bad = Manifest::from_json(br#"{"agent":"uamp/2.0","description":"","intents":[],"body_types":[],"auth":[],"limits":{}}"#).unwrap_err();
    assert_eq!(bad.field.as_deref(), Some("/agent"));
    let bad = Manifest::from_json(br#"{"agent":"uamp/1.0","description":"","intents":[],"body_types":[],"auth":["basic"],"limits":{}}"#).unwrap_err();
    assert_eq!(bad.field.as_deref(), Some("/auth/0"));
}

#[test]
fn capability_tokens_check_audience_expiry_scope_and_signer() {
    let inbox = key();
    let inbox_pk = did::PublicKey::Ed25519(inbox.verifying_key());
    let kid = sign::kid_of(&inbox);
    let aud = sign::did_of(&inbox);
    let tok = |claims: Value| captoken::issue(&inbox, &kid, &claims);
    let ok = captoken::check(&tok(json!({"aud": aud, "exp": 2000, "scope": "ask  files.read"})), &[&aud], 1000, std::slice::from_ref(&inbox_pk)).unwrap();
    assert_eq!(ok.scopes, vec!["ask", "files.read"]);
    let aud_list = captoken::check(&tok(json!({"aud": ["x", aud], "exp": 2000})), &[&aud], 1000, std::slice::from_ref(&inbox_pk)).unwrap();
    assert!(aud_list.scopes.is_empty());
    let reason = |t: String| captoken::check(&t, &[&aud], 1000, std::slice::from_ref(&inbox_pk)).unwrap_err().reason;
    assert_eq!(reason(tok(json!({"aud": "did:web:other", "exp": 2000}))), "cap_token_audience");
    assert_eq!(reason(tok(json!({"exp": 2000}))), "cap_token_audience");
    assert_eq!(reason(tok(json!({"aud": aud, "exp": 1000}))), "cap_token_expired");
    assert_eq!(reason(tok(json!({"aud": aud}))), "cap_token_invalid");
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    assert_eq!(reason(captoken::issue(&stranger, "k", &json!({"aud": aud, "exp": 2000}))), "cap_token_invalid");
    assert_eq!(reason("oWFhAQ".into()), "cap_token_unsupported");
    let e = captoken::check("oWFhAQ", &[&aud], 1000, &[]).unwrap_err();
    assert_eq!(e.code, Code::Unauthorized);
}

#[test]
fn deltas_from_peers() {
    // C.2 style: no stream_id and no ts.
    let d = Delta::parse_from_peer(br#"{"delta_seq":1,"type":"chunk","payload":{"chunk_b64":"AA=="}}"#, "str-img").unwrap();
    assert_eq!((d.delta_seq, d.stream_id.as_str()), (1, "str-img"));
    let e = Delta::parse_from_peer(br#"{"type":"chunk"}"#, "s").unwrap_err();
    assert_eq!((e.code, e.code.http_status()), (Code::MissingDeltaSeq, 409));
    let e = Delta::parse_from_peer(br#"{"delta_seq":1,"stream_id":"other","type":"chunk"}"#, "s").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("/stream_id"));
    let e = Delta::parse_from_peer(br#"{"delta_seq":-1,"type":"chunk"}"#, "s").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("/delta_seq"));
    let e = Delta::parse_from_peer(br#"{"delta_seq":1,"type":"chunk","payload":[]}"#, "s").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("/payload"));
}
