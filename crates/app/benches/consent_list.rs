//! The list of what waits for the user (criterion), as the window loads it at every change:
//! 256 strangers each knocking with a 1 MiB prompt (the most a knock keeps whole). Each
//! prompt is scanned for risk (17 ms a MiB); the scan is kept under the knock's receipt id,
//! so only the first load pays it.

use gatehouse_app::doors::Submit as _;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use gatehouse_store::Store;

const KNOCKS: usize = 256;

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("bench.db")).unwrap());
    let me = gatehouse_epp::generate_signing_key();
    let inbox = gatehouse_app::doors::compose_gate(store.clone(), &gatehouse_epp::public_key_hex(&me));
    let ctx = gatehouse_app::Context::with_store(dir.path().to_path_buf(), me.clone(), store.clone());
    let prompt = "Please look at the attached order, thank you. ".repeat(1000 * 1024 / 46);
    let now = chrono::Utc::now();
    eprintln!("{KNOCKS} strangers knock with {} bytes each…", prompt.len());
    for i in 0..KNOCKS {
        // A minute apart: strangers' knocks are kept within a per-minute budget.
        let at = now - chrono::Duration::minutes((KNOCKS - i) as i64);
        let k = gatehouse_epp::generate_signing_key();
        let env = gatehouse_epp::Draft::new(&gatehouse_epp::public_key_hex(&me), "support", &prompt).sign(&k, at);
        let out = inbox.submit(env.to_string().as_bytes(), "bench", at);
        assert_eq!(out.receipt.code(), Some(gatehouse_epp::ErrorCode::UntrustedSender));
    }
    let t = std::time::Instant::now();
    let first = gatehouse_app::consent::pending(&ctx).unwrap();
    eprintln!("first load: {} prompts in {:?} (each knock scanned once)", first.len(), t.elapsed());
    assert_eq!(first.len(), KNOCKS);
    let mut g = c.benchmark_group("consent_list");
    g.sample_size(10);
    g.bench_function("256 knocks of 1 MiB, loaded again", |b| b.iter(|| gatehouse_app::consent::pending(&ctx).unwrap().len()));
    g.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
