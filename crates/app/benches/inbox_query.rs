//! What the app asks of a big store (criterion): the inbox's first page, a filtered page,
//! a search and a conversation, over 100,000 envelopes accepted through the real pipeline
//! (ten senders, one in ten rejected).

use gatehouse_app::doors::Submit as _;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use gatehouse_store::{InboxFilter, Policy, Store, TrustEntry};

const ENVELOPES: usize = 100_000;

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("bench.db")).unwrap());
    let inbox_pub = gatehouse_epp::public_key_hex(&gatehouse_epp::generate_signing_key());
    let senders: Vec<_> = (0..10).map(|_| gatehouse_epp::generate_signing_key()).collect();
    for (i, s) in senders.iter().enumerate() {
        store
            .trust_add(&TrustEntry {
                door: "epp".into(),
                facts: Default::default(),
                public_key: gatehouse_epp::public_key_hex(s),
                name: format!("sender {i}"),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy: Policy { allowed_scopes: vec!["support".into(), "billing".into()], ..Policy::default() },
            })
            .unwrap();
    }
    let inbox = Arc::new(gatehouse_app::doors::compose_gate(store.clone(), &inbox_pub));
    let now = chrono::Utc::now();
    eprintln!("filling the store with {ENVELOPES} envelopes…");
    std::thread::scope(|s| {
        for t in 0..32 {
            let (inbox, senders, inbox_pub) = (inbox.clone(), &senders, &inbox_pub);
            s.spawn(move || {
                for i in (t..ENVELOPES).step_by(32) {
                    // One in ten asks for a scope nobody allowed: a rejection receipt.
                    let scope = if i % 10 == 0 {
                        "admin"
                    } else if i % 3 == 0 {
                        "billing"
                    } else {
                        "support"
                    };
                    let prompt = if i == 77_777 { "the needle prompt".to_string() } else { format!("routine message number {i} about ticket {}", i % 997) };
                    let bytes = gatehouse_epp::Draft::new(inbox_pub, scope, &prompt).sign(&senders[i % 10], now).to_string();
                    inbox.submit(bytes.as_bytes(), "http", now);
                }
            });
        }
    });
    let page = |f: InboxFilter| store.inbox(&InboxFilter { limit: Some(100), ..f }).unwrap();
    assert_eq!(page(InboxFilter::default()).len(), 100);
    let sender = gatehouse_epp::public_key_hex(&senders[3]);
    c.bench_function("inbox_first_page_100k", |b| b.iter(|| page(InboxFilter::default())));
    c.bench_function("inbox_first_page_100k_by_sender", |b| b.iter(|| page(InboxFilter { sender: Some(sender.clone()), ..Default::default() })));
    c.bench_function("inbox_first_page_100k_rejected", |b| b.iter(|| page(InboxFilter { status: Some("rejected".into()), ..Default::default() })));
    c.bench_function("inbox_search_100k", |b| b.iter(|| assert_eq!(page(InboxFilter { search: Some("needle".into()), ..Default::default() }).len(), 1)));
    // A standalone envelope the user answered: its conversation is named after it.
    let answered = store.envelopes(1, ENVELOPES as u32 / 2).unwrap().remove(0);
    let id = answered.envelope_id.clone();
    store.reply_draft(answered.id, &id, &id, &answered.sender, "http://127.0.0.1:9/epp/v1/submit", &answered.scope, "ok", "t").unwrap();
    c.bench_function("conversation_100k", |b| b.iter(|| assert_eq!(store.conversation(&id).unwrap().len(), 1)));
}

criterion_group! {
    name = query;
    config = Criterion::default().sample_size(30);
    targets = benches
}
criterion_main!(query);
