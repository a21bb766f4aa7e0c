//! What every window test shares: the app started in its window through tauri-driver,
//! and WebDriver calls to read, click, type, wait and take screenshots.

pub use std::path::{Path, PathBuf};
pub use std::time::{Duration, Instant};

pub use ed25519_dalek::SigningKey;
pub use serde_json::{json, Value};

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// One app at a time: the app is single-instance, as it should be, so a second one started
/// while another runs hands over to it and exits (its WebDriver session never opens). Every
/// [`App`] holds this while it lives, so no test can start one beside another.
static ONE_APP: Mutex<()> = Mutex::new(());

thread_local! {
    static HOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The one-app turn, taken by every [`App`] and by what a test sets up on the shared
/// session before its app starts (a notification daemon: another test's app would
/// notify into it). Taken again on the same thread it is the same turn.
pub struct OneApp(Option<std::sync::MutexGuard<'static, ()>>);

pub fn one_app() -> OneApp {
    if HOLDING.with(|h| h.get()) {
        return OneApp(None);
    }
    let guard = ONE_APP.lock().unwrap_or_else(|p| p.into_inner());
    HOLDING.with(|h| h.set(true));
    OneApp(Some(guard))
}

impl Drop for OneApp {
    fn drop(&mut self) {
        if self.0.is_some() {
            HOLDING.with(|h| h.set(false));
        }
    }
}

/// N distinct free ports: every listener is held until all are picked, so two picks cannot
/// be the same port. They are picked below the kernel's ephemeral range: a port from that
/// range, released for the app to bind seconds later, can be handed meanwhile to an
/// outgoing connection or another test's port 0 (seen: the app's UAMP port "already in
/// use" in CI).
pub fn free_ports<const N: usize>() -> [u16; N] {
    static PICKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let low =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok().and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok()).unwrap_or(32768);
    let (from, to) = (10_000u16, low.saturating_sub(1).max(20_000));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut seed = nanos ^ (u64::from(std::process::id()) << 32) ^ PICKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // (A seed of 0 would stay 0.)
    seed |= 1;
    let mut held: Vec<TcpListener> = Vec::new();
    while held.len() < N {
        // xorshift64: a different sequence per process and per pick.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let port = from + (seed % u64::from(to - from)) as u16;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(l);
        }
    }
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

pub fn tauri_driver() -> String {
    let on_path = std::env::var("PATH").unwrap_or_default().split(':').map(|d| format!("{d}/tauri-driver")).find(|p| Path::new(p).exists());
    let p = on_path.unwrap_or_else(|| format!("{}/.cargo/bin/tauri-driver", std::env::var("HOME").unwrap_or_default()));
    assert!(Path::new(&p).exists(), "tauri-driver not found: run scripts/setup.sh");
    p
}

/// tauri-driver with the app in its window on `data`: (driver, its URL, session, client).
fn open_window(data: &Path, watch: &Path, port: u16, uamp_port: u16) -> (Child, Session) {
    open_window_on(Command::new(tauri_driver()), data, watch, port, uamp_port)
}

/// [`open_window`] with tauri-driver started by `driver` (another computer's session).
fn open_window_on(mut driver: Command, data: &Path, watch: &Path, port: u16, uamp_port: u16) -> (Child, Session) {
    let [dport, nport] = free_ports();
    let driver = driver
        .args(["--port", &dport.to_string(), "--native-port", &nport.to_string()])
        .env("GATEHOUSE_DATA_DIR", data)
        .env("GATEHOUSE_KEYSTORE", "os")
        .env("GATEHOUSE_PORT", port.to_string())
        .env("GATEHOUSE_UAMP_PORT", uamp_port.to_string())
        .env("GATEHOUSE_WATCH_DIR", watch)
        .env("GATEHOUSE_TEST_CLOCK", data.join("test-clock"))
        .env("GATEHOUSE_TEST_DID_CA", data.join("test-did-ca.pem"))
        .stdout(Stdio::null())
        .stderr(std::env::var_os("GATEHOUSE_TEST_APP_LOG").map_or_else(Stdio::null, |p| std::fs::File::create(p).map_or_else(|_| Stdio::null(), Stdio::from)))
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
    (driver, Session { base, sid, http })
}

/// A member's desktop on a computer of its own: the app in its window under a D-Bus
/// session and a keychain of their own (the app is single-instance per session, as per
/// person), with an identity it makes itself on first run.
pub struct Elsewhere {
    driver: Child,
    session: Session,
    pub data: tempfile::TempDir,
    pub port: u16,
}

impl std::ops::Deref for Elsewhere {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Elsewhere {
    pub fn start() -> Elsewhere {
        let data = tempfile::tempdir().unwrap();
        let watch = data.path().join("drop");
        let keyring = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/with-keyring.sh");
        let [port, uamp_port] = free_ports();
        let mut cmd = Command::new("dbus-run-session");
        cmd.args(["--", "bash"]).arg(keyring).arg(tauri_driver());
        // Its whole process group is stopped at the end: the session bus, the keyring,
        // the driver and the app.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let (driver, session) = open_window_on(cmd, data.path(), &watch, port, uamp_port);
        let me = Elsewhere { driver, session, data, port };
        let t = Instant::now();
        let info = format!("http://127.0.0.1:{port}/epp/v1/inbox");
        while reqwest::blocking::get(&info).ok().and_then(|r| r.json::<Value>().ok()).is_none_or(|v| v["public_key"].as_str().is_none()) {
            assert!(t.elapsed() < Duration::from_secs(60), "the member's inbox did not start on port {port}");
            std::thread::sleep(Duration::from_millis(150));
        }
        me
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        let _ = self.session.http.delete(format!("{}/session/{}", self.session.base, self.session.sid)).send();
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(150));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.wait();
    }
}

/// A phone's browser: Debian's Chromium, headless, on a 360 px screen (chromium-driver).
pub struct Phone {
    driver: Child,
    session: Session,
}

impl std::ops::Deref for Phone {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Phone {
    pub fn start() -> Phone {
        let (driver, browser) = ("/usr/bin/chromedriver", "/usr/bin/chromium");
        assert!(Path::new(driver).exists() && Path::new(browser).exists(), "Chromium and chromium-driver are not installed: run scripts/setup.sh");
        let [port] = free_ports();
        let child = Command::new(driver).arg(format!("--port={port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": browser,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=360,740"],
            "mobileEmulation": {"deviceMetrics": {"width": 360, "height": 740, "pixelRatio": 2.0, "touch": true, "mobile": true}}
        }}}});
        // Held from here, so the driver is stopped whatever happens next.
        let mut phone = Phone { driver: child, session: Session { base, sid: String::new(), http } };
        let t = Instant::now();
        loop {
            if let Ok(r) = phone.session.http.post(format!("{}/session", phone.session.base)).json(&caps).send() {
                let v: Value = r.json().unwrap();
                phone.session.sid = v["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {v}")).to_string();
                return phone;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn go(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})));
    }
}

impl Drop for Phone {
    fn drop(&mut self) {
        let _ = self.session.http.delete(format!("{}/session/{}", self.session.base, self.session.sid)).send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A WebDriver session: the app's window (tauri-driver) or a browser's page (chromedriver).
pub struct Session {
    pub base: String,
    pub sid: String,
    pub http: reqwest::blocking::Client,
}

impl Session {
    pub fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}/session/{}{path}", self.base, self.sid));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().unwrap().json().unwrap();
        v["value"].clone()
    }

    pub fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.call(reqwest::Method::POST, "/elements", Some(json!({"using": "css selector", "value": css})));
        v.as_array().map(|a| a.iter().filter_map(|e| e[ELEMENT].as_str().map(String::from)).collect()).unwrap_or_default()
    }

    pub fn find(&self, css: &str) -> String {
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
    pub fn click(&self, css: &str) {
        // Not while the element is inert (a view still reading what it shows anew): a
        // person could not click it either.
        let js = format!(
            "const e = document.querySelector({}); if (!e || e.closest('[inert]')) return false; e.click(); return true;",
            serde_json::to_string(css).unwrap()
        );
        self.wait(&format!("a click on {css}"), || self.script(&js).as_bool() == Some(true));
    }

    /// The element's text content (what the DOM holds, whatever CSS clips).
    pub fn text(&self, css: &str) -> String {
        self.find(css);
        let js = format!("return document.querySelector({}).textContent;", serde_json::to_string(css).unwrap());
        self.script(&js).as_str().unwrap_or("").to_string()
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let inert = format!("const e = document.querySelector({}); return !!(e && e.closest('[inert]'));", serde_json::to_string(css).unwrap());
        self.wait(&format!("{css} to take typing"), || self.script(&inert).as_bool() == Some(false));
        let id = self.find(css);
        self.call(reqwest::Method::POST, &format!("/element/{id}/clear"), Some(json!({})));
        self.call(reqwest::Method::POST, &format!("/element/{id}/value"), Some(json!({"text": text})));
    }

    pub fn script(&self, js: &str) -> Value {
        self.call(reqwest::Method::POST, "/execute/sync", Some(json!({"script": js, "args": []})))
    }

    /// Runs `js` as an async script: it calls `arguments[arguments.length - 1]` with its result.
    pub fn script_async(&self, js: &str) -> Value {
        self.call(reqwest::Method::POST, "/execute/async", Some(json!({"script": js, "args": []})))
    }

    pub fn wait(&self, what: &str, mut f: impl FnMut() -> bool) {
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

    /// Waits until `css` shows `needle` in a view that has drawn what it read: not in one
    /// still reading anew (`aria-busy`), whose old list a person cannot act on yet either.
    pub fn wait_text(&self, css: &str, needle: &str) {
        let js = format!(
            "const e = document.querySelector({}); return !!e && !e.closest('[aria-busy]') && e.textContent.includes({});",
            serde_json::to_string(css).unwrap(),
            serde_json::to_string(needle).unwrap()
        );
        self.wait(&format!("{css} to contain {needle:?}"), || self.script(&js).as_bool() == Some(true));
    }

    pub fn screenshot(&self, name: &str) {
        if let Some(b64) = self.presented("/screenshot").as_str() {
            use base64::Engine as _;
            let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join(format!("{name}.png")), base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
        }
    }

    /// A picture of one element (a PNG), as the window draws it.
    pub fn element_screenshot(&self, element: &str) -> Vec<u8> {
        use base64::Engine as _;
        let png = self.presented(&format!("/element/{element}/screenshot"));
        base64::engine::general_purpose::STANDARD.decode(png.as_str().expect("a screenshot of the element")).unwrap()
    }

    /// A screenshot command's answer. WebKitGTK answers a screenshot after the page's next
    /// presentation; drawing without GPU compositing (as the app does), an unchanged page
    /// presents nothing and the screenshot never comes (nor does an element's). An
    /// invisible change every 50 ms while it is asked for gives it a frame.
    fn presented(&self, path: &str) -> Value {
        // A frame can lag a change; let the window settle first.
        std::thread::sleep(Duration::from_millis(400));
        self.script("window.__nudge = setInterval(() => { document.body.style.outline = document.body.style.outline ? '' : '1px solid transparent'; }, 50); return true;");
        let shot = self.call(reqwest::Method::GET, path, None);
        self.script("clearInterval(window.__nudge); document.body.style.outline = ''; return true;");
        shot
    }
}

pub struct App {
    driver: Child,
    session: Session,
    pub data: tempfile::TempDir,
    pub watch: PathBuf,
    pub port: u16,
    pub uamp_port: u16,
    pub public_key: String,
    pub key: SigningKey,
    _one: OneApp,
}

impl std::ops::Deref for App {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.quit();
        let _ = gatehouse_keys::delete(self.data.path());
    }
}

impl App {
    /// The app in its window with its inbox listening. Ports are picked free but another
    /// process (WebKit's own listeners start in between) may take one before the app binds
    /// it; the app then says it cannot listen, and the harness starts over on other ports.
    pub fn start() -> App {
        for attempt in 1.. {
            match App::launch() {
                Ok(app) => return app,
                Err(why) if attempt < 3 => eprintln!("starting the app again on other ports: {why}"),
                Err(why) => panic!("{why}"),
            }
        }
        unreachable!()
    }

    pub fn launch() -> Result<App, String> {
        App::launch_in(tempfile::tempdir().unwrap())
    }

    /// The app with its window started under the dark GTK theme, as a user whose desktop
    /// prefers dark sees it (WebKit then reports `prefers-color-scheme: dark`).
    pub fn start_dark() -> App {
        let mut driver = Command::new(tauri_driver());
        driver.env("GTK_THEME", "Adwaita:dark");
        App::launch_on(tempfile::tempdir().unwrap(), driver).unwrap_or_else(|why| panic!("{why}"))
    }

    /// A data dir with its identity made (in the keychain), for an app started later with
    /// [`App::start_in`]: (the dir, its public key).
    pub fn prepare() -> (tempfile::TempDir, String) {
        let data = tempfile::tempdir().unwrap();
        let (identity, _) =
            gatehouse_keys::load_or_create(data.path(), gatehouse_keys::KeystoreKind::Os).expect("Secret Service must be running (scripts/test.sh starts one)");
        (data, identity.public_key)
    }

    /// The app on a data dir made with [`App::prepare`] (a second Gatehouse).
    pub fn start_in(data: tempfile::TempDir) -> App {
        App::launch_in(data).unwrap_or_else(|why| panic!("{why}"))
    }

    fn launch_in(data: tempfile::TempDir) -> Result<App, String> {
        App::launch_on(data, Command::new(tauri_driver()))
    }

    fn launch_on(data: tempfile::TempDir, driver: Command) -> Result<App, String> {
        assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run the tests through scripts/test.sh (Xvfb)");
        let one = one_app();
        let (identity, _) =
            gatehouse_keys::load_or_create(data.path(), gatehouse_keys::KeystoreKind::Os).expect("Secret Service must be running (scripts/test.sh starts one)");
        let watch = data.path().join("drop");
        let [port, uamp_port] = free_ports();
        let key = identity.signing_key().clone();
        let (driver, session) = open_window_on(driver, data.path(), &watch, port, uamp_port);
        let app = App { driver, session, data, watch, port, uamp_port, public_key: identity.public_key, key, _one: one };
        app.inbox_up()?;
        Ok(app)
    }

    /// Closes the app and starts it again on the same data, as a user quitting and opening
    /// it would.
    pub fn restart(&mut self) {
        self.quit();
        (self.driver, self.session) = open_window(self.data.path(), &self.watch, self.port, self.uamp_port);
        self.inbox_up().unwrap();
    }

    /// Ends the session and waits until the app has quit: it is single-instance, so an app
    /// started while this one lingers would hand over to it and exit.
    fn quit(&mut self) {
        let _ = self.session.http.delete(format!("{}/session/{}", self.session.base, self.session.sid)).send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Moves the app's clock (debug builds read `GATEHOUSE_TEST_CLOCK`) by `secs` from the
    /// real time; envelopes this harness signs follow it.
    pub fn set_clock(&self, secs: i64) {
        std::fs::write(self.data.path().join("test-clock"), secs.to_string()).unwrap();
    }

    /// The app's clock, as set with [`App::set_clock`].
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        let secs = std::fs::read_to_string(self.data.path().join("test-clock")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        chrono::Utc::now() + chrono::Duration::seconds(secs)
    }

    /// The inbox is up once it answers with this app's own key, not merely once something
    /// answers on its port.
    fn inbox_up(&self) -> Result<(), String> {
        let info = format!("http://127.0.0.1:{}/epp/v1/inbox", self.port);
        let ask = reqwest::blocking::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
        let t = Instant::now();
        let mut seen = String::from("nothing");
        while t.elapsed() < Duration::from_secs(20) {
            match ask.get(&info).send().and_then(|r| r.text()) {
                Ok(body) if serde_json::from_str::<Value>(&body).unwrap_or_default()["public_key"].as_str() == Some(self.public_key.as_str()) => return Ok(()),
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
        let window = self.script("return document.body.innerText;");
        Err(format!("port {} is not this app's inbox: it answered {seen}; the window shows: {window}", self.port))
    }

    pub fn submit_url(&self) -> String {
        format!("http://127.0.0.1:{}/epp/v1/submit", self.port)
    }

    pub fn envelope(&self, from: &SigningKey, scope: &str, prompt: &str) -> Value {
        gatehouse_epp::Draft::new(&self.public_key, scope, prompt).sign(from, self.now())
    }

    pub fn send(&self, from: &SigningKey, scope: &str, prompt: &str) -> (u16, Value) {
        let r = reqwest::blocking::Client::new().post(self.submit_url()).json(&self.envelope(from, scope, prompt)).send().unwrap();
        (r.status().as_u16(), r.json().unwrap())
    }

    /// The app's store, opened beside it (WAL: reads see what the app committed), writing
    /// as the app does: sealed with its key (a row written bare is not the gate's).
    pub fn store(&self) -> gatehouse_store::Store {
        let sealer = std::sync::Arc::new(gatehouse_app::sealer::GateSealer::new(&self.key, Some(self.data.path())));
        gatehouse_store::Store::open(&self.data.path().join("gatehouse.db")).unwrap().with_sealer(sealer).unwrap()
    }

    pub fn trust(&self, key: &SigningKey, name: &str, scopes: &[&str]) {
        self.trust_key(&gatehouse_epp::public_key_hex(key), name, scopes)
    }

    pub fn trust_key(&self, public_key: &str, name: &str, scopes: &[&str]) {
        self.store()
            .trust_add(&gatehouse_store::TrustEntry {
                door: gatehouse_app::trust::door_of_typed_key(public_key).into(),
                facts: Default::default(),
                public_key: public_key.into(),
                name: name.into(),
                added_at: "2026-11-01T00:00:00Z".into(),
                policy: gatehouse_store::Policy { allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(), ..Default::default() },
            })
            .unwrap();
    }

    /// Every view after Inbox and Waiting for you (which a test opens on something of its
    /// own), each opened from the nav and drawn; `f` gets its name.
    pub fn each_other_view(&self, mut f: impl FnMut(&str)) {
        for (nav, drawn, name) in [
            ("#nav-people", "#contacts .contact-list > *", "people & agents"),
            ("#nav-conversations", "#conversation-threads > *", "conversations"),
            ("#nav-agents", "#asop-rules", "your agents"),
            ("#nav-activity", "#audit-check", "activity"),
            ("#nav-settings", "#a2a-endpoint", "settings"),
        ] {
            self.click(nav);
            self.find(drawn);
            f(name);
        }
    }

    /// Opens the inbox on the arrival whose preview contains `needle`: its receipt id.
    pub fn open_arrival(&self, needle: &str) -> String {
        self.click("#nav-inbox");
        let id = self.row_with(needle);
        self.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
        id
    }

    /// The inbox row whose preview contains `needle`.
    pub fn row_with(&self, needle: &str) -> String {
        self.row_with_but_not(needle, "\u{0}")
    }

    /// The inbox row whose preview contains `needle` and not `unlike` (an accepted
    /// envelope beside its earlier refused knock, with the same words).
    pub fn row_with_but_not(&self, needle: &str, unlike: &str) -> String {
        let js = format!(
            "const r=[...document.querySelectorAll('#inbox-rows .row')].find(r=>r.textContent.includes({}) && !r.textContent.includes({})); return r ? r.dataset.receipt : null;",
            serde_json::to_string(needle).unwrap(),
            serde_json::to_string(unlike).unwrap()
        );
        let mut id = String::new();
        self.wait(&format!("an inbox row with {needle:?}"), || {
            id = self.script(&js).as_str().unwrap_or("").to_string();
            !id.is_empty()
        });
        id
    }
}

/// The application's context over a test's store (as a face holds it), under a fixed
/// identity key: what every application function takes.
pub fn ctx(store: &std::sync::Arc<gatehouse_store::Store>) -> gatehouse_app::Context {
    gatehouse_app::Context::with_store(std::path::PathBuf::new(), ed25519_dalek::SigningKey::from_bytes(&[3; 32]), store.clone())
}
