//! The approval page in a real browser: Debian's Chromium, headless, on a 360 px phone
//! screen, driven over WebDriver (chromium-driver). The page is opened from an
//! invitation, joins (its key made by WebCrypto, non-extractable), shows a stranger's
//! knock as it arrives (the gate's live stream, no refresh), lets it in, and is told at
//! once when its device is removed.

use crate::common::{key, pubhex, TestInbox};
use gatehouse_app::approvers;
use serde_json::{json, Value};
use std::time::Duration;

struct Browser {
    http: reqwest::Client,
    session: String,
    driver: std::process::Child,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Chromium and its driver, or None (the test skipped) where they are not installed and
/// not required.
async fn chromium() -> Option<Browser> {
    let (driver, browser) = ("/usr/bin/chromedriver", "/usr/bin/chromium");
    if !std::path::Path::new(driver).exists() || !std::path::Path::new(browser).exists() {
        let why = "Chromium and chromium-driver are not installed (scripts/setup.sh installs them)";
        assert!(std::env::var_os("GATEHOUSE_REQUIRE_PEERS").is_none(), "{why}");
        eprintln!("skipped: {why}");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
        "binary": browser,
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=360,740"],
        "mobileEmulation": {"deviceMetrics": {"width": 360, "height": 740, "pixelRatio": 2.0, "touch": true, "mobile": true}}
    }}}});
    let mut last = String::new();
    for _ in 0..100 {
        match http.post(format!("{base}/session")).json(&caps).send().await {
            Ok(r) => {
                let v: Value = r.json().await.unwrap();
                let session = v["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {v}")).to_string();
                return Some(Browser { http, session: format!("{base}/session/{session}"), driver: child });
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start: {last}");
}

impl Browser {
    async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        v["value"].clone()
    }
    async fn go(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({"url": url}))).await;
    }
    async fn script(&self, js: &str) -> Value {
        self.cmd(reqwest::Method::POST, "/execute/sync", Some(json!({"script": js, "args": []}))).await
    }
    async fn script_async(&self, js: &str) -> Value {
        self.cmd(reqwest::Method::POST, "/execute/async", Some(json!({"script": js, "args": []}))).await
    }
    async fn text(&self, css: &str) -> String {
        self.script(&format!("const e = document.querySelector({}); return e ? e.innerText : '';", serde_json::to_string(css).unwrap()))
            .await
            .as_str()
            .unwrap_or("")
            .to_string()
    }
    /// Waits up to 10 s for `css` to contain `needle`.
    async fn wait_text(&self, css: &str, needle: &str) {
        for _ in 0..200 {
            if self.text(css).await.contains(needle) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.screenshot("phone-timeout").await;
        panic!("timed out waiting for {css} to contain {needle:?}; the page shows {:?}", self.text("body").await);
    }
    /// Clicks in the page's own event loop, retried until an element is there to take
    /// it: the page draws its list again whenever what waits changes, and an element found
    /// by one WebDriver call may be gone by the next.
    async fn click(&self, css: &str) {
        let js = format!("const e = document.querySelector({}); if (!e) return false; e.click(); return true;", serde_json::to_string(css).unwrap());
        for _ in 0..200 {
            if self.script(&js).await == json!(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no {css} to click; the page shows {:?}", self.text("body").await);
    }
    async fn screenshot(&self, name: &str) {
        use base64::Engine as _;
        let png = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap_or_default()).unwrap_or_default();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), bytes).unwrap();
    }
}

/// The phone joins the gate from an invitation: its approver id.
async fn join(phone: &Browser, inbox: &TestInbox, name: &str) -> String {
    let inv = approvers::invite(&inbox.ctx(), name, &inbox.url, chrono::Utc::now()).unwrap();
    phone.go(&inv.url).await;
    phone.wait_text("main", "Join this gate as an approver").await;
    phone.click("#join-button").await;
    phone.wait_text("#who", &format!("This device: {name}")).await;
    phone.wait_text("main", "Nothing waits.").await;
    approvers::list(&crate::common::ctx(&inbox.store)).unwrap().into_iter().find(|a| a.name == name).unwrap().id
}

/// An MCP server the user's AI app runs knocks, and then one of its tool calls that no
/// rule decides waits: both are decided on the phone like any other item, the call shown
/// with its server, its tool and its arguments, and it goes on only once allowed there.
#[tokio::test]
async fn an_mcp_servers_call_waits_until_it_is_allowed_on_the_phone() {
    let Some(phone) = chromium().await else { return };
    let inbox = TestInbox::start(&pubhex(&key(0x61)), false).await;
    let id = join(&phone, &inbox, "Ana's phone").await;
    let wrap = crate::mcp_door::Wrap::at(&inbox.url);
    assert_eq!(wrap.list(&[("read_file", "Reads a file")]).await, ["read_file"], "nothing of a server not let in reaches the model");
    phone.wait_text(".card.waiting", "Reads a file").await;
    phone.click(".card.waiting button[data-decision='always_allow_scope']").await;
    phone.wait_text("main", "Nothing waits.").await;

    let asked = tokio::spawn(async move { wrap.call("read_file", serde_json::json!({"path": "notes.txt"})).await });
    phone.wait_text(".card.waiting[data-kind='guardian_step']", "notes.txt").await;
    let card = phone.text(".card.waiting").await;
    assert!(card.contains("read_file") && card.contains("MCP server files") && card.contains("waits for your answer"), "{card}");
    assert_eq!(phone.text("#status").await, "", "what the server's knock was answered is not shown under the call");
    assert!(card.contains("The tool says of itself") && card.contains("Reads a file"), "the tool's description is on the card: {card}");
    // The call said once, in words: not again in the heading, no method's name for it.
    assert_eq!(card.matches("wants to use read_file").count(), 1, "{card}");
    assert!(!card.contains("steps/toolCallRequest"), "{card}");
    phone.screenshot("phone-mcp-call").await;
    assert!(!asked.is_finished(), "the call waits for the phone");
    phone.click(".card.waiting button[data-decision='allow_once']").await;
    phone.wait_text("main", "Nothing waits.").await;
    assert_eq!(asked.await.unwrap(), gatehouse_app::doors::mcp::signed::Answer::Allow);
    let audit = inbox.store.audit_list(20).unwrap();
    let decided = audit.iter().find(|a| a.action == "consent.allow_once").expect("the phone's decision is on record");
    assert_eq!(decided.detail["by"]["approver"], id.as_str(), "{:?}", decided.detail);
    inbox.stop().await;
}

#[tokio::test]
async fn a_phone_joins_from_an_invitation_lets_a_knock_in_and_learns_it_was_removed() {
    let Some(phone) = chromium().await else { return };
    let inbox = TestInbox::start(&pubhex(&key(0x61)), false).await;
    let inv = approvers::invite(&inbox.ctx(), "Ana's phone", &inbox.url, chrono::Utc::now()).unwrap();

    phone.go(&inv.url).await;
    phone.wait_text("main", "Join this gate as an approver").await;
    assert!(!phone.text("main").await.contains("null"), "{}", phone.text("main").await);
    let code = phone.script("return document.getElementById('join-code').value").await;
    assert_eq!(code, inv.code, "the code comes from the invitation's link");
    phone.screenshot("phone-join").await;
    phone.click("#join-button").await;
    phone.wait_text("#who", "This device: Ana's phone").await;
    phone.wait_text("main", "Nothing waits.").await;
    // The code left the address bar, and the key the page made cannot be read back.
    assert_eq!(phone.script("return location.href").await, format!("{}/approve", inbox.url));
    let extractable = phone
        .script_async(
            "const done = arguments[arguments.length - 1];
             const r = indexedDB.open('gatehouse-approver', 1);
             r.onsuccess = () => { const g = r.result.transaction('device').objectStore('device').get('device');
               g.onsuccess = () => done([g.result.key.extractable, g.result.key.algorithm.namedCurve]); };",
        )
        .await;
    assert_eq!(extractable, json!([false, "P-256"]));
    let registered = approvers::list(&crate::common::ctx(&inbox.store)).unwrap();
    assert_eq!(registered.len(), 1);

    // Knocks in "support" need this phone's vote (a quorum of one, shown on the card).
    let rule =
        gatehouse_app::quorum::RuleInput { scope: Some("support".into()), sender: None, need: 1, approvers: vec![registered[0].id.clone()], deny_ends: None };
    gatehouse_app::quorum::rule_add(&crate::common::ctx(&inbox.store), rule).unwrap();

    // A stranger knocks; the phone sees it (refreshed) and lets it in for good.
    let stranger = key(0x62);
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "Hello from the pharmacy bot: may I remind you about refills?")).await.0, 401);
    // It appears by itself: the gate tells the page (no refresh, no polling).
    phone.wait_text(".card.waiting", "pharmacy bot").await;
    let card = phone.text(".card.waiting").await;
    assert!(card.contains("A new sender asks to reach your AI for “support”"), "{card}");
    assert!(card.contains("Needs 1 of Ana's phone to agree; one deny ends it.") && card.contains("No one has decided yet."), "{card}");
    // On a 360 px screen nothing scrolls sideways, and every field has its label.
    let fits = phone
        .script("return [document.documentElement.scrollWidth, [...document.querySelectorAll('input, select')].every(e => e.labels && e.labels.length > 0)]")
        .await;
    assert_eq!(fits, json!([360, true]));
    phone.screenshot("phone-waiting").await;
    phone.click(".card.waiting button[data-decision='always_allow_scope']").await;
    phone.wait_text("#status", "Trusted for").await;
    phone.wait_text("main", "Nothing waits.").await;
    assert_eq!(inbox.post_json(&inbox.signed(&stranger, "support", "Your refill is ready.")).await.0, 200);
    let audit = inbox.store.audit_list(20).unwrap();
    let decided = audit.iter().find(|a| a.action == "consent.always_allow_scope").unwrap();
    assert_eq!(decided.detail["by"]["approver"], registered[0].id.as_str(), "{:?}", decided.detail);

    // A new key says it acts on behalf of a contact: the claim, and every other line the
    // approval's digest covers, are on the card the phone decides from.
    let alice = key(0x63);
    inbox.trust(&pubhex(&alice), "Alice", gatehouse_store::Policy { allowed_scopes: vec!["ops".into()], ..Default::default() });
    let impostor = key(0x64);
    let env = gatehouse_epp::Draft { on_behalf_of: Some(pubhex(&alice)), ..inbox.draft("billing", "Pay the invoice from my new account") }
        .sign(&impostor, chrono::Utc::now());
    assert_eq!(inbox.post_json(&env).await.0, 401);
    phone.wait_text(".card.waiting", "Pay the invoice").await;
    let card = phone.text(".card.waiting").await;
    assert!(card.contains("acts on behalf of Alice") && card.contains("not theirs"), "the claim is drawn: {card}");
    let items = approvers::waiting(&inbox.store, &inbox.public_key, &registered[0].id, chrono::Utc::now()).unwrap();
    assert_eq!(items.len(), 1);
    for line in &items[0].shown {
        assert!(card.contains(&line.text), "{} ({}) is covered by the digest but not drawn: {card}", line.field, line.text);
    }
    // A card with a warning has no allow as its main button: Deny is.
    let main = phone.script("return [...document.querySelectorAll('.card.waiting button.primary')].map(b => b.dataset.decision)").await;
    assert_eq!(main, json!(["deny"]), "{card}");
    phone.screenshot("phone-claim").await;
    phone.click(".card.waiting button[data-decision='deny']").await;
    phone.wait_text("main", "Nothing waits.").await;

    // Removed on the gate: the phone's next request is refused, and it says so.
    approvers::remove(&crate::common::ctx(&inbox.store), &registered[0].id).unwrap();
    phone.wait_text("main", "This device was removed from the gate").await;
    assert_eq!(phone.text("#status").await, "", "what it said before is gone");
    phone.screenshot("phone-removed").await;
    inbox.stop().await;
}

/// The phone page is a witness of the gate's activity log: it holds the newest checkpoint
/// the gate signed (from its first visit), and when the log has been rewound behind the
/// gate's back it says so as it opens — and the gate's /ready names the phone.
#[tokio::test]
async fn a_phone_holding_a_later_checkpoint_says_the_log_was_rewound() {
    let Some(phone) = chromium().await else { return };
    let gate = key(0x65);
    let inbox = TestInbox::start(&pubhex(&gate), false).await;
    inbox.store.audit("trust.add", Some("aa"), &json!({}), "2026-11-28T10:00:00Z").unwrap();
    let first = gatehouse_app::audit::checkpoint(&inbox.store, &gate, None).unwrap().unwrap();
    inbox.store.audit("trust.revoke", Some("aa"), &json!({}), "2026-11-28T10:05:00Z").unwrap();
    gatehouse_app::audit::checkpoint(&inbox.store, &gate, None).unwrap().unwrap();
    let inv = approvers::invite(&inbox.ctx(), "Ana's phone", &inbox.url, chrono::Utc::now()).unwrap();
    phone.go(&inv.url).await;
    phone.wait_text("main", "Join this gate as an approver").await;
    phone.click("#join-button").await;
    phone.wait_text("main", "Nothing waits.").await;
    // The page keeps the newest checkpoint (the join's own audit entry is not signed yet).
    let t = std::time::Instant::now();
    loop {
        let held = phone
            .script_async(
                "const done = arguments[arguments.length - 1];
                 const r = indexedDB.open('gatehouse-approver', 1);
                 r.onsuccess = () => { const g = r.result.transaction('device').objectStore('device').get('checkpoint');
                   g.onsuccess = () => done(g.result ? g.result.through_id : null); };",
            )
            .await;
        if held.as_i64().is_some_and(|h| h > first.through_id) {
            break;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(10), "the page did not keep the gate's checkpoint: {held}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(phone.script("return document.getElementById('log-rewound').hidden").await == json!(true));

    // Rewound with the database alone, its checkpoints and the devices' rows deleted.
    crate::common::behind_the_gates_back(
        inbox.dir.path(),
        &format!(
            "DELETE FROM audit WHERE id > {0}; UPDATE audit_head SET id = {0}, hash = '{1}'; DELETE FROM audit_checkpoints WHERE through_id > {0}; DELETE FROM audit_witnesses;",
            first.through_id, first.hash
        ),
    );
    phone.go(&format!("{}/approve", inbox.url)).await;
    phone.wait_text("#log-rewound", "activity log was changed behind its back").await;
    phone.screenshot("phone-log-rewound").await;
    let ready: Value = reqwest::get(format!("{}/ready", inbox.url)).await.unwrap().json().await.unwrap();
    assert!(ready["problems"]["audit"].as_str().is_some_and(|p| p.contains("Ana's phone")), "{ready}");
}
