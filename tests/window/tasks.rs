//! A new user's everyday questions, in the real window, each answered in at most three
//! actions (a click, a key press, a choice, or typing into one field): "find everything
//! Alice sent, whichever protocol", "stop this agent from reaching my AI", "what did I
//! allow this week".

use crate::harness::*;

/// One task: its actions are counted, and more than three fail the test.
struct Task<'a> {
    app: &'a App,
    what: &'static str,
    actions: u32,
}

impl<'a> Task<'a> {
    fn new(app: &'a App, what: &'static str) -> Self {
        Task { app, what, actions: 0 }
    }

    fn click(&mut self, css: &str) {
        self.actions += 1;
        self.app.click(css);
    }

    fn type_into(&mut self, css: &str, text: &str) {
        self.actions += 1;
        self.app.type_into(css, text);
    }

    /// Control plus a key, as the keyboard sends them (WebDriver actions: real key events).
    fn ctrl(&mut self, key: &str) {
        self.actions += 1;
        let keys = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": "\u{E009}"}, {"type": "keyDown", "value": key},
            {"type": "keyUp", "value": key}, {"type": "keyUp", "value": "\u{E009}"}
        ]}]});
        self.app.call(reqwest::Method::POST, "/actions", Some(keys));
    }

    /// Picks an option of a select, as a user does with one choice.
    fn choose(&mut self, css: &str, value: &str) {
        self.actions += 1;
        self.app.find(css);
        let js = format!(
            "const s = document.querySelector({}); s.value = {}; s.dispatchEvent(new Event('change')); return s.value;",
            serde_json::to_string(css).unwrap(),
            serde_json::to_string(value).unwrap()
        );
        assert_eq!(self.app.script(&js).as_str(), Some(value), "{css} offers {value}");
    }

    /// A click on `css` inside the card of the contact called `name`.
    fn click_in_card(&mut self, name: &str, css: &str) {
        self.actions += 1;
        let js = format!(
            "const c = [...document.querySelectorAll('#contacts .contact')].find((e) => e.querySelector('h3').textContent.includes({})); const b = c && c.querySelector({}); if (!b) return false; b.click(); return true;",
            serde_json::to_string(name).unwrap(),
            serde_json::to_string(css).unwrap()
        );
        self.app.wait(&format!("{css} in {name}'s card"), || self.app.script(&js).as_bool() == Some(true));
    }

    fn done(self) {
        assert!(self.actions <= 3, "“{}” took {} actions", self.what, self.actions);
    }
}

#[test]
fn a_new_user_finds_stops_and_reviews_in_three_actions_each() {
    let app = App::start();
    app.click("#welcome-done");
    let store = std::sync::Arc::new(app.store());
    let now = chrono::Utc::now();

    // Alice reaches the user two ways: her own Gatehouse (EPP) and her agent (UAMP), one
    // contact. Bob writes too; a news agent is trusted; a stranger knocks and is let in.
    let alice = SigningKey::from_bytes(&[41; 32]);
    app.trust(&alice, "Alice", &["support"]);
    let alice_agent = SigningKey::from_bytes(&[42; 32]);
    let alice_did = gatehouse_uamp::sign::did_of(&alice_agent);
    app.trust_key(&alice_did, "Alice's agent", &["inform"]);
    let token = gatehouse_app::doors::uamp::UampDoor::issue_token(&store, &alice_did, now).unwrap();
    let id_of = |key: &str| store.contact_of(key).unwrap().unwrap().id;
    gatehouse_app::contacts::merge(&crate::harness::ctx(&store), id_of(&alice_did), id_of(&gatehouse_epp::public_key_hex(&alice)), now).unwrap();
    let bob = SigningKey::from_bytes(&[43; 32]);
    app.trust(&bob, "Bob", &["support"]);
    let news = SigningKey::from_bytes(&[44; 32]);
    app.trust(&news, "Newsbot", &["support"]);

    assert_eq!(app.send(&alice, "support", "The minutes from Tuesday are attached").0, 200);
    let my_did = gatehouse_uamp::sign::did_of(&app.key);
    let env = gatehouse_uamp::sign::sign(
        gatehouse_uamp::sign::draft(&alice_did, &[&my_did], gatehouse_uamp::Intent::Inform, "text/plain", "Reminder: the review moved to Friday"),
        &alice_agent,
    );
    let sent = reqwest::blocking::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap()
        .post(format!("https://127.0.0.1:{}/v1/messages", app.uamp_port))
        .header("content-type", "application/uamp+json;v=1")
        .bearer_auth(&token)
        .json(&env)
        .send()
        .unwrap();
    assert_eq!(sent.status().as_u16(), 200, "{}", sent.text().unwrap());
    assert_eq!(app.send(&bob, "support", "Lunch on Thursday?").0, 200);
    assert_eq!(app.send(&news, "support", "Today's headlines").0, 200);
    let carol = SigningKey::from_bytes(&[45; 32]);
    assert_eq!(app.send(&carol, "support", "Hello, I am Carol").0, 401);
    app.click("#nav-consent");
    app.click("#view-consent button[data-decision='always_allow_scope']");
    app.wait_text("#consent-notice", "");
    // Something allowed long ago, which "this week" leaves out.
    store.audit("trust.add", None, &json!({"name": "Dana, allowed last month"}), &(now - chrono::Duration::days(30)).to_rfc3339()).unwrap();
    app.click("#nav-inbox");

    // 1. Everything Alice sent, whichever way it came: Ctrl+K, her name, her entry.
    let mut t = Task::new(&app, "find everything Alice sent");
    t.ctrl("k");
    t.type_into("#search-box", "Alice");
    app.wait_text("#search-results", "Everything Alice sent");
    app.screenshot("search");
    t.click("#search-results [data-result='person']");
    t.done();
    app.wait_text("#inbox-contact", "From Alice, all their keys");
    app.wait_text("#inbox-rows", "Reminder: the review moved to Friday");
    let rows = app.text("#inbox-rows");
    assert!(rows.contains("The minutes from Tuesday"), "{rows}");
    assert!(!rows.contains("Lunch on Thursday") && !rows.contains("headlines"), "only Alice: {rows}");
    app.screenshot("task-alice");

    // 2. Stop the news agent: its card, Block, yes.
    let mut t = Task::new(&app, "stop this agent from reaching my AI");
    t.click("#nav-people");
    t.click_in_card("Newsbot", "button.block");
    t.click(".ask-first .confirm-yes");
    t.done();
    app.wait_text("#blocked-list", "blocked from the trust manager");
    app.wait_text("#contacts", "Blocked: nothing it sends gets through");
    app.screenshot("people");
    let (status, refused) = app.send(&news, "support", "More headlines");
    assert_ne!(status, 200, "{refused}");
    assert_eq!(app.send(&alice, "support", "Still here").0, 200, "the others are not touched");

    // 3. What was allowed this week: Activity, what you allowed, this week.
    let mut t = Task::new(&app, "what did I allow this week");
    t.click("#nav-activity");
    t.choose("#activity-show", "allowed");
    t.choose("#activity-when", "week");
    t.done();
    let kinds = "return [...document.querySelectorAll('#audit-list li')].map((l) => l.dataset.kind).join(',');";
    app.wait("only what was allowed", || app.script(kinds).as_str().is_some_and(|k| !k.is_empty() && k.split(',').all(|k| k == "allowed")));
    app.wait("only this week", || !app.text("#audit-list").contains("Dana"));
    let list = app.text("#audit-list");
    assert!(list.contains("You allowed"), "{list}");
    assert!(!list.contains("You blocked"), "a block is not an allowance: {list}");
    app.screenshot("activity-allowed");
    // Any time: last month's allowance is there, so the filter is what left it out.
    app.script("const s = document.querySelector('#activity-when'); s.value = ''; s.dispatchEvent(new Event('change')); return true;");
    app.wait_text("#audit-list", "Dana");
}
