//! The other doors in the window: a UAMP peer, MAIL swarms (ours and the reference
//! server), an IntentWeb booking and the ASOP guardian.

use crate::harness::*;

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
        let exec = gatehouse_app::doors::ExecutorSpec::Command { program: "cat".into(), args: vec![png.to_string_lossy().into()], timeout_secs: 30 };
        gatehouse_app::doors::ExecutorConfig { default: exec, scopes: Default::default() }.save(&store).unwrap();
        let key = SigningKey::from_bytes(&[77; 32]);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let url = rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("https://{}", l.local_addr().unwrap());
            let (started_tx, started_rx) = tokio::sync::oneshot::channel();
            let opts = gatehouse_app::doors::ServeOptions {
                listener: None,
                watch: None,
                uamp: Some(gatehouse_app::doors::UampOptions {
                    listener: l,
                    key: key.clone(),
                    data_dir: dir.path().to_path_buf(),
                    certificate: None,
                    started: Some(started_tx),
                }),
                ..Default::default()
            };
            tokio::spawn(gatehouse_app::doors::run(
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
        gatehouse_app::doors::uamp::tls::load_or_create(self.dir.path(), &self.key).unwrap().fingerprint
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
    let app = App::start();
    let png = app.data.path().join("answer.png");
    gradient_png(&png);
    let peer = ImagePeer::start(&png);
    let my_did = gatehouse_uamp::sign::did_of(&app.key);
    // The peer's owner trusts this app and hands over a token.
    peer.store
        .trust_add(&gatehouse_store::TrustEntry {
            door: "uamp".into(),
            facts: Default::default(),
            public_key: my_did.clone(),
            name: "the app".into(),
            added_at: "2026-11-01T00:00:00Z".into(),
            policy: gatehouse_store::Policy { allowed_scopes: vec!["ask".into()], ..Default::default() },
        })
        .unwrap();
    let token = gatehouse_app::doors::uamp::UampDoor::issue_token(&peer.store, &my_did, chrono::Utc::now()).unwrap();

    // This gate's identity, for peers to pin, is in Settings.
    app.click("#nav-settings");
    app.wait_text("#uamp-did", &my_did);
    app.wait_text("#uamp-address", &format!("127.0.0.1:{}", app.uamp_port));
    // Adding the peer (People & agents → Add someone → an agent's address): its manifest and certificate are shown before anything is kept.
    app.click("#nav-people");
    app.click("#people-add-open");
    app.click("#add-agent");
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

    // Asking it (Conversations → Ask an agent): the progress line ends in Completed and the image is shown.
    app.click("#nav-conversations");
    app.click("#start-ask");
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
    assert!(app.text("#conversation-list li[data-kind='stream']").contains("You → Image maker"));
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
    app.click("#nav-people");
    app.click(&format!("#contacts button.token-issue[data-sender='{stranger_did}']"));
    app.wait_text("#uamp-token-out", "ghu_");
    app.screenshot("uamp");
}

#[test]
fn a_mail_task_streams_into_its_timeline_and_a_log_dropped_in_the_folder_is_imported() {
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

    app.click("#nav-conversations");
    app.click("#start-task");
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
    app.type_into("#conversation-search", "75.2");
    app.wait("one task to match", || count("#conversation-list li") == 1);
    app.type_into("#conversation-search", "nothing like this");
    app.wait_text("#conversation-threads", "No conversation matches.");
    app.type_into("#conversation-search", "");

    // A task log dropped into the watched folder shows up as an imported task.
    let one = |name: &str| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vectors/mail/examples").join(format!("{name}.json"));
        serde_json::to_string(&serde_json::from_str::<Value>(&std::fs::read_to_string(p).unwrap()).unwrap()).unwrap()
    };
    std::fs::write(app.watch.join("forecast.mail.jsonl"), format!("{}\n{}\n", one("mail_message_request"), one("mail_message_response"))).unwrap();
    app.wait("the imported task", || app.find_all("#conversation-list li[data-thread='task:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa']").len() == 1);
    app.click("#conversation-list li[data-thread='task:aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa']");
    app.wait_text("#mail-detail", "imported from forecast.mail.jsonl");
    assert!(app.watch.join("accepted/forecast.mail.jsonl.import.json").exists());
}

#[test]
fn the_tasks_view_follows_tasks_on_the_mail_reference_server() {
    let Some(r) = gatehouse_mail_testswarm::reference::start() else { return };
    let app = App::start();
    app.click("#nav-conversations");
    app.click("#start-task");
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
    let task = app.script("return document.querySelector(\"#conversation-list li[data-kind='task']\").dataset.thread.slice(5);").as_str().unwrap().to_string();
    app.type_into("#mail-task", &task);
    app.type_into("#mail-body", "again please");
    app.click("#mail-send");
    app.wait_text("#task-timeline", "continued: done again");
    app.wait("the second turn in the timeline", || count("#task-timeline .mail-msg") == 8);
}

#[test]
fn an_intentweb_booking_is_completed_from_the_window() {
    let app = App::start();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let site = gatehouse_intentweb_testsite::Site::new();
    let origin = rt.block_on(gatehouse_intentweb_testsite::spawn(site.clone()));

    // A company is added under People & agents, by its address.
    app.click("#nav-people");
    app.click("#people-add-open");
    app.click("#add-site");
    app.type_into("#iw-origin", &origin);
    app.click("#iw-add");
    app.wait_text("#iw-sites", "Bella Cucina Restaurant");
    let cards = app.text("#iw-sites .capabilities");
    assert!(cards.contains("Book a table for dining") && cards.contains("Cancel a reservation") && cards.contains("Mondays"), "{cards}");

    // An example from the manifest starts the conversation (in Conversations).
    app.click(".capability[data-intent='Book a table for dining'] .chip");
    app.find("#iw-intent");
    app.click("#iw-start");
    app.wait_text("#iw-thread", "Under which name");
    assert!(app.text("#iw-thread").contains("first contact"), "unverified until pinned");
    app.click(".iw-pin");
    app.wait("the key pinned", || app.text("#iw-thread").contains("key pinned since"));
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
    assert!(app.text("#conversation-list li[data-kind='site']").contains("Done — RES-"));

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

    app.click("#nav-agents");
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
fn the_tasks_view_follows_conversations_on_the_mail_2_reference_server() {
    let Some(r) = gatehouse_mail_testswarm::reference::start_v2() else { return };
    let app = App::start();
    app.click("#nav-conversations");
    app.click("#start-task");
    app.type_into("#swarm-url", &r.server.url);
    app.type_into("#swarm-name", "Chorus");
    app.type_into("#swarm-token", &r.password);
    // Without the address the server's answer says what is missing.
    app.click("#swarm-add");
    app.wait_text("#swarm-msg", "speaks MAIL 2.0");
    app.type_into("#swarm-address", &r.address);
    app.type_into("#swarm-token", &r.password);
    app.click("#swarm-add");
    app.wait_text("#mail-swarms", "user:alice@localhost — role user");
    let swarms = app.text("#mail-swarms");
    assert!(swarms.contains("MAIL 2.0 · login in keychain") && swarms.contains("chorus (1 agent)"), "{swarms}");

    // A message to the only agent; both of its answers join the conversation.
    app.type_into("#mail-subject", "Plan");
    app.type_into("#mail-body", "two steps, please");
    app.click("#mail-send");
    app.wait_text("#mail-live-status", "Completed: Done: two steps, please");
    app.wait_text("#task-timeline", "Working on it.");
    let count = |css: &str| app.script(&format!("return document.querySelectorAll({}).length;", serde_json::to_string(css).unwrap())).as_u64().unwrap();
    assert_eq!(count("#task-timeline .mail-msg"), 3);
    assert_eq!(app.text("#task-state"), "Completed");

    // Mail written elsewhere (another client of the same account) shows up by itself
    // while the view is open: the server pushes nothing, the view asks.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let other =
        gatehouse_mail::v2::Client::new(&r.server.url, gatehouse_mail::v2::Credentials { address: r.address.clone(), password: r.password.clone() }).unwrap();
    rt.block_on(other.send("Elsewhere", "written on the phone", None, std::slice::from_ref(&r.agent))).unwrap();
    app.wait_text("#conversation-list", "Elsewhere");
    app.script("document.querySelector('#conversation-threads').scrollIntoView(); return true;");
    app.screenshot("mail-v2");
}
