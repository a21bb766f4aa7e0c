//! UAMP signatures from an independent implementation (tests/data/make_vectors.py, Python
//! `cryptography`) and the spec's own Appendix A schemas and C.1 example.

use std::path::Path;

use gatehouse_uamp::did::{self, PublicKey};
use gatehouse_uamp::{canonical, verify, Code, Envelope};
use serde_json::Value;

fn vectors() -> Value {
    serde_json::from_str(include_str!("data/vectors.json")).unwrap()
}

fn shared(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vectors/uamp").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The verdict Gatehouse reaches on one vector: "valid" or the failing reason.
fn verdict(v: &Value) -> (String, Option<String>) {
    let bytes = serde_json::to_vec(&v["envelope"]).unwrap();
    let env = match Envelope::parse(&bytes) {
        Ok(e) => e,
        Err(e) => return (e.reason.to_string(), e.field),
    };
    let known = match v.get("did_document") {
        Some(doc) => did::keys_from_document(&env.from, doc).unwrap(),
        None => Vec::new(),
    };
    let key = match verify::key_for(&env, &known) {
        Ok(k) => k,
        Err(e) => return (e.reason.to_string(), None),
    };
    match verify::verify(&env, &key) {
        Ok(()) => ("valid".into(), None),
        Err(e) => {
            assert_eq!(e.code, Code::Unauthenticated);
            (e.reason.to_string(), None)
        }
    }
}

#[test]
fn every_independent_vector_gets_its_verdict() {
    let all = vectors();
    let list = all["vectors"].as_array().unwrap();
    assert!(list.len() >= 17);
    for v in list {
        let (got, field) = verdict(v);
        assert_eq!(got, v["expect"].as_str().unwrap(), "vector {}", v["name"]);
        if let Some(f) = v.get("field") {
            assert_eq!(field.as_deref(), f.as_str(), "vector {}", v["name"]);
        }
    }
    // Both algorithms were exercised, valid and invalid.
    for alg in ["eddsa", "es256"] {
        for expect in ["valid", "invalid_signature"] {
            assert!(list.iter().any(|v| v["name"].as_str().unwrap().starts_with(alg) && v["expect"] == expect), "{alg} {expect}");
        }
    }
}

#[test]
fn canonical_json_is_byte_for_byte_what_python_hashed() {
    for v in vectors()["vectors"].as_array().unwrap() {
        if v["expect"] != "valid" || v.get("note").is_some() {
            continue;
        }
        let env = Envelope::parse(&serde_json::to_vec(&v["envelope"]).unwrap()).unwrap();
        assert_eq!(canonical::sha256_hex(&canonical::canonical(&env.raw)), v["canonical_sha256"].as_str().unwrap(), "vector {}", v["name"]);
    }
}

#[test]
fn did_keys_agree_with_the_independent_encoder() {
    let keys = vectors()["keys"].clone();
    for k in ["ed25519", "p256"] {
        let key = PublicKey::from_jwk(&keys[k]["jwk"]).unwrap();
        assert_eq!(key.did_key(), keys[k]["did"].as_str().unwrap());
        assert_eq!(did::resolve_did_key(keys[k]["did"].as_str().unwrap()).unwrap(), key);
        assert_eq!(PublicKey::from_jwk(&key.to_jwk()).unwrap(), key);
    }
}

#[test]
fn the_embedded_schemas_are_the_spec_appendix_a_copies() {
    for name in ["envelope-1.0.schema.json", "delta-1.0.schema.json", "manifest-1.0.schema.json"] {
        let embedded = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas").join(name)).unwrap();
        assert_eq!(embedded, shared(name), "{name}");
    }
}

#[test]
fn example_c1_is_refused_for_its_placeholder_id_and_nothing_else() {
    // The spec's C.1 ask uses "urn:uuid:1111" and "sig":"…" as placeholders.
    let mut ex: Value = serde_json::from_str(&shared("example_C1_ask.json")).unwrap();
    let err = Envelope::parse(&serde_json::to_vec(&ex).unwrap()).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("/id"), "{err}");
    ex["id"] = "urn:uuid:1b4e28ba-2fa1-11d2-883f-0016cb401bbc".into();
    let err = Envelope::parse(&serde_json::to_vec(&ex).unwrap()).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("/sig"), "{err}");
    // With a real id and a signature it is a valid envelope; bare UUIDs work too.
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    ex["from"] = gatehouse_uamp::sign::did_of(&key).into();
    let signed = gatehouse_uamp::sign::sign(ex.clone(), &key);
    let env = Envelope::parse(&serde_json::to_vec(&signed).unwrap()).unwrap();
    assert_eq!(env.id, "urn:uuid:1b4e28ba-2fa1-11d2-883f-0016cb401bbc");
    ex["id"] = "1b4e28ba-2fa1-11d2-883f-0016cb401bbc".into();
    let signed = gatehouse_uamp::sign::sign(ex, &key);
    let env = Envelope::parse(&serde_json::to_vec(&signed).unwrap()).unwrap();
    verify::verify(&env, &verify::key_for(&env, &[]).unwrap()).unwrap();
}

#[test]
fn example_c1_delta_reads_once_its_placeholder_ts_is_real() {
    let mut d: Value = serde_json::from_str(&shared("example_C1_done_delta.json")).unwrap();
    let err = gatehouse_uamp::Delta::parse_from_peer(&serde_json::to_vec(&d).unwrap(), "str-1").unwrap_err();
    assert_eq!(err.field.as_deref(), Some("/ts"));
    d["ts"] = "2025-07-10T10:00:01Z".into();
    let delta = gatehouse_uamp::Delta::parse_from_peer(&serde_json::to_vec(&d).unwrap(), "str-1").unwrap();
    assert!(delta.kind.is_terminal());
    assert_eq!(delta.payload.unwrap()["answer"], 4);
}

/// mTLS: the identity of a client certificate is its key's did:key, for certificates made
/// by Python's `cryptography` (data/make_certs.py); other key types are refused by name.
#[test]
fn client_certificates_map_to_the_did_key_of_their_key() {
    use base64::Engine as _;
    let v: Value = serde_json::from_str(include_str!("data/certs.json")).unwrap();
    let certs = v["certs"].as_array().unwrap();
    assert_eq!(certs.len(), 5);
    for c in certs {
        let der = base64::engine::general_purpose::STANDARD.decode(c["der_b64"].as_str().unwrap()).unwrap();
        let got = PublicKey::from_certificate(&der);
        match (c.get("did").and_then(Value::as_str), c.get("error").and_then(Value::as_str)) {
            (Some(did), _) => assert_eq!(got.unwrap().did_key(), did, "{}", c["name"]),
            (None, Some(err)) => {
                let e = got.expect_err(c["name"].as_str().unwrap());
                assert!(e.contains(err), "{}: {e}", c["name"]);
            }
            _ => panic!("a vector names a did or an error"),
        }
    }
}
