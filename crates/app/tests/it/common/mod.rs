#![allow(dead_code)]
//! A real inbox on a real loopback port, with a real SQLite file, for the tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use ed25519_dalek::SigningKey;
use gatehouse_app::doors::{ExecutorConfig, ServeOptions};
use gatehouse_epp::Draft;
use gatehouse_store::{Policy, Store, TrustEntry};
use tokio::sync::oneshot;

pub fn key(seed_byte: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed_byte; 32])
}

pub fn pubhex(k: &SigningKey) -> String {
    gatehouse_epp::public_key_hex(k)
}

pub fn vectors(name: &str) -> serde_json::Value {
    let path = format!("{}/../../tests/data/vectors/epp/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub struct TestInbox {
    pub dir: tempfile::TempDir,
    pub store: Arc<Store>,
    pub public_key: String,
    pub url: String,
    pub watch: Option<PathBuf>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), String>>>,
}

/// The store a test's gate runs on: SQLite in `dir`, or, with
/// `GATEHOUSE_TEST_STORE=postgres`, a fresh database in this test binary's PostgreSQL
/// (the same suite run on a team's gate's store; `scripts/test.sh` runs it both ways).
pub fn test_store(dir: &Path) -> Store {
    if std::env::var("GATEHOUSE_TEST_STORE").as_deref() == Ok("postgres") {
        let pg = gatehouse_pg_testserver::Postgres::shared().expect("GATEHOUSE_TEST_STORE=postgres needs PostgreSQL (scripts/setup.sh)");
        let url = pg.fresh_database();
        std::fs::write(dir.join("database-url"), &url).unwrap();
        return sealed(Store::open_url(&url).unwrap().with_data_dir(dir), dir);
    }
    sealed(Store::open(&dir.join("gatehouse.db")).unwrap(), dir)
}

/// Another store on the database of `dir`'s gate (another process, or another node).
pub fn another_store(dir: &Path) -> Store {
    match std::fs::read_to_string(dir.join("database-url")) {
        Ok(url) => sealed(Store::open_url(&url).unwrap().with_data_dir(dir), dir),
        Err(_) => sealed(Store::open(&dir.join("gatehouse.db")).unwrap(), dir),
    }
}

/// Runs SQL on the test store's database behind the gate's back, as someone with the
/// database file or a database login could.
pub fn behind_the_gates_back(dir: &Path, sql: &str) {
    match std::fs::read_to_string(dir.join("database-url")) {
        Ok(url) => {
            let db = url.rsplit('/').next().unwrap().to_string();
            gatehouse_pg_testserver::Postgres::shared().unwrap().psql_in(&db, sql).unwrap();
        }
        Err(_) => rusqlite::Connection::open(dir.join("gatehouse.db")).unwrap().execute_batch(sql).unwrap(),
    }
}

/// The key the test gates seal their deciding rows with (the app's composition uses the
/// gate's identity; these gates are named by a public key alone). Every test runs on a
/// sealed store, as every gate does.
pub const SEAL_KEY: [u8; 32] = [0x5e; 32];

/// `store` sealing with [`SEAL_KEY`], its witness kept in `dir`.
pub fn sealed(store: Store, dir: &Path) -> Store {
    let key = ed25519_dalek::SigningKey::from_bytes(&SEAL_KEY);
    store.with_sealer(Arc::new(gatehouse_app::sealer::GateSealer::new(&key, Some(dir)))).unwrap()
}

impl TestInbox {
    /// Starts an inbox whose identity is `inbox_key`, listening on 127.0.0.1:0.
    pub async fn start(inbox_key: &str, watch: bool) -> TestInbox {
        Self::start_with(inbox_key, watch, ExecutorConfig::default()).await
    }

    pub async fn start_with(inbox_key: &str, watch: bool, executors: ExecutorConfig) -> TestInbox {
        Self::start_configured(inbox_key, watch, executors, |_| {}).await
    }

    /// For the shared vectors, signed once in January 2026 to be valid until 2099: an
    /// inbox that takes envelopes valid for any time (the `freshness` setting).
    pub async fn start_for_vectors(inbox_key: &str) -> TestInbox {
        Self::start_configured(inbox_key, false, ExecutorConfig::default(), |s| {
            s.set_setting(
                gatehouse_app::doors::gate::state::FRESHNESS_SETTING,
                &gatehouse_app::doors::gate::state::Freshness { max_lifetime_secs: 0, ..Default::default() },
            )
            .unwrap()
        })
        .await
    }

    pub async fn start_configured(inbox_key: &str, watch: bool, executors: ExecutorConfig, setup: impl FnOnce(&Store)) -> TestInbox {
        Self::start_full(inbox_key, watch, executors, setup, Vec::new()).await
    }

    /// Starts an inbox that also follows these mail accounts.
    pub async fn start_email(inbox_key: &str, setup: impl FnOnce(&Store), email: Vec<gatehouse_app::doors::email::Follow>) -> TestInbox {
        Self::start_full(inbox_key, false, ExecutorConfig::default(), setup, email).await
    }

    async fn start_full(
        inbox_key: &str,
        watch: bool,
        executors: ExecutorConfig,
        setup: impl FnOnce(&Store),
        email: Vec<gatehouse_app::doors::email::Follow>,
    ) -> TestInbox {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path());
        Self::start_in(dir, store, inbox_key, watch, executors, setup, email).await
    }

    /// A node of a team's gate: an inbox on `store` (opened on the team's database).
    pub async fn start_on(inbox_key: &str, store: Store) -> TestInbox {
        Self::start_in(tempfile::tempdir().unwrap(), store, inbox_key, false, ExecutorConfig::default(), |_| {}, Vec::new()).await
    }

    /// [`TestInbox::start_email`] on `store`.
    pub async fn start_email_on(inbox_key: &str, store: Store, setup: impl FnOnce(&Store), email: Vec<gatehouse_app::doors::email::Follow>) -> TestInbox {
        Self::start_in(tempfile::tempdir().unwrap(), store, inbox_key, false, ExecutorConfig::default(), setup, email).await
    }

    async fn start_in(
        dir: tempfile::TempDir,
        store: Store,
        inbox_key: &str,
        watch: bool,
        executors: ExecutorConfig,
        setup: impl FnOnce(&Store),
        email: Vec<gatehouse_app::doors::email::Follow>,
    ) -> TestInbox {
        let store = Arc::new(store);
        executors.save(&store).unwrap();
        setup(&store);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let watch_dir = watch.then(|| dir.path().join("drop"));
        let (tx, rx) = oneshot::channel();
        let opts = ServeOptions { listener: Some(listener), watch: watch_dir.clone(), uamp: None, email, ..Default::default() };
        let task = tokio::spawn(gatehouse_app::doors::run(
            store.clone(),
            inbox_key.to_string(),
            opts,
            async {
                let _ = rx.await;
            },
            |_| {},
        ));
        if let Some(w) = &watch_dir {
            // The watcher creates its folders once it is up.
            for _ in 0..100 {
                if w.join("rejected").exists() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        TestInbox { dir, store, public_key: inbox_key.to_string(), url, watch: watch_dir, stop: Some(tx), task: Some(task) }
    }

    pub fn trust(&self, k: &str, name: &str, policy: Policy) {
        self.store
            .trust_add(&TrustEntry {
                door: "epp".into(),
                facts: Default::default(),
                public_key: k.into(),
                name: name.into(),
                added_at: "2026-01-01T00:00:00Z".into(),
                policy,
            })
            .unwrap();
    }

    /// The application's context over this inbox: its data dir, its store and the name it
    /// goes by (an inbox here is named by a public key alone; what the app signs for it is
    /// signed with the tests' fixed key).
    pub fn ctx(&self) -> gatehouse_app::Context {
        let mut c = gatehouse_app::Context::with_store(self.dir.path().to_path_buf(), ed25519_dalek::SigningKey::from_bytes(&[3; 32]), self.store.clone());
        c.public_key = self.public_key.clone();
        c
    }

    /// Trusts an EPP sender with what the EPP door keeps about it.
    pub fn trust_epp(&self, k: &str, name: &str, policy: Policy, epp: gatehouse_store::EppFacts) {
        let facts = gatehouse_store::Facts::epp(epp);
        self.store
            .trust_add(&TrustEntry { door: "epp".into(), facts, public_key: k.into(), name: name.into(), added_at: "2026-01-01T00:00:00Z".into(), policy })
            .unwrap();
    }

    pub fn submit_url(&self) -> String {
        format!("{}/epp/v1/submit", self.url)
    }

    pub async fn post(&self, body: impl Into<reqwest::Body>) -> (u16, Option<String>, serde_json::Value) {
        let resp = reqwest::Client::new().post(self.submit_url()).header("content-type", "application/json").body(body).send().await.unwrap();
        let status = resp.status().as_u16();
        let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
        let json = resp.json().await.unwrap();
        (status, retry, json)
    }

    pub async fn post_json(&self, v: &serde_json::Value) -> (u16, Option<String>, serde_json::Value) {
        self.post(v.to_string()).await
    }

    pub fn draft(&self, scope: &str, prompt: &str) -> Draft {
        Draft::new(&self.public_key, scope, prompt)
    }

    pub fn signed(&self, k: &SigningKey, scope: &str, prompt: &str) -> serde_json::Value {
        self.draft(scope, prompt).sign(k, Utc::now())
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.unwrap().unwrap();
        }
    }
}

pub fn policy(scopes: &[&str]) -> Policy {
    Policy { allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(), ..Policy::default() }
}

/// Waits for a condition the inbox reaches asynchronously (executors, folder).
pub async fn eventually<F: FnMut() -> bool>(what: &str, mut f: F) {
    for _ in 0..300 {
        if f() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// What a decision on a stranger's prompt names, as the window sends it: the sender and
/// the knock the prompt showed (its newest).
pub fn shown(inbox: &gatehouse_app::doors::Gate, key: &str) -> gatehouse_app::consent::ConsentTarget {
    use gatehouse_app::consent::ConsentTarget;
    let key = gatehouse_store::sender_key(key);
    gatehouse_app::consent::pending(&ctx(inbox.store()))
        .unwrap()
        .into_iter()
        .filter_map(|i| i.target())
        .find(|t| matches!(t, ConsentTarget::UnknownSender { public_key, .. } if *public_key == key))
        .unwrap_or(ConsentTarget::UnknownSender { public_key: key, knock: None })
}

/// The application's context over a test's store (as a face holds it), under a fixed
/// identity key: what every application function takes.
pub fn ctx(store: &std::sync::Arc<Store>) -> gatehouse_app::Context {
    gatehouse_app::Context::with_store(std::path::PathBuf::new(), ed25519_dalek::SigningKey::from_bytes(&[3; 32]), store.clone())
}

/// [`ctx`] over the data dir `dir` (for what the app keeps there beside the store).
pub fn ctx_in(store: &std::sync::Arc<Store>, dir: &Path) -> gatehouse_app::Context {
    gatehouse_app::Context::with_store(dir.to_path_buf(), ed25519_dalek::SigningKey::from_bytes(&[3; 32]), store.clone())
}
