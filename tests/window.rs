//! The desktop app in its real window: WebKitWebDriver through tauri-driver, under the
//! Xvfb display that `scripts/test.sh` provides. Needs DISPLAY and a D-Bus session with
//! an unlocked keyring; fails (never skips) without them.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Driver {
    child: Child,
    base: String,
    http: reqwest::blocking::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn tauri_driver() -> String {
    if let Ok(p) = which("tauri-driver") {
        return p;
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let p = format!("{home}/.cargo/bin/tauri-driver");
    assert!(std::path::Path::new(&p).exists(), "tauri-driver not found: run scripts/setup.sh");
    p
}

fn which(name: &str) -> Result<String, ()> {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| format!("{d}/{name}"))
        .find(|p| std::path::Path::new(p).exists())
        .ok_or(())
}

impl Driver {
    fn start(envs: &[(&str, &str)]) -> Driver {
        assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run the tests through scripts/test.sh (Xvfb)");
        let port = free_port();
        let native_port = free_port();
        let mut cmd = Command::new(tauri_driver());
        cmd.args(["--port", &port.to_string(), "--native-port", &native_port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start tauri-driver");
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let t = Instant::now();
        while http.get(format!("{base}/status")).send().is_err() {
            assert!(t.elapsed() < Duration::from_secs(20), "tauri-driver did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
        Driver { child, base, http }
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().unwrap().json().unwrap();
        v["value"].clone()
    }
}

#[test]
fn the_window_opens_and_shows_the_inbox_identity_from_the_keychain() {
    let data = tempfile::tempdir().unwrap();
    let (identity, _) = gatehouse_keys::load_or_create(data.path(), gatehouse_keys::KeystoreKind::Os)
        .expect("Secret Service must be running (scripts/test.sh starts one)");
    let data_dir = data.path().to_str().unwrap().to_string();
    let driver = Driver::start(&[("GATEHOUSE_DATA_DIR", &data_dir), ("GATEHOUSE_KEYSTORE", "os")]);
    let app = env!("CARGO_BIN_EXE_gatehouse-desktop");
    let session = driver.call(
        reqwest::Method::POST,
        "/session",
        Some(json!({"capabilities": {"alwaysMatch": {"tauri:options": {"application": app}}}})),
    );
    let sid = session["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {session}")).to_string();

    let text_of = |css: &str| -> String {
        let el = driver.call(reqwest::Method::POST, &format!("/session/{sid}/element"), Some(json!({"using": "css selector", "value": css})));
        let id = el[ELEMENT].as_str().unwrap_or_else(|| panic!("{css} not found: {el}")).to_string();
        driver.call(reqwest::Method::GET, &format!("/session/{sid}/element/{id}/text"), None).as_str().unwrap_or("").to_string()
    };
    let title = driver.call(reqwest::Method::GET, &format!("/session/{sid}/title"), None);
    assert_eq!(title, "Gatehouse");
    let t = Instant::now();
    let mut shown = text_of("#public-key");
    while shown == "loading…" && t.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(200));
        shown = text_of("#public-key");
    }
    assert_eq!(shown, identity.public_key, "the window shows the keychain identity");
    assert_eq!(text_of("#keystore"), "OS keychain");
    assert_eq!(text_of("#data-dir"), data_dir);
    assert_eq!(text_of("#status"), "", "no error is shown");

    // Keep a screenshot for a person to look at.
    let shot = driver.call(reqwest::Method::GET, &format!("/session/{sid}/screenshot"), None);
    if let Some(b64) = shot.as_str() {
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("window.png"), png).unwrap();
    }
    driver.call(reqwest::Method::DELETE, &format!("/session/{sid}"), None);
    gatehouse_keys::delete(data.path()).unwrap();
}
