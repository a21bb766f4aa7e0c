//! Envelope parse + validate, canonical payload, Ed25519 verify (criterion).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use gatehouse_epp::{canonical, Draft, Envelope};

fn sample() -> (Vec<u8>, String) {
    let key = gatehouse_epp::generate_signing_key();
    let inbox = gatehouse_epp::public_key_hex(&gatehouse_epp::generate_signing_key());
    let mut d = Draft::new(&inbox, "support", "Summarise ticket #4411: the customer reports that exports fail on large files. Café ☕ — naïve.");
    d.context = Some(serde_json::json!({"ticket": 4411, "tags": ["export", "bug"], "customer": {"tier": "gold", "since": 2019}}));
    d.conversation_id = Some("6f1c2a4e-2b4b-4f8e-9a51-0d2e9a7c1b11".into());
    (d.sign(&key, chrono::Utc::now()).to_string().into_bytes(), inbox)
}

fn benches(c: &mut Criterion) {
    let (bytes, inbox) = sample();
    let env = Envelope::parse(&bytes).unwrap();
    c.bench_function("parse_and_validate", |b| b.iter(|| Envelope::parse(black_box(&bytes)).unwrap()));
    c.bench_function("canonical_payload", |b| b.iter(|| canonical::reference_payload(black_box(&env))));
    c.bench_function("ed25519_verify_envelope", |b| b.iter(|| gatehouse_epp::verify(black_box(&env)).unwrap()));
    c.bench_function("check_all_pure_steps", |b| b.iter(|| gatehouse_epp::check(black_box(&bytes), &inbox, chrono::Utc::now()).unwrap()));
}

criterion_group!(envelope, benches);
criterion_main!(envelope);
