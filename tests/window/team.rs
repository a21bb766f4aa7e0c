//! A team's gate decided together: one PostgreSQL, two nodes of the gate, two members'
//! desktops (each on a computer of its own, joined from an invitation in its window) and a
//! phone (Chromium). A knock at node 1 appears in both windows and on the phone without
//! a reload; a 2-of-3 rule needs two of them; the audit export verifies, and fails once a
//! row is edited behind the gate's back.

use crate::harness::*;
use gatehouse_app::{approvers, audit, quorum};
use std::sync::Arc;

/// A node of the team's gate: `gatehouse serve` on the team's database, in this process.
fn node(rt: &tokio::runtime::Runtime, database: &str, gate_key: &str, name: &str) -> (String, tokio::sync::oneshot::Sender<()>) {
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let store = Arc::new(gatehouse_store::Store::open_url(database).unwrap().with_node(name));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let opts = gatehouse_app::doors::ServeOptions { listener: Some(listener), ..Default::default() };
        tokio::spawn(gatehouse_app::doors::run(
            store,
            gate_key.to_string(),
            opts,
            async {
                let _ = stopped.await;
            },
            |_| {},
        ));
        (url, stop)
    })
}

/// A member joins in their window: Settings → Join a team gate, the invitation's link.
fn join(window: &Session, link: &str, name: &str) {
    window.script("document.getElementById('welcome-done')?.click();");
    window.click("#nav-settings");
    window.type_into("#team-link", link);
    window.type_into("#team-name", name);
    window.click("#team-join");
    window.wait_text("#team-msg", &format!("as “{name}”"));
}

#[test]
fn two_desktops_and_a_phone_decide_a_knock_at_a_team_gate_two_of_three() {
    let pg = gatehouse_pg_testserver::Postgres::start().expect("PostgreSQL is not installed: run scripts/setup.sh");
    let database = pg.fresh_database();
    let db_name = database.rsplit('/').next().unwrap().to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let owner = gatehouse_epp::generate_signing_key();
    let gate_key = gatehouse_epp::public_key_hex(&owner);
    let (node1, _stop1) = node(&rt, &database, &gate_key, "node-1");
    let (node2, _stop2) = node(&rt, &database, &gate_key, "node-2");
    // The owner's own commands (`gatehouse approvers …` on the team's database).
    let store = std::sync::Arc::new(gatehouse_store::Store::open_url(&database).unwrap());
    let owners = tempfile::tempdir().unwrap();
    let ctx = gatehouse_app::Context::with_store(owners.path().to_path_buf(), owner.clone(), store.clone());
    let invite = |name: &str, at: &str| approvers::invite(&ctx, name, at, chrono::Utc::now()).unwrap();

    // Ana and Ben join from their desktops (through either node), Cy from a phone.
    let ana = App::start();
    let ben = Elsewhere::start();
    let phone = Phone::start();
    join(&ana, &invite("Ana's laptop", &node1).url, "Ana's laptop");
    join(&ben, &invite("Ben's laptop", &node2).url, "Ben's laptop");
    phone.go(&invite("Cy's phone", &node1).url);
    phone.wait_text("main", "Join this gate as an approver");
    phone.click("#join-button");
    phone.wait_text("#who", "This device: Cy's phone");
    let devices = approvers::list(&crate::harness::ctx(&store)).unwrap();
    let id_of = |name: &str| devices.iter().find(|d| d.name == name).unwrap_or_else(|| panic!("{name} did not join: {devices:?}")).id.clone();
    let (ana_id, ben_id, cy_id) = (id_of("Ana's laptop"), id_of("Ben's laptop"), id_of("Cy's phone"));
    // The desktops' keys are in their own keychains, never in the data dir.
    for dir in [ana.data.path(), ben.data.path()] {
        let text = std::fs::read_to_string(dir.join("gatehouse.db")).unwrap_or_default();
        assert!(!dir.join("secrets").exists() && !text.contains("PRIVATE"), "no key file in {}", dir.display());
    }

    // Support needs two of the three.
    let rule =
        quorum::RuleInput { scope: Some("support".into()), sender: None, need: 2, approvers: vec![ana_id.clone(), ben_id.clone(), cy_id], deny_ends: None };
    quorum::rule_add(&crate::harness::ctx(&store), rule).unwrap();
    for w in [&*ana, &*ben] {
        w.click("#nav-consent");
        w.wait_text("#team-waiting", "Nothing waits at this gate.");
    }
    phone.wait_text("main", "Nothing waits.");

    // A stranger knocks at node 1; each screen shows it by itself, no reload.
    let stranger = gatehouse_epp::generate_signing_key();
    let knock =
        gatehouse_epp::Draft::new(&gate_key, "support", "Hello from the pharmacy bot: may I remind you about refills?").sign(&stranger, chrono::Utc::now());
    let http = reqwest::blocking::Client::new();
    let knocked = std::time::Instant::now();
    assert_eq!(http.post(format!("{node1}/epp/v1/submit")).json(&knock).send().unwrap().status().as_u16(), 401);
    let card = "#team-waiting .consent-card";
    ana.wait_text(card, "pharmacy bot");
    let at_ana = knocked.elapsed();
    ben.wait_text(card, "pharmacy bot");
    ben.wait_text("#waiting-count", "1");
    let at_ben = knocked.elapsed();
    phone.wait_text(".card.waiting", "pharmacy bot");
    let at_phone = knocked.elapsed();
    eprintln!("the knock at node 1 was shown after {at_ana:?} (Ana, via node 1), {at_ben:?} (Ben, via node 2), {at_phone:?} (the phone)");
    let shown = ben.text(card);
    assert!(shown.contains("Someone you have not approved") && shown.contains("the team’s AI a message about “support”"), "{shown}");
    assert!(
        shown.contains("Needs 2 of Ana's laptop, Ben's laptop, Cy's phone to agree; one deny ends it.") && shown.contains("No one has decided yet."),
        "{shown}"
    );
    // Who else has it open: the other desktop and the phone, each following its node.
    ben.wait_text(&format!("{card} .looking"), "Also looking: ");
    let looking = ben.text(&format!("{card} .looking"));
    assert!(looking.contains("Ana's laptop") && looking.contains("Cy's phone") && !looking.contains("Ben's"), "{looking}");
    ana.script(&format!("document.querySelector({}).scrollIntoView({{block: 'center'}});", serde_json::to_string(card).unwrap()));
    ana.screenshot("team-waiting");

    // Ana's vote is one of two: nothing is let in yet, and the others see it.
    ana.click(&format!("{card} button[data-decision='always_allow_scope']"));
    ana.wait_text("#team-notice", "Your vote is counted: 1 of the 2 needed agree so far");
    ben.wait_text(&format!("{card} .votes"), "Ana's laptop: always allow");
    phone.wait_text(".card.waiting .votes", "Ana's laptop");
    assert!(store.trust_get(&gatehouse_epp::public_key_hex(&stranger)).unwrap().is_none(), "one vote of two lets nothing in");
    ben.script(&format!("document.querySelector({}).scrollIntoView({{block: 'center'}});", serde_json::to_string(card).unwrap()));
    ben.screenshot("team-vote");
    phone.screenshot("team-phone");

    // The phone's makes two: the sender is let in, and every screen clears.
    phone.click(".card.waiting button[data-decision='always_allow_scope']");
    phone.wait_text("#status", "Trusted for");
    ana.wait_text("#team-waiting", "Nothing waits at this gate.");
    ben.wait_text("#team-waiting", "Nothing waits at this gate.");
    let next = gatehouse_epp::Draft::new(&gate_key, "support", "Your refill is ready.").sign(&stranger, chrono::Utc::now());
    assert_eq!(http.post(format!("{node2}/epp/v1/submit")).json(&next).send().unwrap().status().as_u16(), 200);
    let decided = store.audit_list(50).unwrap().into_iter().find(|a| a.action == "consent.always_allow_scope").expect("the decision is audited");
    let by = &decided.detail["by"];
    assert_eq!(by["name"], "Cy's phone", "{by}");
    assert!(by["quorum"].as_array().is_some_and(|q| q.iter().any(|d| d == ana_id.as_str())), "the agreeing devices are named: {by}");
    assert!(by["seen"]["digest"].as_str().is_some_and(|d| d.len() == 64), "{by}");

    // Ben's device is removed: his window says so at once.
    approvers::remove(&crate::harness::ctx(&store), &ben_id).unwrap();
    ben.wait_text("#team-waiting", "This desktop was removed from this gate");

    // The audit export verifies; a row edited behind the gate's back does not.
    let export = serde_json::to_string(&audit::export(&store, &owner).unwrap()).unwrap();
    assert!(audit::verify_export(&export, &gate_key).unwrap().intact);
    let edited = decided.id;
    pg.psql_in(&db_name, &format!("UPDATE audit SET detail = '{{\"by\":{{\"name\":\"Mallory\"}}}}' WHERE id = {edited}")).unwrap();
    let live = audit::verify_live(&store, &gate_key, None).unwrap();
    assert!(!live.intact && live.problem.as_ref().is_some_and(|p| p.entry == edited), "{live:?}");
    let again = serde_json::to_string(&audit::export(&store, &owner).unwrap()).unwrap();
    assert!(!audit::verify_export(&again, &gate_key).unwrap().intact);
}
