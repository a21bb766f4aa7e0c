//! The whole pipeline in-process against a SQLite file (criterion): parse, verify,
//! replay check, trust, policy, durable accept.

use gatehouse_app::doors::Submit as _;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use gatehouse_store::{Policy, Store, TrustEntry};

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("bench.db")).unwrap());
    let sender = gatehouse_epp::generate_signing_key();
    let inbox_pub = gatehouse_epp::public_key_hex(&gatehouse_epp::generate_signing_key());
    store
        .trust_add(&TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: gatehouse_epp::public_key_hex(&sender),
            name: "bench".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            policy: Policy { allowed_scopes: vec!["*".into()], ..Policy::default() },
        })
        .unwrap();
    let inbox = gatehouse_app::doors::compose_gate(store, &inbox_pub);
    let now = chrono::Utc::now();
    c.bench_function("pipeline_accept_durable", |b| {
        b.iter_batched(
            || gatehouse_epp::Draft::new(&inbox_pub, "support", "benchmark prompt").sign(&sender, now).to_string().into_bytes(),
            |bytes| assert_eq!(inbox.submit(&bytes, "bench", now).http_status(), 200),
            criterion::BatchSize::SmallInput,
        )
    });
    let replayed = gatehouse_epp::Draft::new(&inbox_pub, "support", "once").sign(&sender, now).to_string().into_bytes();
    inbox.submit(&replayed, "bench", now);
    c.bench_function("pipeline_reject_replay", |b| b.iter(|| assert_eq!(inbox.submit(&replayed, "bench", now).http_status(), 409)));
}

criterion_group!(pipeline, benches);
criterion_main!(pipeline);
