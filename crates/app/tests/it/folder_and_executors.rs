//! The watched folder (a real directory, real inotify) and the executors.

use std::collections::BTreeMap;
use std::io::Write;

use crate::common::*;
use gatehouse_app::doors::{ExecutorConfig, ExecutorSpec};
use gatehouse_store::ExecStatus;

fn read_json(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Drops each file into the watched folder as a burst, the way a careful writer does:
/// written elsewhere, then renamed in whole.
fn drop_burst(inbox: &TestInbox, files: &[(String, Vec<u8>)]) {
    let staging = inbox.dir.path().join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    let drop = inbox.watch.as_ref().unwrap();
    for (name, body) in files {
        std::fs::write(staging.join(name), body).unwrap();
        std::fs::rename(staging.join(name), drop.join(name)).unwrap();
    }
}

/// The receipt files in a subfolder of the watched folder, sorted.
fn receipt_names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".receipt.json")).collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_files_are_filed_with_receipts_and_never_deleted() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), true).await;
    let drop = inbox.watch.clone().unwrap();
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));

    let good = inbox.signed(&alice, "support", "from a file");
    std::fs::write(drop.join("good.json"), good.to_string()).unwrap();
    std::fs::write(drop.join("garbage.json"), b"{ not json").unwrap();
    std::fs::write(drop.join("denied.json"), inbox.signed(&alice, "admin", "no").to_string()).unwrap();
    std::fs::write(drop.join("notes.txt"), b"not an envelope").unwrap();

    let accepted = drop.join("accepted");
    let rejected = drop.join("rejected");
    eventually("three files filed", || {
        accepted.join("good.json.receipt.json").exists()
            && rejected.join("garbage.json.receipt.json").exists()
            && rejected.join("denied.json.receipt.json").exists()
    })
    .await;
    assert!(accepted.join("good.json").exists() && !drop.join("good.json").exists());
    assert_eq!(read_json(&accepted.join("good.json.receipt.json"))["envelope_id"], good["envelope_id"]);
    assert_eq!(read_json(&rejected.join("garbage.json.receipt.json"))["error"]["code"], "INVALID_FORMAT");
    assert_eq!(read_json(&rejected.join("denied.json.receipt.json"))["error"]["code"], "POLICY_DENIED");
    assert_eq!(std::fs::read(rejected.join("garbage.json")).unwrap(), b"{ not json");
    // Files that are not *.json are left alone.
    assert!(drop.join("notes.txt").exists());

    // The same envelope dropped again: REPLAY, and the earlier file is not overwritten.
    std::fs::write(drop.join("good.json"), good.to_string()).unwrap();
    eventually("replay filed", || rejected.join("good.json.receipt.json").exists()).await;
    assert_eq!(read_json(&rejected.join("good.json.receipt.json"))["error"]["code"], "REPLAY_DETECTED");
    std::fs::write(drop.join("garbage.json"), b"again").unwrap();
    eventually("second garbage filed beside the first", || rejected.join("garbage-1.json.receipt.json").exists()).await;
    assert_eq!(std::fs::read(rejected.join("garbage.json")).unwrap(), b"{ not json");
    assert_eq!(std::fs::read(rejected.join("garbage-1.json")).unwrap(), b"again");

    // Receipts from the folder are in the store, marked with their transport.
    let receipts = inbox.store.receipts(50, 0).unwrap();
    assert!(receipts.iter().any(|r| r.transport == "folder:good.json" && r.status == "accepted"));
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowly_written_file_is_taken_only_once_complete() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), true).await;
    let drop = inbox.watch.clone().unwrap();
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));
    // The watcher is running before the slow writer starts: a file already there when it
    // starts is taken once still for a second (it cannot have seen it opened), which is
    // another rule (`files_waiting_at_start_up_are_processed`).
    std::fs::write(drop.join("probe.json"), b"{}").unwrap();
    eventually("the watcher runs", || drop.join("rejected").join("probe.json.receipt.json").exists()).await;
    let text = inbox.signed(&alice, "support", "written slowly").to_string();
    let (a, b) = text.split_at(text.len() / 2);
    let path = drop.join("slow.json");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(a.as_bytes()).unwrap();
    f.flush().unwrap();
    // Half a file sits there, still open, for a while.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(path.exists(), "a file still open for writing must not be taken");
    assert_eq!(inbox.store.receipts(10, 0).unwrap().len(), 1, "only the probe has a receipt");
    f.write_all(b.as_bytes()).unwrap();
    f.sync_all().unwrap();
    std::mem::drop(f);
    let receipt = drop.join("accepted").join("slow.json.receipt.json");
    eventually("slow file accepted", || receipt.exists()).await;
    assert_eq!(read_json(&receipt)["status"], "accepted");
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_waiting_at_start_up_are_processed() {
    let alice = key(1);
    let inbox_key = pubhex(&key(2));
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap());
    store
        .trust_add(&gatehouse_store::TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: pubhex(&alice),
            name: "Alice".into(),
            added_at: "2026-01-01T00:00:00Z".into(),
            policy: policy(&["support"]),
        })
        .unwrap();
    let drop = dir.path().join("drop");
    std::fs::create_dir_all(&drop).unwrap();
    let env = gatehouse_epp::Draft::new(&inbox_key, "support", "waiting").sign(&alice, chrono::Utc::now());
    std::fs::write(drop.join("waiting.json"), env.to_string()).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(gatehouse_app::doors::run(
        store.clone(),
        inbox_key,
        gatehouse_app::doors::ServeOptions { listener: None, watch: Some(drop.clone()), uamp: None, ..Default::default() },
        async {
            let _ = rx.await;
        },
        |_| {},
    ));
    let receipt = drop.join("accepted").join("waiting.json.receipt.json");
    eventually("waiting file accepted", || receipt.exists()).await;
    assert_eq!(read_json(&receipt)["envelope_id"], env["envelope_id"]);
    let _ = tx.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_executor_gets_the_prompt_on_stdin_without_a_shell() {
    let alice = key(1);
    let out = tempfile::tempdir().unwrap();
    let out_file = out.path().join("prompt.txt");
    let queue = out.path().join("queue");
    let mut scopes = BTreeMap::new();
    scopes.insert("support".to_string(), ExecutorSpec::Command { program: "tee".into(), args: vec![out_file.display().to_string()], timeout_secs: 10 });
    scopes.insert("fails".to_string(), ExecutorSpec::Command { program: "false".into(), args: vec![], timeout_secs: 10 });
    scopes.insert("slow".to_string(), ExecutorSpec::Command { program: "sleep".into(), args: vec!["30".into()], timeout_secs: 1 });
    scopes.insert("missing".to_string(), ExecutorSpec::Command { program: "/nonexistent/tool".into(), args: vec![], timeout_secs: 1 });
    scopes.insert("queue".to_string(), ExecutorSpec::FileQueue { dir: queue.clone() });
    let inbox = TestInbox::start_with(&pubhex(&key(2)), false, ExecutorConfig { default: ExecutorSpec::Noop, scopes }).await;
    inbox.trust(&pubhex(&alice), "Alice", policy(&["*"]));

    // Shell metacharacters in the prompt stay text.
    let prompt = "$(touch /tmp/gatehouse-pwned) `id`; echo hi | cat > /tmp/x";
    let (status, _, r) = inbox.post_json(&inbox.signed(&alice, "support", prompt)).await;
    assert_eq!(status, 200);
    assert_eq!(r["executor"], "command");
    for scope in ["fails", "slow", "missing", "queue", "anything"] {
        assert_eq!(inbox.post_json(&inbox.signed(&alice, scope, "x")).await.0, 200, "{scope}");
    }
    let store = inbox.store.clone();
    eventually("all executors finished", || {
        store.envelopes(10, 0).unwrap().iter().all(|e| matches!(e.exec_status, ExecStatus::Succeeded | ExecStatus::Failed))
    })
    .await;
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), prompt);
    let by_scope: BTreeMap<String, _> = store.envelopes(10, 0).unwrap().into_iter().map(|e| (e.scope.clone(), e)).collect();
    let ok = &by_scope["support"];
    assert_eq!(ok.exec_status, ExecStatus::Succeeded);
    assert_eq!(ok.exec_result.as_ref().unwrap()["exit_code"], 0);
    assert_eq!(ok.exec_result.as_ref().unwrap()["stdout"], prompt);
    // Failures are recorded, and the accepted envelope stays stored.
    let failed = &by_scope["fails"];
    assert_eq!(failed.exec_status, ExecStatus::Failed);
    assert_eq!(failed.exec_result.as_ref().unwrap()["exit_code"], 1);
    assert!(by_scope["slow"].exec_result.as_ref().unwrap()["error"].as_str().unwrap().contains("timed out"));
    assert!(by_scope["missing"].exec_result.as_ref().unwrap()["error"].as_str().unwrap().contains("could not start"));
    assert_eq!(by_scope["anything"].executor, "noop");
    assert_eq!(by_scope["anything"].exec_status, ExecStatus::Succeeded);
    let queued: Vec<_> = std::fs::read_dir(&queue).unwrap().flatten().collect();
    assert_eq!(queued.len(), 1);
    let record = read_json(&queued[0].path());
    assert_eq!(record["envelope"]["scope"], "queue");
    assert!(!std::path::Path::new("/tmp/gatehouse-pwned").exists());
    inbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_files_is_filed_completely_in_parallel() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), true).await;
    let drop = inbox.watch.clone().unwrap();
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));
    let same = inbox.signed(&alice, "support", "sent three times").to_string();
    let files: Vec<(String, Vec<u8>)> = (0..60)
        .map(|i| {
            // Every tenth file repeats one envelope: one acceptance, the rest replays.
            let body = if i % 10 == 0 { same.clone() } else { inbox.signed(&alice, "support", &format!("burst {i}")).to_string() };
            (format!("burst-{i:02}.json"), body.into_bytes())
        })
        .collect();
    drop_burst(&inbox, &files);
    let count = |d: &str| receipt_names(&drop.join(d)).len();
    eventually("60 receipts", || count("accepted") + count("rejected") == 60).await;
    assert_eq!(count("accepted"), 55);
    assert_eq!(count("rejected"), 5);
    assert_eq!(std::fs::read_dir(drop.join(".processing")).unwrap().count(), 0);
    assert_eq!(inbox.store.count_envelopes().unwrap(), 55);
    inbox.stop().await;
}

/// A burst of hundreds of drops mixing envelopes, a replay, a file too big to read and
/// garbage is taken together (verified and committed in chunks), and every file ends up
/// where it would alone, with its own receipt: no file is lost, none filed twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_mixed_burst_files_every_file_with_its_own_receipt() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), true).await;
    let drop = inbox.watch.clone().unwrap();
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));
    let replayed = inbox.signed(&alice, "support", "sent twice").to_string();
    let mut files: Vec<(String, Vec<u8>)> =
        (0..300).map(|i| (format!("env-{i:03}.json"), inbox.signed(&alice, "support", &format!("burst {i}")).to_string().into_bytes())).collect();
    files.insert(100, ("first.json".into(), replayed.clone().into_bytes()));
    files.insert(250, ("again.json".into(), replayed.into_bytes()));
    files.insert(50, ("big.json".into(), vec![b' '; gatehouse_epp::MAX_ENVELOPE_BYTES + 1]));
    files.insert(200, ("garbage.json".into(), b"{\"not\": json".to_vec()));
    drop_burst(&inbox, &files);
    let receipts = |d: &str| receipt_names(&drop.join(d));
    eventually("304 receipts", || receipts("accepted").len() + receipts("rejected").len() == 304).await;
    // Files are verified in parallel, so either copy of the replayed envelope may be the
    // one that arrives first; the other is the replay.
    let rejected = drop.join("rejected");
    let replay = if rejected.join("again.json.receipt.json").exists() { "again.json" } else { "first.json" };
    let original = if replay == "again.json" { "first.json" } else { "again.json" };
    let mut expected = vec![format!("{replay}.receipt.json"), "big.json.receipt.json".into(), "garbage.json.receipt.json".into()];
    expected.sort();
    assert_eq!(receipts("rejected"), expected);
    assert_eq!(read_json(&rejected.join(format!("{replay}.receipt.json")))["error"]["code"], "REPLAY_DETECTED");
    assert_eq!(read_json(&rejected.join("big.json.receipt.json"))["error"]["code"], "SIZE_EXCEEDED");
    assert_eq!(read_json(&rejected.join("garbage.json.receipt.json"))["error"]["code"], "INVALID_FORMAT");
    assert_eq!(receipts("accepted").len(), 301);
    for (name, _) in files.iter().filter(|(n, _)| n.starts_with("env-") || n == original) {
        let moved = drop.join("accepted").join(name);
        assert!(moved.exists(), "{name} was filed in accepted/");
        let receipt = read_json(&drop.join("accepted").join(format!("{name}.receipt.json")));
        let sent: serde_json::Value = serde_json::from_slice(&std::fs::read(&moved).unwrap()).unwrap();
        assert_eq!(receipt["envelope_id"], sent["envelope_id"], "{name} has its own receipt beside it");
    }
    assert_eq!(std::fs::read_dir(drop.join(".processing")).unwrap().count(), 0);
    // No temporary receipt is left behind either.
    assert!(std::fs::read_dir(drop.join("accepted")).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().ends_with(".tmp")));
    assert_eq!(inbox.store.count_envelopes().unwrap(), 301);
    inbox.stop().await;
}

/// Large files are read a bounded number at a time (their contents held in memory are
/// capped), and a burst of them together with small envelopes still files everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_large_files_beyond_the_memory_cap_is_filed_completely() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), true).await;
    let drop = inbox.watch.clone().unwrap();
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));
    // 12 x 6 MiB: more than the 64 MiB the folder reads at once; each one is under the
    // envelope size limit, so it is read whole and refused as not JSON.
    let large = vec![b'x'; 6 << 20];
    let files: Vec<(String, Vec<u8>)> = (0..24)
        .map(|i| {
            if i % 2 == 0 {
                (format!("large-{i:02}.json"), large.clone())
            } else {
                (format!("small-{i:02}.json"), inbox.signed(&alice, "support", &format!("small {i}")).to_string().into_bytes())
            }
        })
        .collect();
    drop_burst(&inbox, &files);
    let count = |d: &str| receipt_names(&drop.join(d)).len();
    eventually("24 receipts", || count("accepted") + count("rejected") == 24).await;
    assert_eq!(count("accepted"), 12);
    assert_eq!(count("rejected"), 12);
    assert_eq!(read_json(&drop.join("rejected/large-00.json.receipt.json"))["error"]["code"], "INVALID_FORMAT");
    assert_eq!(std::fs::metadata(drop.join("rejected/large-00.json")).unwrap().len(), 6 << 20, "kept whole");
    inbox.stop().await;
}

/// A file whose envelope was accepted just before a crash, but not yet filed, is filed as
/// accepted with its original receipt at the next start (not mislabelled a replay); a
/// claimed file that was never processed is processed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_claimed_before_a_crash_are_filed_at_the_next_start() {
    let alice = key(1);
    let inbox = TestInbox::start(&pubhex(&key(2)), false).await;
    inbox.trust(&pubhex(&alice), "Alice", policy(&["support"]));
    let accepted_before = inbox.signed(&alice, "support", "accepted, then the power went out");
    let (status, _, receipt) = inbox.post_json(&accepted_before).await;
    assert_eq!(status, 200);
    let never_seen = inbox.signed(&alice, "support", "claimed, never processed");
    let (store, key_hex) = (inbox.store.clone(), inbox.public_key.clone());
    let drop = inbox.dir.path().join("drop");
    std::fs::create_dir_all(drop.join(".processing")).unwrap();
    std::fs::write(drop.join(".processing/a.json"), accepted_before.to_string()).unwrap();
    std::fs::write(drop.join(".processing/b.json"), never_seen.to_string()).unwrap();

    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let opts = gatehouse_app::doors::ServeOptions { listener: None, watch: Some(drop.clone()), uamp: None, ..Default::default() };
    let task = tokio::spawn(gatehouse_app::doors::run(
        store.clone(),
        key_hex,
        opts,
        async {
            let _ = rx.await;
        },
        |_| {},
    ));
    let accepted = drop.join("accepted");
    eventually("both claimed files filed", || accepted.join("a.json.receipt.json").exists() && accepted.join("b.json.receipt.json").exists()).await;
    let filed = read_json(&accepted.join("a.json.receipt.json"));
    assert_eq!(filed["receipt_id"], receipt["receipt_id"], "the original receipt, not a new one");
    assert_eq!(filed["status"], "accepted");
    assert_eq!(read_json(&accepted.join("b.json.receipt.json"))["envelope_id"], never_seen["envelope_id"]);
    assert_eq!(std::fs::read_dir(drop.join(".processing")).unwrap().count(), 0);
    assert_eq!(store.count_envelopes().unwrap(), 2);
    let _ = tx.send(());
    task.await.unwrap().unwrap();
    inbox.stop().await;
}
