//! The same trust states through every door, with the same verdicts, each in its
//! protocol's words: the gate decides once (crates/gate), the doors only carry.
//! Rows are trust states; columns are doors. EPP over HTTP and from the watched folder,
//! UAMP and A2A over TLS and the ASOP guardian run on one inbox here (A2A's column is
//! EPP's: its refusals are rejected tasks whose receipts carry the gate's codes); EPP
//! delegated to a MAIL swarm on another (the repo's test swarm), EPP by mail on a third (a
//! real Dovecot), and IntentWeb against the repo's IntentSite with a store of its own per
//! row (the test site always signs with one key).

use ed25519_dalek::SigningKey;
use gatehouse_app::doors::ExecutorSpec;
use gatehouse_store::{Policy, RateLimit, Store, TrustEntry};
use gatehouse_uamp::{sign, Intent};
use serde_json::{json, Value};

use crate::uamp::{Peer, Uamp};

/// A trust state, as the user's registry holds it for a sender.
#[derive(Clone, Copy, Debug)]
enum State {
    Unknown,
    Trusted,
    Blocked,
    Revoked,
    GrantEnded,
    KeyChanged,
    OverScope,
    OverSize,
    OverRate,
}

/// The gate's verdict as a door told it.
#[derive(Debug, PartialEq, Eq)]
enum Told {
    Accepted {
        held: bool,
    },
    /// Refused, and the user asked (something is waiting).
    Knock,
    /// Refused, in the door's words.
    Refused(&'static str),
}

/// The sender's entry for `state`, allowing the scopes its door asks for.
fn enter(store: &Store, id: &str, state: State) {
    enter_for(store, id, state, &["ask", "support"])
}

fn enter_for(store: &Store, id: &str, state: State, scopes: &[&str]) {
    let now = chrono::Utc::now();
    let mut policy = Policy { allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(), ..Policy::default() };
    match state {
        State::Unknown => return,
        State::Blocked => {
            store.block(id, "test", &gatehouse_epp::utc_string(now)).unwrap();
            return;
        }
        State::Revoked => {
            store.revoke(id, "lost laptop", &gatehouse_epp::utc_string(now)).unwrap();
        }
        State::GrantEnded => {
            for s in scopes {
                policy.grant_until.insert(s.to_string(), gatehouse_epp::utc_string(now - chrono::Duration::hours(1)));
            }
        }
        State::KeyChanged => policy.key_change_unverified = true,
        State::OverScope => policy.allowed_scopes = vec!["billing".into()],
        State::OverSize => policy.max_envelope_size = 200,
        State::OverRate => policy.rate_limit = RateLimit { max_per_hour: Some(1), max_per_day: None },
        State::Trusted => {}
    }
    store
        .trust_add(&TrustEntry {
            door: gatehouse_app::trust::door_of_typed_key(id).into(),
            facts: Default::default(),
            public_key: id.into(),
            name: format!("{state:?}"),
            added_at: gatehouse_epp::utc_string(now),
            policy,
        })
        .unwrap();
}

fn waiting(store: &Store, id: &str) -> bool {
    store.pending_list().unwrap().iter().any(|p| p.public_key == gatehouse_store::sender_key(id))
}

async fn through_epp(u: &Uamp, key: &SigningKey, state: State) -> Told {
    let id = gatehouse_epp::public_key_hex(key);
    enter(&u.store, &id, state);
    let inbox_key = gatehouse_epp::public_key_hex(&SigningKey::from_bytes(&[3; 32]));
    let client = reqwest::Client::new();
    let send = |n: u32| {
        let env = gatehouse_epp::Draft::new(&inbox_key, "support", &format!("prompt number {n} for the conformance table")).sign(key, chrono::Utc::now());
        client.post(format!("{}/epp/v1/submit", u.plain)).json(&env).send()
    };
    if matches!(state, State::OverRate) {
        assert_eq!(send(0).await.unwrap().status(), 200, "the first within the rate");
    }
    let r: Value = send(1).await.unwrap().json().await.unwrap();
    match (r["status"].as_str(), r.pointer("/error/code").and_then(Value::as_str)) {
        (Some("accepted"), _) => Told::Accepted { held: r["x-held-for-consent"] == true },
        (_, Some("UNTRUSTED_SENDER")) if waiting(&u.store, &id) => Told::Knock,
        (_, Some(code)) => Told::Refused(leak(code)),
        _ => panic!("{r}"),
    }
}

/// An envelope file dropped into the watched folder; its receipt is filed beside it.
async fn through_folder(u: &Uamp, key: &SigningKey, state: State) -> Told {
    let id = gatehouse_epp::public_key_hex(key);
    enter(&u.store, &id, state);
    let inbox_key = gatehouse_epp::public_key_hex(&SigningKey::from_bytes(&[3; 32]));
    let drop = |n: u32| {
        let env = gatehouse_epp::Draft::new(&inbox_key, "support", &format!("file number {n} for the conformance table")).sign(key, chrono::Utc::now());
        let name = format!("{}-{n}.json", &id[..8]);
        // Written aside and renamed in, as a careful sender does: never read half-written.
        let tmp = u.watch.join(format!(".{name}.part"));
        std::fs::write(&tmp, env.to_string()).unwrap();
        std::fs::rename(&tmp, u.watch.join(&name)).unwrap();
        name
    };
    let receipt = |name: &str| {
        ["accepted", "rejected"]
            .iter()
            .find_map(|d| std::fs::read(u.watch.join(d).join(format!("{name}.receipt.json"))).ok())
            .map(|b| serde_json::from_slice::<Value>(&b).unwrap())
    };
    let filed = |name: String| async move {
        for _ in 0..200 {
            if let Some(r) = receipt(&name) {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("{name} was not filed");
    };
    if matches!(state, State::OverRate) {
        assert_eq!(filed(drop(0)).await["status"], "accepted", "the first within the rate");
    }
    let r = filed(drop(1)).await;
    match (r["status"].as_str(), r.pointer("/error/code").and_then(Value::as_str)) {
        (Some("accepted"), _) => Told::Accepted { held: r["x-held-for-consent"] == true },
        (_, Some("UNTRUSTED_SENDER")) if waiting(&u.store, &id) => Told::Knock,
        (_, Some(code)) => Told::Refused(leak(code)),
        _ => panic!("{r}"),
    }
}

async fn through_uamp(u: &Uamp, seed: u8, state: State) -> Told {
    let key = SigningKey::from_bytes(&[seed; 32]);
    let did = sign::did_of(&key);
    enter(&u.store, &did, state);
    let token = matches!(state, State::Unknown | State::Blocked)
        .then_some(())
        .map_or_else(|| Some(gatehouse_app::doors::uamp::UampDoor::issue_token(&u.store, &did, chrono::Utc::now()).unwrap()), |_| None);
    let p = Peer { key, did: did.clone(), token };
    let body = "x".repeat(if matches!(state, State::OverSize) { 400 } else { 10 });
    if matches!(state, State::OverRate) {
        assert!((200..300).contains(&u.post(&p, &u.envelope(&p, Intent::Ask, &body, json!({}))).await.0), "the first within the rate");
    }
    let (status, r, _) = u.post(&p, &u.envelope(&p, Intent::Ask, &body, json!({}))).await;
    match (status, r["reason"].as_str()) {
        (200..=299, _) => Told::Accepted { held: r["held_for_consent"] == true },
        (_, Some("untrusted_sender")) if waiting(&u.store, &did) => Told::Knock,
        (_, Some(reason)) => Told::Refused(leak(reason)),
        _ => panic!("{status} {r}"),
    }
}

/// An A2A agent, known by its client certificate's key (a token would make it known
/// already: an unknown caller can only be a certificate). Its refusals are rejected tasks
/// whose receipts carry the gate's codes, as EPP's do.
async fn through_a2a(u: &Uamp, state: State) -> Told {
    let agent = rcgen::generate_simple_self_signed(vec!["agent.example".to_string()]).unwrap();
    let spki = gatehouse_net::peer::PeerKey::from_certificate(agent.cert.der()).0.unwrap();
    let id = gatehouse_app::doors::a2a::key_id(&spki);
    enter(&u.store, &id, state);
    let pem = std::fs::read(u.dir().join(gatehouse_app::doors::uamp::tls::CERT_FILE)).unwrap();
    let identity = reqwest::Identity::from_pem(format!("{}{}", agent.cert.pem(), agent.key_pair.serialize_pem()).as_bytes()).unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .tls_built_in_root_certs(false)
        .identity(identity)
        .build()
        .unwrap();
    let text = "x".repeat(if matches!(state, State::OverSize) { 400 } else { 10 });
    let send = |n: u32| {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m-{n}"), "role": "ROLE_USER", "parts": [{"text": text}], "metadata": {"scope": "support"}},
            "configuration": {"returnImmediately": true}}});
        client.post(format!("{}/a2a", u.https)).header("A2A-Version", "1.0").json(&body).send()
    };
    if matches!(state, State::OverRate) {
        let first: Value = send(0).await.unwrap().json().await.unwrap();
        assert_ne!(first["result"]["task"]["status"]["state"], "TASK_STATE_REJECTED", "the first within the rate: {first}");
    }
    let r: Value = send(1).await.unwrap().json().await.unwrap();
    let task = &r["result"]["task"];
    match task["status"]["state"].as_str() {
        Some("TASK_STATE_INPUT_REQUIRED") => Told::Accepted { held: true },
        Some("TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING" | "TASK_STATE_COMPLETED") => Told::Accepted { held: false },
        Some("TASK_STATE_REJECTED") => {
            // A knock is what its receipt says it was: a trusted agent asking about a new
            // scope also waits for the user, and is told it is not allowed.
            let receipt = u.store.receipt(task["id"].as_str().unwrap()).unwrap().unwrap();
            match receipt.outcome {
                Some(gatehouse_code::Outcome::Knock) if waiting(&u.store, &id) => Told::Knock,
                _ => Told::Refused(leak(receipt.code.as_deref().unwrap())),
            }
        }
        _ => panic!("{state:?}: {r}"),
    }
}

/// One of the user's agents asks the guardian before a tool call. The user's rule lets every
/// step through, so only the trust state decides; a held step waits for the user, who is
/// then seen to be asked.
async fn through_asop(u: &Uamp, n: u8, state: State) -> Told {
    use gatehouse_app::doors::guardian::{agent_key, Guardian, UserAnswer, SCOPE};
    let agent = format!("agent-{n}");
    let (key, id) = (agent_key(&agent), agent.clone());
    enter_for(&u.store, &key, state, &[SCOPE]);
    let url = format!("{}/asop/v1", u.plain);
    let step = move |i: u32| {
        json!({"jsonrpc": "2.0", "id": i, "method": "steps/toolCallRequest", "params": {
            "context": {"agent": {"id": agent, "name": "Helper", "instructions": "help", "version": "1", "provider": {"name": "Me", "url": "https://me.example"}},
                "session": {"id": format!("s-{n}")}, "turnId": "t-1", "stepId": format!("step-{i}"), "timestamp": "2026-11-26T00:00:00.000Z", "user": {"id": "u", "organization": {"id": "o"}}},
            "reasoning": "the user asked", "toolCallRequest": {"executionId": format!("e-{i}"), "toolId": "send", "inputs": []}}})
    };
    let call = |i: u32| {
        let (url, body) = (url.clone(), step(i));
        tokio::spawn(async move { reqwest::Client::new().post(url).json(&body).send().await.unwrap().json::<Value>().await.unwrap() })
    };
    if matches!(state, State::OverRate) {
        assert_eq!(call(0).await.unwrap()["result"]["decision"], "allow", "the first within the rate");
    }
    let asked = call(1);
    let guardian = u.inbox.inbox().door::<Guardian>().unwrap();
    let mut held = false;
    for _ in 0..100 {
        if asked.is_finished() {
            break;
        }
        if let Some(s) = guardian.pending().unwrap().into_iter().find(|s| s.agent_id.as_deref() == Some(id.as_str())) {
            held = true;
            guardian
                .answer(s.row, UserAnswer { decision: gatehouse_asop::rules::Action::Deny, always: false, redact: None, note: None, lasting: None })
                .unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let r = asked.await.unwrap();
    match (r["result"]["decision"].as_str(), r["error"]["code"].as_i64()) {
        (Some(_), _) if held => Told::Accepted { held: true },
        (Some("allow"), _) => Told::Accepted { held: false },
        (_, Some(-32001)) if waiting(&u.store, &key) => Told::Knock,
        (_, Some(-32003)) => Told::Refused(if r["error"]["message"].as_str().unwrap().contains("revoked") { "-32003 revoked" } else { "-32003 blocked" }),
        (_, Some(code)) => Told::Refused(leak(&code.to_string())),
        _ => panic!("{state:?}: {r}"),
    }
}

/// The user asks an IntentSite; its signed answer is judged by its key's standing. A site
/// answers the user's own request, so no size or rate limit of a sender applies to it (the
/// client bounds what it reads): those rows are let in as trusted.
async fn through_intentweb(state: State) -> Told {
    use gatehouse_app::doors::intent;
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(Store::open(&dir.path().join("gatehouse.db")).unwrap());
    let site = gatehouse_intentweb_testsite::Site::new();
    let origin = gatehouse_intentweb_testsite::spawn(site.clone()).await;
    intent::add_site(store.clone(), &origin).await.unwrap();
    let kid = site.did();
    enter_for(&store, &kid, state, &[intent::SCOPE]);
    if !matches!(state, State::Unknown | State::Blocked) {
        intent::pin(&store, &origin, &kid).unwrap();
    }
    let me = SigningKey::from_bytes(&[6; 32]);
    let t = intent::start(store.clone(), &me, &origin, None, "Book a table for 3", None).await.unwrap();
    let r = t.received;
    let warning = r.warning.clone().unwrap_or_default();
    match (r.accepted, r.verdict.as_ref().and_then(|v| v["kind"].as_str())) {
        (true, Some("verified")) => Told::Accepted { held: false },
        (true, Some("new_key")) if waiting(&store, &kid) => Told::Knock,
        (false, _) if warning.contains("a key you blocked") => Told::Refused("you blocked"),
        (false, _) if warning.contains("a key you revoked") => Told::Refused("you revoked"),
        _ => panic!("{state:?}: {r:?}"),
    }
}

/// An inbox whose executor for "support" is a MAIL swarm (the repo's test swarm): what the
/// gate lets in is delegated there as a task, what it holds or refuses is not.
struct Delegating {
    inbox: crate::common::TestInbox,
}

async fn delegating() -> Delegating {
    use gatehouse_mail_testswarm::{spawn, Config, Swarm};
    let url = spawn(Swarm::new(Config::new("swarm-a"))).await;
    let mut scopes = std::collections::BTreeMap::new();
    scopes.insert("support".to_string(), gatehouse_app::executors::swarm("helpers", None));
    let inbox_key = gatehouse_epp::public_key_hex(&SigningKey::from_bytes(&[3; 32]));
    let inbox = crate::common::TestInbox::start_with(&inbox_key, false, gatehouse_app::doors::ExecutorConfig { default: ExecutorSpec::Noop, scopes }).await;
    gatehouse_keys::load_or_create(inbox.dir.path(), gatehouse_keys::KeystoreKind::File).unwrap();
    gatehouse_keys::Secrets::open(inbox.dir.path()).unwrap().put(&gatehouse_app::doors::mail::token_name("helpers", &url), "user-token").unwrap();
    inbox.store.mail_swarm_put("helpers", &url, "2026-11-26T00:00:00Z").unwrap();
    Delegating { inbox }
}

/// An envelope whose executor delegates to the swarm: let in, it becomes a task there
/// (answered); held, nothing reaches the swarm until the user decides; refused, nothing.
async fn through_mail_delegation(d: &Delegating, key: &SigningKey, state: State) -> Told {
    let (store, id) = (&d.inbox.store, gatehouse_epp::public_key_hex(key));
    enter(store, &id, state);
    let tasks_before = store.mail_tasks(None, 1000).unwrap().len();
    if matches!(state, State::OverRate) {
        let first = d.inbox.signed(key, "support", "the first within the rate");
        assert_eq!(d.inbox.post_json(&first).await.0, 200);
        crate::common::eventually("the first was delegated", || store.mail_tasks(None, 1000).unwrap().len() > tasks_before).await;
    }
    let tasks_before = store.mail_tasks(None, 1000).unwrap().len();
    let env = d.inbox.signed(key, "support", "Weather in Lyon?");
    let (_, _, r) = d.inbox.post_json(&env).await;
    match (r["status"].as_str(), r.pointer("/error/code").and_then(Value::as_str)) {
        (Some("accepted"), _) => {
            let envelope_id = env["envelope_id"].as_str().unwrap().to_string();
            let row = || store.envelopes(100, 0).unwrap().into_iter().find(|e| e.envelope_id == envelope_id).unwrap();
            if row().exec_status == gatehouse_store::ExecStatus::Held {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                assert_eq!(store.mail_tasks(None, 1000).unwrap().len(), tasks_before, "{state:?}: a held prompt reached the swarm");
                return Told::Accepted { held: true };
            }
            crate::common::eventually("the executor finished", || {
                matches!(row().exec_status, gatehouse_store::ExecStatus::Succeeded | gatehouse_store::ExecStatus::Failed)
            })
            .await;
            let task = row().exec_result.and_then(|r| r["task_id"].as_str().map(str::to_string));
            match task.and_then(|t| store.mail_task(&t).unwrap()) {
                Some(t) if t.task.state == "completed" => Told::Accepted { held: false },
                other => panic!("{state:?}: let in but not delegated: {other:?} {:?}", row().exec_result),
            }
        }
        (_, Some("UNTRUSTED_SENDER")) if waiting(store, &id) => Told::Knock,
        (_, Some(code)) => {
            assert_eq!(store.mail_tasks(None, 1000).unwrap().len(), tasks_before, "{state:?}: a refused prompt reached the swarm");
            Told::Refused(leak(code))
        }
        _ => panic!("{r}"),
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// A row: a trust state and what each door says to it.
struct Row {
    state: State,
    epp: Told,
    uamp: Told,
    asop: Told,
    /// An IntentSite's answer: nothing of it runs, so nothing is held; a site key whose pin
    /// does not stand (ended, its key changed, pinned for another scope) asks as on first
    /// contact.
    intentweb: Told,
}

/// The rows every door is driven through.
fn table() -> [Row; 9] {
    use Told::{Accepted, Knock, Refused};
    const HELD: Told = Accepted { held: true };
    const LET_IN: Told = Accepted { held: false };
    let row = |state, epp, uamp, asop, intentweb| Row { state, epp, uamp, asop, intentweb };
    [
        row(State::Unknown, Knock, Knock, Knock, Knock),
        row(State::Trusted, LET_IN, LET_IN, LET_IN, LET_IN),
        row(State::Blocked, Refused("UNTRUSTED_SENDER"), Refused("blocked"), Refused("-32003 blocked"), Refused("you blocked")),
        row(State::Revoked, Refused("SENDER_REVOKED"), Refused("revoked"), Refused("-32003 revoked"), Refused("you revoked")),
        row(State::GrantEnded, HELD, HELD, HELD, Knock),
        row(State::KeyChanged, HELD, HELD, HELD, Knock),
        row(State::OverScope, Refused("POLICY_DENIED"), Refused("policy_denied"), Refused("-32004"), Knock),
        row(State::OverSize, Refused("SIZE_EXCEEDED"), Refused("too_large"), Refused("-32005"), LET_IN),
        row(State::OverRate, Refused("RATE_LIMITED"), Refused("rate_limited"), Refused("-32006"), LET_IN),
    ]
}

#[tokio::test]
async fn every_door_meets_each_trust_state_with_the_same_verdict_in_its_own_words() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    for _ in 0..200 {
        if u.watch.join("accepted").exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    // The user's one rule for their agents: every step is allowed (the trust state decides).
    u.store
        .asop_rule_add(&gatehouse_store::asop::AsopRuleRow {
            id: 0,
            agent: "*".into(),
            method: "*".into(),
            tool: "*".into(),
            condition: None,
            action: "allow".into(),
            redact: None,
            note: None,
            source: "user".into(),
            created_at: "2026-11-26T00:00:00Z".into(),
            until: None,
        })
        .unwrap();
    let delegating = delegating().await;
    let mut wrong = Vec::new();
    for (i, Row { state, epp, uamp, asop, intentweb }) in table().into_iter().enumerate() {
        let seed = 100 + i as u8;
        let got_epp = through_epp(&u, &SigningKey::from_bytes(&[seed; 32]), state).await;
        let got_uamp = through_uamp(&u, seed + 50, state).await;
        let got_folder = through_folder(&u, &SigningKey::from_bytes(&[seed + 100; 32]), state).await;
        if got_epp != epp {
            wrong.push(format!("{state:?} through EPP: {got_epp:?}, wanted {epp:?}"));
        }
        if got_folder != epp {
            wrong.push(format!("{state:?} through the folder: {got_folder:?}, wanted {epp:?}"));
        }
        if got_uamp != uamp {
            wrong.push(format!("{state:?} through UAMP: {got_uamp:?}, wanted {uamp:?}"));
        }
        let got_a2a = through_a2a(&u, state).await;
        if got_a2a != epp {
            wrong.push(format!("{state:?} through A2A: {got_a2a:?}, wanted {epp:?}"));
        }
        let got_asop = through_asop(&u, seed, state).await;
        if got_asop != asop {
            wrong.push(format!("{state:?} through the guardian: {got_asop:?}, wanted {asop:?}"));
        }
        let got_mail = through_mail_delegation(&delegating, &SigningKey::from_bytes(&[seed + 120; 32]), state).await;
        if got_mail != epp {
            wrong.push(format!("{state:?} through MAIL delegation: {got_mail:?}, wanted {epp:?}"));
        }
        let got_intentweb = through_intentweb(state).await;
        if got_intentweb != intentweb {
            wrong.push(format!("{state:?} through IntentWeb: {got_intentweb:?}, wanted {intentweb:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The EPP column once more, by mail: each envelope mailed to a followed account (a real
/// Dovecot) gets the verdict it gets over HTTP, in its receipt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_by_mail_meet_each_trust_state_with_the_epp_verdicts() {
    use crate::email::{account, deliver, dovecot, envelope_mail, following};
    let Some(dv) = dovecot() else { return };
    let follow = gatehouse_app::doors::email::Follow::new("personal".into(), account(dv.port), "secret".into(), None);
    let inbox = following(follow, None).await;
    let inbox_key = gatehouse_epp::public_key_hex(&crate::common::key(1));
    let mut wrong = Vec::new();
    let mut n = 0;
    for (i, Row { state, epp, .. }) in table().into_iter().enumerate() {
        let key = SigningKey::from_bytes(&[180 + i as u8; 32]);
        let id = gatehouse_epp::public_key_hex(&key);
        enter(&inbox.store, &id, state);
        let sends = if matches!(state, State::OverRate) { 2 } else { 1 };
        let mut last = Value::Null;
        for _ in 0..sends {
            n += 1;
            let env = gatehouse_epp::Draft::new(&inbox_key, "support", &format!("mail number {n} for the conformance table")).sign(&key, chrono::Utc::now());
            deliver(dv.port, &envelope_mail(&env, n)).await;
            last = env;
        }
        let envelope_id = last["envelope_id"].as_str().unwrap().to_string();
        let mut receipt = None;
        for _ in 0..400 {
            receipt = inbox.store.receipts(100, 0).unwrap().into_iter().find(|r| r.envelope_id.as_deref() == Some(envelope_id.as_str()));
            if receipt.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        let r = receipt.unwrap_or_else(|| panic!("{state:?}: no receipt for the mailed envelope")).receipt;
        let got = match (r["status"].as_str(), r.pointer("/error/code").and_then(Value::as_str)) {
            (Some("accepted"), _) => Told::Accepted { held: r["x-held-for-consent"] == true },
            (_, Some("UNTRUSTED_SENDER")) if waiting(&inbox.store, &id) => Told::Knock,
            (_, Some(code)) => Told::Refused(leak(code)),
            _ => panic!("{r}"),
        };
        if got != epp {
            wrong.push(format!("{state:?} by mail: {got:?}, wanted {epp:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// "Waiting for you" has one meaning: the list the window shows and the count on its
/// badge and in the tray are the same things, of every kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_waits_is_one_list_of_every_kind_and_its_count() {
    use gatehouse_app::consent::{self, ConsentItem};
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let inbox_key = gatehouse_epp::public_key_hex(&SigningKey::from_bytes(&[3; 32]));
    let client = reqwest::Client::new();
    let post = |key: &SigningKey| {
        let env = gatehouse_epp::Draft::new(&inbox_key, "support", "please look").sign(key, chrono::Utc::now());
        client.post(format!("{}/epp/v1/submit", u.plain)).json(&env).send()
    };
    // A stranger knocks.
    assert_eq!(post(&SigningKey::from_bytes(&[201; 32])).await.unwrap().status(), 401);
    // A sender the user asked to be asked about first.
    let held = SigningKey::from_bytes(&[202; 32]);
    let mut policy = Policy { allowed_scopes: vec!["support".into()], hold_for_consent: true, ..Policy::default() };
    u.store
        .trust_add(&TrustEntry {
            door: "epp".into(),
            facts: Default::default(),
            public_key: gatehouse_epp::public_key_hex(&held),
            name: "Held".into(),
            added_at: "2026-11-26T00:00:00Z".into(),
            policy: policy.clone(),
        })
        .unwrap();
    assert_eq!(post(&held).await.unwrap().status(), 200);
    // A UAMP agent's ask, held the same way.
    let p = u.trusted(203, &["ask"], RateLimit::default());
    policy.allowed_scopes = vec!["ask".into()];
    u.store.trust_update(&p.did, None, &policy, None).unwrap();
    assert_eq!(u.post(&p, &u.envelope(&p, Intent::Ask, "hold me", json!({}))).await.0, 202);
    // A trusted sender's signature named a key not kept for it.
    u.store.key_change_seen(&p.did, "#k2", "unknown_key", "2026-11-26T00:00:00Z").unwrap();
    // One of the user's agents asks before it acts (its request stays open meanwhile).
    let agent = gatehouse_app::doors::guardian::agent_key("helper-1");
    let asop = Policy { allowed_scopes: vec![gatehouse_app::doors::guardian::SCOPE.into()], ..Policy::default() };
    u.store
        .trust_add(&TrustEntry {
            door: "guardian".into(),
            facts: Default::default(),
            public_key: agent,
            name: "Helper".into(),
            added_at: "2026-11-26T00:00:00Z".into(),
            policy: asop,
        })
        .unwrap();
    let step = json!({"jsonrpc": "2.0", "id": 1, "method": "steps/toolCallRequest", "params": {
        "context": {"agent": {"id": "helper-1", "name": "Helper", "instructions": "help", "version": "1", "provider": {"name": "Me", "url": "https://me.example"}},
            "session": {"id": "s-1"}, "turnId": "t-1", "stepId": "step-1", "timestamp": "2026-11-26T00:00:00.000Z", "user": {"id": "u", "organization": {"id": "o"}}},
        "reasoning": "the user asked", "toolCallRequest": {"executionId": "e-1", "toolId": "send", "inputs": []}}});
    let url = format!("{}/asop/v1", u.plain);
    let asked = tokio::spawn(async move { reqwest::Client::new().post(url).json(&step).send().await.unwrap().json::<Value>().await.unwrap() });

    let kinds = |items: &[ConsentItem]| {
        let mut k: Vec<&'static str> = items
            .iter()
            .map(|i| match i {
                ConsentItem::UnknownSender { .. } => "knock",
                ConsentItem::Held { .. } => "held",
                ConsentItem::HeldAsk { .. } => "held ask",
                ConsentItem::KeyChange { .. } => "key change",
                ConsentItem::GuardianStep { .. } => "guardian step",
                ConsentItem::ToolChange { .. } => "tool change",
            })
            .collect();
        k.sort();
        k
    };
    let mut items = Vec::new();
    for _ in 0..200 {
        items = consent::pending(&crate::common::ctx(&u.store)).unwrap();
        if items.len() == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(kinds(&items), ["guardian step", "held", "held ask", "key change", "knock"]);
    assert_eq!(consent::waiting_count(&crate::common::ctx(&u.store)).unwrap(), items.len());
    // The step answered: gone from both.
    let ConsentItem::GuardianStep { step, .. } = &items[0] else { panic!("the agent's step comes first: {items:?}") };
    let guardian = u.inbox.inbox().door::<gatehouse_app::doors::guardian::Guardian>().unwrap();
    let answer =
        gatehouse_app::doors::guardian::UserAnswer { decision: gatehouse_asop::rules::Action::Allow, always: false, redact: None, note: None, lasting: None };
    guardian.answer(step.row, answer).unwrap();
    assert_eq!(asked.await.unwrap()["result"]["decision"], "allow");
    let items = consent::pending(&crate::common::ctx(&u.store)).unwrap();
    assert_eq!((items.len(), consent::waiting_count(&crate::common::ctx(&u.store)).unwrap()), (4, 4));
}

/// A trusted UAMP agent's capability token names the scopes it asks for: each must be
/// allowed by the user's entry (the gate's scope rule), and a token that does not verify
/// refuses, after the transport's proof of who is sending.
#[tokio::test]
async fn a_capability_tokens_scopes_meet_the_same_scope_rule() {
    let u = Uamp::start(ExecutorSpec::Noop).await;
    let p = u.trusted(240, &["ask", "inform"], RateLimit::default());
    let token =
        |scope: &str, exp: i64| gatehouse_uamp::captoken::issue(&p.key, &format!("{}#key", p.did), &json!({"aud": u.inbox.did(), "scope": scope, "exp": exp}));
    let later = chrono::Utc::now().timestamp() + 3600;
    let envelope = |tok: String| u.envelope(&p, Intent::Ask, "with a token", json!({"cap_token": tok}));
    let (status, _, _) = u.post(&p, &envelope(token("ask inform", later))).await;
    assert!((200..300).contains(&status), "every scope allowed: {status}");
    let (status, body, _) = u.post(&p, &envelope(token("ask admin", later))).await;
    assert_eq!((status, body["reason"].as_str()), (403, Some("policy_denied")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("\"admin\""), "{body}");
    let (_, body, _) = u.post(&p, &envelope(token("ask", chrono::Utc::now().timestamp() - 60))).await;
    assert_eq!(body["reason"], "cap_token_expired", "{body}");
    // Without its bearer token, the transport's proof is asked for first.
    let bare = Peer { key: p.key.clone(), did: p.did.clone(), token: None };
    let (_, body, _) =
        u.post(&bare, &u.envelope(&bare, Intent::Ask, "no token", json!({"cap_token": token("ask", chrono::Utc::now().timestamp() - 60)}))).await;
    assert_eq!(body["reason"], "no_credentials", "{body}");
}
