use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
struct Counting;
static N: AtomicUsize = AtomicUsize::new(0);
static B: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 { N.fetch_add(1, Relaxed); B.fetch_add(l.size(), Relaxed); System.alloc(l) }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) { System.dealloc(p, l) }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 { N.fetch_add(1, Relaxed); B.fetch_add(n, Relaxed); System.realloc(p, l, n) }
}
#[global_allocator]
static A: Counting = Counting;
fn count<T>(what: &str, reps: usize, mut f: impl FnMut(usize) -> T) {
    let (n0, b0) = (N.load(Relaxed), B.load(Relaxed));
    for i in 0..reps { std::hint::black_box(f(i)); }
    let (n1, b1) = (N.load(Relaxed), B.load(Relaxed));
    println!("{what:30} {:7.1} allocs {:8.0} bytes", (n1 - n0) as f64 / reps as f64, (b1 - b0) as f64 / reps as f64);
}
fn main() {
    use gatehouse_store::{Policy, Store, TrustEntry};
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("bench.db")).unwrap());
    let sender = gatehouse_epp::generate_signing_key();
    let inbox_pub = gatehouse_epp::public_key_hex(&gatehouse_epp::generate_signing_key());
    store.trust_add(&TrustEntry { public_key: gatehouse_epp::public_key_hex(&sender), name: "bench".into(), added_at: "2026-01-01T00:00:00Z".into(), policy: Policy { allowed_scopes: vec!["*".into()], ..Policy::default() } }).unwrap();
    let inbox = gatehouse_inbox::Inbox::new(store, &inbox_pub);
    let now = chrono::Utc::now();
    let envs: Vec<Vec<u8>> = (0..2000).map(|i| gatehouse_epp::Draft::new(&inbox_pub, "support", &format!("benchmark prompt number {i} with a few words")).sign(&sender, now).to_string().into_bytes()).collect();
    println!("envelope {} bytes", envs[0].len());
    count("parse", 1000, |i| gatehouse_epp::Envelope::parse(&envs[i]).unwrap());
    let parsed: Vec<_> = envs.iter().map(|e| gatehouse_epp::Envelope::parse(e).unwrap()).collect();
    count("reference payload", 1000, |i| gatehouse_epp::canonical::reference_payload(&parsed[i]));
    count("submit (sync, durable)", 1000, |i| inbox.submit(&envs[1000 + i], "http", now));
}
