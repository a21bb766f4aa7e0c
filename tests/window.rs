//! The desktop app in its real window: WebKitWebDriver through tauri-driver, under the
//! Xvfb display that `scripts/test.sh` provides, with the real keychain (Secret Service),
//! a real SQLite file, the inbox on a real loopback port and a real watched folder.
//! Fails (never skips) without a display or keyring.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// One app at a time: the app is single-instance, as it should be.
static ONE_APP: Mutex<()> = Mutex::new(());

/// N distinct free ports: every listener is held until all are picked, so two picks cannot
/// be the same port (the kernel may hand a just-released port out again).
fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<TcpListener> = (0..N).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

fn tauri_driver() -> String {
    let on_path = std::env::var("PATH").unwrap_or_default().split(':').map(|d| format!("{d}/tauri-driver")).find(|p| Path::new(p).exists());
    let p = on_path.unwrap_or_else(|| format!("{}/.cargo/bin/tauri-driver", std::env::var("HOME").unwrap_or_default()));
    assert!(Path::new(&p).exists(), "tauri-driver not found: run scripts/setup.sh");
    p
}

struct App {
    driver: Child,
    base: String,
    sid: String,
    http: reqwest::blocking::Client,
    pub data: tempfile::TempDir,
    pub watch: PathBuf,
    pub port: u16,
    pub uamp_port: u16,
    pub public_key: String,
    pub key: SigningKey,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.http.delete(format!("{}/session/{}", self.base, self.sid)).send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = gatehouse_keys::delete(self.data.path());
    }
}

impl App {
    /// The app in its window with its inbox listening. Ports are picked free but another
    /// process (WebKit's own listeners start in between) may take one before the app binds
    /// it; the app then says it cannot listen, and the harness starts over on other ports.
    fn start() -> App {
        for attempt in 1.. {
            match App::launch() {
                Ok(app) => return app,
                Err(why) if attempt < 3 => eprintln!("starting the app again on other ports: {why}"),
                Err(why) => panic!("{why}"),
            }
        }
        unreachable!()
    }

    fn launch() -> Result<App, String> {
        assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run the tests through scripts/test.sh (Xvfb)");
        let data = tempfile::tempdir().unwrap();
        let (identity, _) =
            gatehouse_keys::load_or_create(data.path(), gatehouse_keys::KeystoreKind::Os).expect("Secret Service must be running (scripts/test.sh starts one)");
        let watch = data.path().join("drop");
        let [port, uamp_port, dport, nport] = free_ports();
        let driver = Command::new(tauri_driver())
            .args(["--port", &dport.to_string(), "--native-port", &nport.to_string()])
            .env("GATEHOUSE_DATA_DIR", data.path())
            .env("GATEHOUSE_KEYSTORE", "os")
            .env("GATEHOUSE_PORT", port.to_string())
            .env("GATEHOUSE_UAMP_PORT", uamp_port.to_string())
            .env("GATEHOUSE_WATCH_DIR", &watch)
            .stdout(Stdio::null())
            .stderr(
                std::env::var_os("GATEHOUSE_TEST_APP_LOG").map_or_else(Stdio::null, |p| std::fs::File::create(p).map_or_else(|_| Stdio::null(), Stdio::from)),
            )
            .spawn()
            .expect("start tauri-driver");
        // WebKit can take minutes to start when four windows start at once on two busy cores.
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(240)).build().unwrap();
        let base = format!("http://127.0.0.1:{dport}");
        let t = Instant::now();
        while http.get(format!("{base}/status")).send().is_err() {
            assert!(t.elapsed() < Duration::from_secs(20), "tauri-driver did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
        let app = env!("CARGO_BIN_EXE_gatehouse-desktop");
        let v: Value = http
            .post(format!("{base}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {"tauri:options": {"application": app}}}}))
            .send()
            .unwrap()
            .json()
            .unwrap();
        let sid = v["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {v}")).to_string();
        let key = identity.signing_key().clone();
        let app = App { driver, base, sid, http, data, watch, port, uamp_port, public_key: identity.public_key, key };
        // The inbox is up once it answers with this app's own key, not merely once something
        // answers on its port.
        let info = format!("http://127.0.0.1:{}/epp/v1/inbox", app.port);
        let ask = reqwest::blocking::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
        let t = Instant::now();
        let mut seen = String::from("nothing");
        while t.elapsed() < Duration::from_secs(20) {
            match ask.get(&info).send().and_then(|r| r.text()) {
                Ok(body) if serde_json::from_str::<Value>(&body).unwrap_or_default()["public_key"].as_str() == Some(app.public_key.as_str()) => return Ok(app),
                // Someone else holds the port, so the app could not bind it.
                Ok(body) => {
                    seen = body;
                    break;
                }
                Err(e) if e.is_timeout() => {
                    seen = "no answer".into();
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(150)),
            }
        }
        let window = app.script("return document.body.innerText;");
        Err(format!("port {} is not this app's inbox: it answered {seen}; the window shows: {window}", app.port))
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}/session/{}{path}", self.base, self.sid));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().unwrap().json().unwrap();
        v["value"].clone()
    }

    fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.call(reqwest::Method::POST, "/elements", Some(json!({"using": "css selector", "value": css})));
        v.as_array().map(|a| a.iter().filter_map(|e| e[ELEMENT].as_str().map(String::from)).collect()).unwrap_or_default()
    }

    fn find(&self, css: &str) -> String {
        let mut found = Vec::new();
        self.wait(&format!("element {css}"), || {
            found = self.find_all(css);
            !found.is_empty()
        });
        found.remove(0)
    }

    /// Clicks in the page's own event loop, so a live re-render between finding and
    /// clicking cannot leave the click on a detached element, and retried until an
    /// element is there to take it (a re-render can take it away for a moment).
    fn click(&self, css: &str) {
        let js = format!("const e = document.querySelector({}); if (!e) return false; e.click(); return true;", serde_json::to_string(css).unwrap());
        self.wait(&format!("a click on {css}"), || self.script(&js).as_bool() == Some(true));
    }

    /// The element's text content (what the DOM holds, whatever CSS clips).
    fn text(&self, css: &str) -> String {
        self.find(css);
        let js = format!("return document.querySelector({}).textContent;", serde_json::to_string(css).unwrap());
        self.script(&js).as_str().unwrap_or("").to_string()
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(reqwest::Method::POST, &format!("/element/{id}/clear"), Some(json!({})));
        self.call(reqwest::Method::POST, &format!("/element/{id}/value"), Some(json!({"text": text})));
    }

    fn script(&self, js: &str) -> Value {
        self.call(reqwest::Method::POST, "/execute/sync", Some(json!({"script": js, "args": []})))
    }

    fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
        let t = Instant::now();
        while !f() {
            if t.elapsed() > Duration::from_secs(20) {
                self.screenshot("timeout");
                let body = self.script("return document.body.innerText;");
                panic!("timed out waiting for {what}; the window shows: {body}");
            }
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    fn wait_text(&self, css: &str, needle: &str) {
        self.wait(&format!("{css} to contain {needle:?}"), || self.find_all(css).first().is_some_and(|_| self.text(css).contains(needle)));
    }

    fn screenshot(&self, name: &str) {
        // A frame can lag a change; let the window settle first.
        std::thread::sleep(Duration::from_millis(400));
        if let Some(b64) = self.call(reqwest::Method::GET, "/screenshot", None).as_str() {
            use base64::Engine as _;
            let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join(format!("{name}.png")), base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
        }
    }

    fn submit_url(&self) -> String {
        format!("http://127.0.0.1:{}/epp/v1/submit", self.port)
    }

    fn envelope(&self, from: &SigningKey, scope: &str, prompt: &str) -> Value {
        gatehouse_epp::Draft::new(&self.public_key, scope, prompt).sign(from, chrono::Utc::now())
    }

    fn send(&self, from: &SigningKey, scope: &str, prompt: &str) -> (u16, Value) {
        let r = reqwest::blocking::Client::new().post(self.submit_url()).json(&self.envelope(from, scope, prompt)).send().unwrap();
        (r.status().as_u16(), r.json().unwrap())
    }

    fn trust(&self, key: &SigningKey, name: &str, scopes: &[&str]) {
        let store = gatehouse_store::Store::open(&self.data.path().join("gatehouse.db")).unwrap();
        store
            .trust_add(&gatehouse_store::TrustEntry {
                public_key: gatehouse_epp::public_key_hex(key),
                name: name.into(),
                added_at: "2026-11-01T00:00:00Z".into(),
                policy: gatehouse_store::Policy { allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(), ..Default::default() },
            })
            .unwrap();
    }

    /// The inbox row whose preview contains `needle`.
    fn row_with(&self, needle: &str) -> String {
        let js = format!(
            "const r=[...document.querySelectorAll('#inbox-rows .row')].find(r=>r.textContent.includes({})); return r ? r.dataset.receipt : null;",
            serde_json::to_string(needle).unwrap()
        );
        let mut id = String::new();
        self.wait(&format!("an inbox row with {needle:?}"), || {
            id = self.script(&js).as_str().unwrap_or("").to_string();
            !id.is_empty()
        });
        id
    }
}

#[test]
fn unknown_sender_prompts_and_approval_lets_the_next_envelope_in() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    assert_eq!(app.call(reqwest::Method::GET, "/title", None), "Gatehouse");
    app.wait_text("#inbox-status-pill", &format!("127.0.0.1:{}", app.port));
    let stranger = gatehouse_epp::generate_signing_key();
    let (status, receipt) = app.send(&stranger, "support", "Hello, I am the pharmacy bot. May I remind you about refills?");
    assert_eq!((status, receipt["error"]["code"].as_str()), (401, Some("UNTRUSTED_SENDER")));

    // The count of things waiting shows, and the prompt says who asks and what.
    app.wait_text("#waiting-count", "1");
    app.click("#nav-consent");
    app.wait_text(".consent-card", "pharmacy bot");
    let ask = app.text(".consent-card .ask");
    assert!(ask.contains("not approved") && ask.contains("“support”"), "{ask}");
    app.screenshot("consent");
    app.click(".consent-card button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "Trusted for");

    // The next envelope from that sender is accepted and lands in the inbox.
    let (status, _) = app.send(&stranger, "support", "Second message: your refill is ready.");
    assert_eq!(status, 200);
    app.click("#nav-inbox");
    let id = app.row_with("your refill is ready");
    let row = format!("#inbox-rows .row[data-receipt='{id}']");
    assert!(app.text(&format!("{row} .badge")).contains("Done") || app.text(&format!("{row} .badge")).contains("Queued"));
    // The waiting message itself was delivered by the approval too.
    app.row_with("May I remind you about refills");
    // The decision is in the activity log.
    app.click("#nav-activity");
    app.wait_text("#audit-list", "consent.always_allow_scope");
}

#[test]
fn what_an_epp_v11_sender_declares_is_shown_before_allow_and_in_the_detail() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let stranger = gatehouse_epp::generate_signing_key();
    // v1.1 fields ride beside the signed ones, as the reference sends them.
    let mut env = app.envelope(&stranger, "orders", "Your order 1042 has shipped; add the delivery to your calendar?");
    env["capabilities"] = json!({"filesystem": {"read": ["~/Documents/orders"]}, "network": {"domains": ["shop.example"], "protocols": ["https"]}, "actions": ["create_calendar_event"], "data_access": ["contacts"]});
    env["payment"] = json!({"required": true, "amount": "0.50", "currency": "USDC", "recipient": "8xQ1", "chain": "solana"});
    let r = reqwest::blocking::Client::new().post(app.submit_url()).json(&env).send().unwrap();
    assert_eq!(r.status().as_u16(), 401);

    app.click("#nav-consent");
    app.wait_text(".consent-card", "It says it will ask your AI to:");
    let card = app.text(".consent-card");
    for words in
        ["read files in ~/Documents/orders", "connect to shop.example (https)", "take these actions: create_calendar_event", "see your contacts", "never pays"]
    {
        assert!(card.contains(words), "{words:?} in {card}");
    }
    app.screenshot("consent-v11");
    app.click(".consent-card button[data-decision='allow_once']");
    app.wait("the card to settle", || !app.text(".consent-card .result").is_empty());

    app.click("#nav-inbox");
    // The accepted envelope's row, not its earlier knock's (same words, refused).
    let js = "const r=[...document.querySelectorAll('#inbox-rows .row')].find(r=>r.textContent.includes('Your order 1042') && !r.textContent.includes('not trusted')); return r ? r.dataset.receipt : null;";
    let mut id = String::new();
    app.wait("the accepted envelope's row", || {
        id = app.script(js).as_str().unwrap_or("").to_string();
        !id.is_empty()
    });
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#detail-extras", "read files in ~/Documents/orders");
    assert!(app.text("#detail-extras").contains("payment: 0.50 USDC on solana"));
    assert!(app.text("#detail-steps").contains("No content hash sent (optional)"), "{}", app.text("#detail-steps"));
    app.script("document.querySelector('#detail-extras').scrollIntoView(); return true;");
    app.screenshot("detail-v11");
}

#[test]
fn a_dropped_file_appears_with_its_receipt_and_hostile_markup_stays_text() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let doctor = gatehouse_epp::generate_signing_key();
    app.trust(&doctor, "Dr. Lee", &["lab-results"]);
    let env = app.envelope(&doctor, "lab-results", "Your lab results from the folder: LDL 96 mg/dL.");
    app.wait("the watched folder", || app.watch.join("accepted").exists());
    std::fs::write(app.watch.join("labs.json"), env.to_string()).unwrap();
    app.click("#nav-inbox");
    let id = app.row_with("from the folder");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#inbox-detail h2", "Accepted");
    let detail = app.text("#inbox-detail");
    assert!(detail.contains("Folder: labs.json"), "{detail}");
    assert!(detail.contains("Dr. Lee"), "{detail}");
    assert!(detail.contains(env["envelope_id"].as_str().unwrap()), "{detail}");
    let receipt_file = app.watch.join("accepted").join("labs.json.receipt.json");
    let receipt: Value = serde_json::from_str(&std::fs::read_to_string(receipt_file).unwrap()).unwrap();
    assert_eq!(receipt["envelope_id"], env["envelope_id"]);

    // (d) A prompt carrying markup renders as text, in the list and in the detail.
    let hostile = "Look: <img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned2'</script> done";
    let (status, _) = app.send(&doctor, "lab-results", hostile);
    assert_eq!(status, 200);
    let id = app.row_with("<img src=x onerror=");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#detail-prompt", "done");
    assert_eq!(app.text("#detail-prompt"), hostile);
    assert!(app.find_all("#detail-prompt img, #inbox-rows img, #detail-prompt script").is_empty());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(app.call(reqwest::Method::GET, "/title", None), "Gatehouse", "no injected script ran");
    app.screenshot("inbox");
}

#[test]
fn editing_a_policy_changes_the_next_verdict() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let clinic = gatehouse_epp::generate_signing_key();
    app.trust(&clinic, "City Clinic", &["support"]);
    let (status, r) = app.send(&clinic, "billing", "Your invoice is ready");
    assert_eq!((status, r["error"]["code"].as_str()), (403, Some("POLICY_DENIED")));

    app.click("#nav-trust");
    app.wait_text("#trust-table", "City Clinic");
    app.click("#trust-table tr[data-key] button.edit");
    app.type_into("#trust-scopes", "support, billing");
    app.type_into("#trust-per-day", "20");
    app.click("#trust-save");
    app.wait_text("#trust-table", "support, billing");
    app.wait_text("#trust-table", "20/day");
    app.screenshot("trust");

    let (status, _) = app.send(&clinic, "billing", "Your invoice is ready (again)");
    assert_eq!(status, 200, "the edited policy applies to the very next envelope");
    // Adding a sender by pasting a key, with a bad key first: a clear error, nothing saved.
    app.click("#trust-add-open");
    app.type_into("#trust-key", "not-a-key");
    app.type_into("#trust-name", "Typo");
    app.type_into("#trust-scopes", "support");
    app.click("#trust-save");
    app.wait_text("#trust-form .error", "64 hexadecimal");
    let other = gatehouse_epp::generate_signing_key();
    app.type_into("#trust-key", &gatehouse_epp::public_key_hex(&other));
    app.click("#trust-save");
    app.wait_text("#trust-table", "Typo");
    assert_eq!(app.send(&other, "support", "hi").0, 200);
}

#[test]
fn conversations_thread_with_delegation_and_settings_show_the_identity() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let doctor = gatehouse_epp::generate_signing_key();
    let patient = gatehouse_epp::generate_signing_key();
    app.trust(&doctor, "Doctor", &["*"]);
    app.trust(&patient, "Patient", &["notifications"]);
    let conv = "6f1c2a4e-2b4b-4f8e-9a51-0d2e9a7c1b11";
    let post = |d: gatehouse_epp::Draft| {
        let env = d.sign(&doctor, chrono::Utc::now());
        let r = reqwest::blocking::Client::new().post(app.submit_url()).json(&env).send().unwrap();
        assert_eq!(r.status().as_u16(), 200);
        env["envelope_id"].as_str().unwrap().to_string()
    };
    let mut first = gatehouse_epp::Draft::new(&app.public_key, "lab-results", "Lab results are in.");
    first.conversation_id = Some(conv.into());
    first.payload_type = Some("lab-report".into());
    let first_id = post(first);
    let mut reply = gatehouse_epp::Draft::new(&app.public_key, "referrals", "Referral to cardiology.");
    reply.conversation_id = Some(conv.into());
    reply.in_reply_to = Some(first_id);
    reply.payload_type = Some("referral".into());
    reply.on_behalf_of = Some(gatehouse_epp::public_key_hex(&patient));
    post(reply);

    app.click("#nav-inbox");
    let id = app.row_with("Referral to cardiology");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#inbox-detail", "Doctor, on behalf of Patient");
    app.click("#detail-conversation");
    app.wait_text("#conversation-thread", "Referral to cardiology");
    let thread = app.text("#conversation-thread");
    let (a, b) = (thread.find("Lab results are in").unwrap(), thread.find("Referral to cardiology").unwrap());
    assert!(a < b, "the reply follows what it answers: {thread}");
    assert!(thread.contains("lab-report") && thread.contains("referral"), "{thread}");
    assert!(thread.contains("Doctor, on behalf of Patient"), "{thread}");
    app.screenshot("conversation");

    app.click("#nav-settings");
    app.wait_text("#settings-key", &app.public_key);
    assert!(app.text("#settings-endpoint").contains(&format!("127.0.0.1:{}/epp/v1/submit", app.port)));
    app.wait("the QR code", || app.script("return document.querySelector('#identity-qr').src;").as_str().unwrap_or("").starts_with("data:image/svg+xml"));
    app.screenshot("settings");

    // How long refused submissions are kept: changed here, saved and audited.
    app.wait_text("#retention", "Receipts of refused submissions");
    app.type_into("#retention-receipt", "30");
    app.click("#retention-save");
    app.wait_text("#retention-msg", "refused receipts 30 days");
    let store = gatehouse_store::Store::open(&app.data.path().join("gatehouse.db")).unwrap();
    assert_eq!(store.retention().rejected_receipt_days, 30);
    assert!(store.audit_list(20).unwrap().iter().any(|a| a.action == "settings.retention"));
    app.type_into("#retention-audit", "99999");
    app.click("#retention-save");
    app.wait_text("#retention-msg", "use 0 to keep forever");
    app.script("document.querySelector('#retention').scrollIntoView(); return true;");
    app.screenshot("retention");
    assert_eq!(store.retention().audit_days, 365, "a refused change leaves the setting as it was");

    // Pausing the inbox closes its port; resuming opens it again.
    let health = format!("http://127.0.0.1:{}/health", app.port);
    app.click("#pause-toggle");
    app.wait_text("#inbox-status-pill", "Inbox paused");
    app.wait("the port to close", || reqwest::blocking::get(&health).is_err());
    app.click("#pause-toggle");
    app.wait_text("#inbox-status-pill", "Listening on");
    app.wait("the port to open", || reqwest::blocking::get(&health).is_ok());
}

/// A second Gatehouse, serving UAMP over TLS in this test process, whose executor answers
/// every ask with the same PNG.
struct ImagePeer {
    rt: tokio::runtime::Runtime,
    store: std::sync::Arc<gatehouse_store::Store>,
    dir: tempfile::TempDir,
    url: String,
    key: SigningKey,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ImagePeer {
    fn start(png: &Path) -> ImagePeer {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(gatehouse_store::Store::open(&dir.path().join("gatehouse.db")).unwrap());
        let exec = gatehouse_inbox::ExecutorSpec::Command { program: "cat".into(), args: vec![png.to_string_lossy().into()], timeout_secs: 30 };
        gatehouse_inbox::ExecutorConfig { default: exec, scopes: Default::default() }.save(&store).unwrap();
        let key = SigningKey::from_bytes(&[77; 32]);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let url = rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("https://{}", l.local_addr().unwrap());
            let (started_tx, started_rx) = tokio::sync::oneshot::channel();
            let opts = gatehouse_inbox::ServeOptions {
                listener: None,
                watch: None,
                uamp: Some(gatehouse_inbox::UampOptions { listener: l, key: key.clone(), data_dir: dir.path().to_path_buf(), started: Some(started_tx) }),
                ..Default::default()
            };
            tokio::spawn(gatehouse_inbox::run(
                store.clone(),
                gatehouse_epp::public_key_hex(&key),
                opts,
                async {
                    let _ = stop_rx.await;
                },
                |_| {},
            ));
            started_rx.await.unwrap();
            url
        });
        ImagePeer { rt, store, dir, url, key, _stop: stop_tx }
    }

    fn fingerprint(&self) -> String {
        gatehouse_inbox::uamp::tls::load_or_create(self.dir.path(), &self.key).unwrap().fingerprint
    }
}

/// A 192×128 gradient, recognisable in a screenshot.
fn gradient_png(path: &Path) {
    let (w, h) = (192u32, 128u32);
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        let mut writer = enc.write_header().unwrap();
        let pixels: Vec<u8> = (0..h).flat_map(|y| (0..w).flat_map(move |x| [(x * 255 / w) as u8, (y * 255 / h) as u8, 160])).collect();
        writer.write_image_data(&pixels).unwrap();
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn uamp_peer_added_by_url_answers_an_ask_with_an_image_and_an_unknown_agent_waits_for_consent() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let png = app.data.path().join("answer.png");
    gradient_png(&png);
    let peer = ImagePeer::start(&png);
    let my_did = gatehouse_uamp::sign::did_of(&app.key);
    // The peer's owner trusts this app and hands over a token.
    peer.store
        .trust_add(&gatehouse_store::TrustEntry {
            public_key: my_did.clone(),
            name: "the app".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask".into()], ..Default::default() },
        })
        .unwrap();
    let token = gatehouse_inbox::uamp::UampInbox::issue_token(&peer.store, &my_did, chrono::Utc::now()).unwrap();

    app.click("#nav-uamp");
    app.wait_text("#uamp-did", &my_did);
    app.wait_text("#uamp-address", &format!("127.0.0.1:{}", app.uamp_port));
    // Adding the peer: its manifest and certificate are shown before anything is kept.
    app.type_into("#peer-url", &peer.url);
    app.click("#peer-lookup");
    app.wait_text("#found-cert", &peer.fingerprint());
    assert!(app.text("#found-did").starts_with("did:key:z6Mk"));
    app.screenshot("uamp-add-peer");
    app.type_into("#peer-name", "Image maker");
    app.type_into("#peer-token", &token);
    app.click("#peer-add");
    app.wait_text("#peer-table", "Image maker");
    assert!(app.text("#peer-table").contains("in keychain"));
    let db = std::fs::read(app.data.path().join("gatehouse.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains(&token), "the token is in the keychain, not the store");

    // Asking it: the progress line ends in Completed and the image is shown.
    app.type_into("#ask-text", "a gradient, please");
    app.click("#ask-send");
    app.wait("the ask to complete", || {
        app.script("const s=document.querySelector('#ask-status'); return s ? s.dataset.state : null;").as_str() == Some("COMPLETED")
    });
    for img in ["#ask-result-image", "#stream-image"] {
        let js = format!("const i=document.querySelector('{img}'); return !!(i && i.complete && i.naturalWidth);");
        app.wait("the image", || app.script(&js).as_bool() == Some(true));
        assert_eq!(app.script(&format!("return document.querySelector('{img}').naturalWidth;")).as_u64(), Some(192));
    }
    app.script("document.querySelector('#uamp-ask').scrollIntoView(); return true;");
    let saved = app.text("#stream-file");
    assert_eq!(std::fs::read(saved.trim()).unwrap(), std::fs::read(&png).unwrap(), "the file on disk is the peer's image");
    assert!(app.text("#stream-list").contains("You → Image maker"));
    app.screenshot("uamp-ask-image");

    // An agent nobody approved knocks on the app's UAMP port: the user is asked.
    let stranger = SigningKey::from_bytes(&[91; 32]);
    let stranger_did = gatehouse_uamp::sign::did_of(&stranger);
    let env = gatehouse_uamp::sign::sign(
        gatehouse_uamp::sign::draft(&stranger_did, &[&my_did], gatehouse_uamp::Intent::Ask, "text/plain", "Summarise my inbox"),
        &stranger,
    );
    let knock = peer.rt.block_on(async {
        let c = reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap();
        let r = c
            .post(format!("https://127.0.0.1:{}/v1/messages", app.uamp_port))
            .header("content-type", "application/uamp+json;v=1")
            .json(&env)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    assert_eq!((knock.0, knock.1["reason"].as_str()), (403, Some("untrusted_sender")), "{knock:?}");
    app.click("#nav-consent");
    app.wait_text("#view-consent", "An AI agent you have not approved");
    assert!(app.find_all("#view-consent button[data-decision='allow_once']").is_empty(), "nothing of a refused UAMP message is kept to let through once");
    app.click("#view-consent button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "Issue it a token");
    app.click("#nav-uamp");
    app.click(&format!("#uamp-token-list button[data-sender='{stranger_did}']"));
    app.wait_text("#uamp-token-out", "ghu_");
    app.screenshot("uamp");
}

#[test]
fn a_mail_task_streams_into_its_timeline_and_a_log_dropped_in_the_folder_is_imported() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let url = rt.block_on(async {
        use gatehouse_mail_testswarm::{spawn, Config, Remote, Swarm};
        let b = spawn(Swarm::new(Config::new("swarm-b"))).await;
        let mut cfg = Config::new("swarm-a");
        // Slow enough to watch the timeline grow.
        cfg.step = Duration::from_millis(150);
        cfg.remote = Some(Remote { swarm: "swarm-b".into(), base_url: b, agent_token: "agent-token".into() });
        spawn(Swarm::new(cfg)).await
    });

    app.click("#nav-mail");
    // A token the swarm refuses is not kept.
    app.type_into("#swarm-url", &url);
    app.type_into("#swarm-name", "Research");
    app.type_into("#swarm-token", "wrong");
    app.click("#swarm-add");
    app.wait_text("#swarm-msg", "refused the token");
    app.type_into("#swarm-token", "user-token");
    app.click("#swarm-add");
    app.wait_text("#mail-swarms", "u-1 — role user");
    let swarms = app.text("#mail-swarms");
    assert!(swarms.contains("swarm “swarm-a”") && swarms.contains("swarm-b ("), "metadata and the registry with latency: {swarms}");

    app.type_into("#mail-subject", "Trip to Lyon");
    app.type_into("#mail-body", "What will the weather be in Lyon tomorrow?");
    app.click("#mail-send");
    app.wait("the first messages to arrive live", || {
        app.script("return document.querySelectorAll('#mail-live li.mail-msg').length;").as_u64().unwrap_or(0) >= 2
    });
    app.wait_text("#mail-live-status", "Completed");
    let live = app.script("return document.querySelectorAll('#mail-live li.mail-msg').length;").as_u64().unwrap();
    assert!(live >= 10, "{live} messages arrived live");

    // The task's timeline: the finish highlighted, the system error flagged, the remote
    // agent shown with its swarm, the interrupt marked, and who talked to whom drawn.
    app.wait_text("#task-timeline", "Lyon tomorrow: sunny");
    let count = |css: &str| app.script(&format!("return document.querySelectorAll({}).length;", serde_json::to_string(css).unwrap())).as_u64().unwrap();
    assert_eq!(count("#task-timeline .mail-msg.finish"), 1);
    assert_eq!(count("#task-timeline .mail-msg.system-error"), 1);
    assert!(count("#task-timeline .mail-msg.type-interrupt") >= 1);
    assert!(app.text("#task-timeline").contains("forecast@swarm-b"));
    assert!(count("#task-graph svg .node") >= 6, "user, supervisor, weather, math, system, forecast");
    assert!(count("#task-graph svg .edge") >= 6);
    assert_eq!(app.text("#task-state"), "Completed");
    app.script("document.querySelector('#task-graph').scrollIntoView(); return true;");
    app.screenshot("mail");
    app.script("document.querySelector('#task-timeline .system-error').scrollIntoView(); return true;");
    app.screenshot("mail-timeline");

    // A message to an agent of another swarm, routed by this one.
    app.script("document.querySelector('#mail-interswarm').open = true; return true;");
    app.type_into("#inter-targets", "forecast@swarm-b");
    app.type_into("#inter-body", "Forecast for Paris?");
    app.click("#inter-send");
    app.wait_text("#inter-msg", "Forecast for Paris?");
    assert!(app.text("#inter-msg").contains("@swarm-b"), "{}", app.text("#inter-msg"));

    // Search by what an agent said.
    app.type_into("#mail-search", "75.2");
    app.wait("one task to match", || count("#task-list li") == 1);
    app.type_into("#mail-search", "nothing like this");
    app.wait_text("#mail-tasks", "No task matches.");
    app.type_into("#mail-search", "");

    // A task log dropped into the watched folder shows up as an imported task.
    let one = |name: &str| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vectors/mail/examples").join(format!("{name}.json"));
        serde_json::to_string(&serde_json::from_str::<Value>(&std::fs::read_to_string(p).unwrap()).unwrap()).unwrap()
    };
    std::fs::write(app.watch.join("forecast.mail.jsonl"), format!("{}\n{}\n", one("mail_message_request"), one("mail_message_response"))).unwrap();
    app.wait("the imported task", || app.find_all("#task-list li[data-task='aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa']").len() == 1);
    app.click("#task-list li[data-task='aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa']");
    app.wait_text("#mail-detail", "imported from forecast.mail.jsonl");
    assert!(app.watch.join("accepted/forecast.mail.jsonl.import.json").exists());
}

#[test]
fn the_tasks_view_follows_tasks_on_the_mail_reference_server() {
    let Some(r) = gatehouse_mail_testswarm::reference::start() else { return };
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    app.click("#nav-mail");
    app.type_into("#swarm-url", &r.url);
    app.type_into("#swarm-name", "Reference");
    app.type_into("#swarm-token", "user-key");
    app.click("#swarm-add");
    app.wait_text("#mail-swarms", "alice — role user");
    let swarms = app.text("#mail-swarms");
    assert!(swarms.contains("mail 1.3, swarm “example” (1.3.6), entrypoint supervisor, running"), "the reference's GET / read: {swarms}");

    // Six messages, four of them off the schema (`recipient_swarm: null`): all shown, each
    // with what was odd; the `::task_complete::` finish is a completion, not an error.
    app.type_into("#mail-body", "hello");
    app.click("#mail-send");
    app.wait_text("#mail-live-status", "Completed");
    app.wait_text("#task-timeline", "done: both analyses in");
    let count = |css: &str| app.script(&format!("return document.querySelectorAll({}).length;", serde_json::to_string(css).unwrap())).as_u64().unwrap();
    assert_eq!(count("#task-timeline .mail-msg"), 6);
    assert_eq!(count("#task-timeline .mail-odd"), 4);
    assert_eq!(count("#task-timeline .mail-msg.system-error"), 0);
    assert_eq!(count("#task-timeline .mail-msg.finish"), 1);
    assert_eq!(app.text("#task-state"), "Completed");
    app.script("document.querySelector('#task-timeline .mail-odd').scrollIntoView(); return true;");
    app.screenshot("mail-reference");

    // The same task continued from the window completes too.
    let task = app.script("return document.querySelector('#task-list li').dataset.task;").as_str().unwrap().to_string();
    app.type_into("#mail-task", &task);
    app.type_into("#mail-body", "again please");
    app.click("#mail-send");
    app.wait_text("#task-timeline", "continued: done again");
    app.wait("the second turn in the timeline", || count("#task-timeline .mail-msg") == 8);
}

#[test]
fn an_intentweb_booking_is_completed_from_the_window() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let site = gatehouse_intentweb_testsite::Site::new();
    let origin = rt.block_on(gatehouse_intentweb_testsite::spawn(site.clone()));

    app.click("#nav-intent");
    app.type_into("#iw-origin", &origin);
    app.click("#iw-add");
    app.wait_text("#view-intent", "Bella Cucina Restaurant");
    let cards = app.text("#view-intent .capabilities");
    assert!(cards.contains("Book a table for dining") && cards.contains("Cancel a reservation") && cards.contains("Mondays"), "{cards}");

    // An example from the manifest starts the conversation.
    app.click(".capability[data-intent='Book a table for dining'] .chip");
    app.click("#iw-start");
    app.wait_text("#iw-thread", "Under which name");
    assert!(app.text("#iw-thread").contains("first contact"), "unverified until pinned");
    app.click(".iw-pin");
    app.wait("the key pinned", || app.text("#view-intent").contains("key pinned"));
    // The checklist the site asked for.
    app.type_into("#iw-need-0", "Jane Smith");
    app.screenshot("intentweb-checklist");
    app.click("#iw-send-answers");
    app.wait_text("#iw-outcome", "RES-");
    app.script("document.querySelector('#iw-outcome').scrollIntoView(); return true;");
    app.screenshot("intentweb-booked");
    let thread = app.text("#iw-thread");
    assert!(thread.contains("Booking confirmed") && thread.contains("✓ verified"), "{thread}");
    assert_eq!(app.find_all("#iw-reply-msg").len(), 0, "nothing more can be said after the result");
    assert!(app.text("#iw-list").contains("Done — RES-"));

    // A menu answer full of markup stays inert: no script or image element is created.
    app.type_into("#iw-intent", "What is on the menu tonight?");
    app.click("#iw-start");
    app.wait_text("#iw-thread", "Tonight's specials");
    assert_eq!(app.script("return document.querySelectorAll('#iw-thread script, #iw-thread img, #iw-thread [onerror]').length;").as_u64(), Some(0));
    assert!(app.text("#iw-thread").contains("<script>alert('x')</script>"), "the payload is shown as text");
    app.screenshot("intentweb");
    // The trust registry holds the pinned key under the company's name.
    assert_eq!(
        gatehouse_store::Store::open(&app.data.path().join("gatehouse.db")).unwrap().trust_get(&site.did()).unwrap().unwrap().name,
        "Bella Cucina Restaurant"
    );
}

#[test]
fn an_agent_asks_the_guardian_and_the_user_answers_in_the_window() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let url = format!("http://127.0.0.1:{}/asop/v1", app.port);
    let step = |id: i64, to: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "steps/toolCallRequest", "params": {
            "context": {"agent": {"id": "mailer-1", "name": "Mail helper", "instructions": "Send mail", "version": "1", "provider": {"name": "Acme", "url": "https://acme.example"}},
                        "session": {"id": "s-42"}, "turnId": "t-1", "stepId": format!("st-{id}"), "timestamp": "2025-01-24T15:30:45Z"},
            "reasoning": "The user asked me to send the quarterly numbers",
            "toolCallRequest": {"executionId": format!("x-{id}"), "toolId": "send_email", "inputs": [{"name": "to", "value": to}, {"name": "subject", "value": "Q3 numbers"}]}}})
    };
    let post = move |v: Value| -> Value {
        reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap().post(&url).json(&v).send().unwrap().json().unwrap()
    };

    // Not registered yet: refused, and the agent waits under "Waiting for you".
    let refused = post(step(1, "eve@elsewhere.example"));
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    app.click("#nav-consent");
    app.wait_text("#view-consent", "Your agent “mailer-1”");
    app.click("#view-consent article[data-kind='unknown_sender'] button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "Registered");

    // Now its step waits for the user; the agent's request is held meanwhile.
    let agent = std::thread::spawn({
        let post = post.clone();
        let s = step(2, "eve@elsewhere.example");
        move || post(s)
    });
    app.wait("the question to appear", || {
        app.click("#nav-consent");
        app.find_all("article.asop-ask").len() == 1
    });
    let card = app.text("article.asop-ask");
    assert!(card.contains("Mail helper wants to use send_email with to = “eve@elsewhere.example”"), "{card}");
    assert!(card.contains("quarterly numbers"), "the agent's reasoning is shown: {card}");
    app.screenshot("guardian-ask");
    app.click("article.asop-ask .asop-always");
    app.click("article.asop-ask button[data-answer='allow']");
    let answer = agent.join().unwrap();
    assert_eq!(answer["result"]["decision"], "allow", "{answer}");
    // "Always" made a rule: the same step is decided without asking.
    assert_eq!(post(step(3, "eve@elsewhere.example"))["result"]["decision"], "allow");

    app.click("#nav-guardian");
    app.wait_text("#rule-list", "agent mailer-1, tool send_email: allow");
    app.wait_text("#asop-timeline", "send_email");
    let decisions = app.script("return [...document.querySelectorAll('#asop-timeline li')].map(l => l.dataset.decision).join(',');");
    assert_eq!(decisions.as_str(), Some("error,allow,allow"));
    app.screenshot("guardian");
    // A rule written in the window: outside the company domain, deny.
    app.type_into("#rule-agent", "mailer-1");
    app.type_into("#rule-tool", "send_email");
    app.type_into("#rule-arg", "to");
    app.type_into("#rule-value", "@evil.example");
    app.script("const s=document.querySelector('#rule-op'); s.value='ends_with'; const a=document.querySelector('#rule-action'); a.value='deny'; return true;");
    app.click("#rule-add");
    app.wait_text("#rule-list", "when to ends with “@evil.example”: deny");
    assert_eq!(post(step(4, "mallory@evil.example"))["result"]["decision"], "deny");
    assert_eq!(post(step(5, "bob@company.io"))["result"]["decision"], "allow", "the earlier rule still covers the rest");
}

#[test]
fn the_models_answer_is_reviewed_edited_and_sent_back_from_the_window() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // The user's model, and the sender's own Gatehouse inbox (which trusts the app back).
    let model = rt.block_on(gatehouse_model_testserver::spawn(gatehouse_model_testserver::ModelServer::default()));
    let bea = SigningKey::from_bytes(&[61; 32]);
    let bea_dir = tempfile::tempdir().unwrap();
    let bea_store = std::sync::Arc::new(gatehouse_store::Store::open(&bea_dir.path().join("gatehouse.db")).unwrap());
    bea_store
        .trust_add(&gatehouse_store::TrustEntry {
            public_key: app.public_key.clone(),
            name: "Me".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask-ai".into()], ..Default::default() },
        })
        .unwrap();
    let (_stop, bea_submit) = rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/epp/v1/submit", l.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let opts = gatehouse_inbox::ServeOptions { listener: Some(l), watch: None, uamp: None, ..Default::default() };
        tokio::spawn(gatehouse_inbox::run(
            bea_store.clone(),
            gatehouse_epp::public_key_hex(&bea),
            opts,
            async {
                let _ = rx.await;
            },
            |_| {},
        ));
        (tx, url)
    });
    // The user: Bea may ask the model about "ask-ai", and answers go back to her inbox.
    let store = gatehouse_store::Store::open(&app.data.path().join("gatehouse.db")).unwrap();
    store
        .trust_add(&gatehouse_store::TrustEntry {
            public_key: gatehouse_epp::public_key_hex(&bea),
            name: "Bea".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask-ai".into()], reply_endpoint: Some(bea_submit), ..Default::default() },
        })
        .unwrap();
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert(
        "ask-ai".to_string(),
        gatehouse_inbox::ExecutorSpec::Model { endpoint: model, model: "llama-test".into(), system_prompt: None, timeout_secs: 10, api_key_secret: None },
    );
    gatehouse_inbox::ExecutorConfig { default: gatehouse_inbox::ExecutorSpec::Noop, scopes }.save(&store).unwrap();

    let (status, _) = app.send(&bea, "ask-ai", "Which day is the team lunch?");
    assert_eq!(status, 200);
    let id = app.row_with("Which day is the team lunch?");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait("the draft answer", || {
        // The executor runs in the background; reopen the detail until the draft shows.
        if app.find_all("#detail-replies .reply-draft").is_empty() {
            app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
            false
        } else {
            true
        }
    });
    assert!(app
        .script("return document.querySelector('#detail-replies .reply-text').value;")
        .as_str()
        .unwrap()
        .contains("llama-test read: Which day is the team lunch?"));
    assert!(bea_store.envelopes(10, 0).unwrap().is_empty(), "nothing goes back before the user approves");
    app.type_into("#detail-replies .reply-text", "Thursday, at noon.");
    app.screenshot("reply-review");
    app.click("#detail-replies .reply-send");
    app.wait_text("#detail-replies", "their inbox answered: accepted");
    let got = bea_store.envelopes(10, 0).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].prompt.as_str(), got[0].sender.as_str()), ("Thursday, at noon.", app.public_key.as_str()));
    let original = store.envelopes(10, 0).unwrap().into_iter().find(|e| e.prompt == "Which day is the team lunch?").unwrap();
    assert_eq!(got[0].in_reply_to.as_deref(), Some(original.envelope_id.as_str()));
    assert_eq!(got[0].conversation_id.as_deref(), Some(original.envelope_id.as_str()), "a conversation named after the first envelope");
    // The answer sent back is part of the conversation here too.
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.click("#detail-conversation");
    app.wait_text("#content", "You (answer sent back)");
    assert!(app.text("#content").contains("Thursday, at noon."));
    // With the receipt Bea's inbox gave it.
    let receipt_id = bea_store.receipts(10, 0).unwrap().into_iter().find(|r| r.status == "accepted").unwrap().receipt_id;
    assert!(
        app.text("#conversation-thread .reply-receipt").contains(&format!("Their inbox accepted it · receipt {receipt_id}")),
        "{}",
        app.text("#conversation-thread")
    );
    app.screenshot("reply-in-conversation");
}

#[test]
fn a_failed_model_is_run_again_and_its_answer_is_written_live_in_the_window() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // A slow model, down when the prompt arrives.
    let server = gatehouse_model_testserver::ModelServer::paced(Duration::from_millis(350));
    server.set_down(true);
    let model = rt.block_on(gatehouse_model_testserver::spawn(server.clone()));
    let cy = SigningKey::from_bytes(&[62; 32]);
    let store = gatehouse_store::Store::open(&app.data.path().join("gatehouse.db")).unwrap();
    store
        .trust_add(&gatehouse_store::TrustEntry {
            public_key: gatehouse_epp::public_key_hex(&cy),
            name: "Cy".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask-ai".into()], ..Default::default() },
        })
        .unwrap();
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert(
        "ask-ai".to_string(),
        gatehouse_inbox::ExecutorSpec::Model { endpoint: model, model: "llama-test".into(), system_prompt: None, timeout_secs: 20, api_key_secret: None },
    );
    gatehouse_inbox::ExecutorConfig { default: gatehouse_inbox::ExecutorSpec::Noop, scopes }.save(&store).unwrap();

    let (status, _) = app.send(&cy, "ask-ai", "Where did we leave the spare keys last winter?");
    assert_eq!(status, 200);
    let id = app.row_with("Where did we leave the spare keys last winter?");
    let row = format!("#inbox-rows .row[data-receipt='{id}']");
    app.click(&row);
    // The failure arrives without reopening anything: the row and the open detail follow it.
    app.wait_text("#detail-exec", "Executor failed");
    app.wait_text(&row, "Executor failed");
    assert!(app.text("#inbox-detail").contains("the model is loading"), "the model's own reason is shown");

    server.set_down(false);
    app.click("#detail-retry");
    app.wait_text("#detail-live", "llama-test read: Where");
    let partial = app.text("#detail-live");
    assert!(app.text("#detail-exec").contains("Running"), "the answer shows while the model is still writing");
    assert!(app.text(&row).contains("Running"), "the list says so too: {}", app.text(&row));
    assert!(partial.len() < "llama-test read: Where did we leave the spare keys last winter?".len(), "only part of it so far: {partial:?}");
    app.screenshot("model-live");
    app.wait_text("#detail-exec", "Done");
    assert_eq!(app.text("#detail-answer .prompt"), "llama-test read: Where did we leave the spare keys last winter?");
    assert!(app.find_all("#detail-live").is_empty(), "the live box gives way to the stored result");
    app.screenshot("model-answer");
    app.wait_text(&row, "Done");
}

/// What a script running in the window (an injected page, a rendering bug) gets when it
/// calls a command directly with a path or a program of its choosing.
#[test]
fn a_script_in_the_window_cannot_aim_commands_at_paths_or_programs() {
    let _one = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    let app = App::start();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("written-by-the-page.json");
    let invoke = |cmd: &str, args: Value| {
        app.script(&format!(
            "return window.__TAURI_INTERNALS__.invoke({}, {}).then(r => ({{ok: r}}), e => ({{err: e}}));",
            serde_json::to_string(cmd).unwrap(),
            args
        ))
    };
    let r = invoke("export_json", json!({"kind": "audit", "path": target}));
    assert_eq!(r["err"]["code"], "FORBIDDEN_PATH", "{r}");
    assert!(!target.exists(), "nothing was written where the page pointed");
    let r = invoke("mail_import", json!({"path": "/etc/passwd"}));
    assert_eq!(r["err"]["code"], "FORBIDDEN_PATH", "{r}");
    let r = invoke("settings_set", json!({"settings": {"port": app.port, "uamp_port": app.uamp_port, "watch_dir": outside.path()}}));
    assert_eq!(r["err"]["code"], "FORBIDDEN_PATH", "{r}");
    // The page cannot open the dialog plugin itself either (only Gatehouse's own dialogs).
    let r = app.script("return window.__TAURI_INTERNALS__.invoke('plugin:dialog|open', {options: {}}).then(r => ({ok: r}), e => ({err: String(e)}));");
    assert!(r.get("err").is_some(), "{r}");
    // A program the page proposes is saved only after a native confirmation the page
    // cannot answer (tests/shell.rs checks what is asked). The dialog itself stays out of
    // this test: nothing here can answer it.
}
