//! An IntentSite that Gatehouse's tests (and demos) run on loopback: the spec's Bella Cucina
//! manifest at `/intentmanifest.yaml` and a table-booking intent endpoint at `/intent`.
//!
//! Booking follows the spec's incremental resolution: party size → guest name → date →
//! time → `execution_result` with a booking id. A bare hour ("at 7") gets a
//! `clarification_request`; a party above 20 gets an `error`; asking about the menu gets a
//! markdown answer carrying script and onerror payloads. Every answer is signed (the
//! scheme of `gatehouse_intentweb::attribution`), and the client's own signature, query
//! hash and nonce are checked. [`Switches`] make it misbehave on purpose: a tampered
//! signature, a replayed nonce, a wrong interaction_id, an invalid manifest.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ed25519_dalek::SigningKey;
use gatehouse_intentweb::attribution;
use gatehouse_intentweb::envelope::{Envelope, Explicability, FlowType};
use serde_json::Value;

const MANIFEST: &str = include_str!("../data/intentmanifest.bellacucina.full.yaml");

/// Ways to misbehave, switchable while the site runs.
#[derive(Debug, Clone, Default)]
pub struct Switches {
    /// Sign the answer, then change its message.
    pub tamper: bool,
    /// Reuse the previous answer's nonce.
    pub replay: bool,
    /// Echo another interaction_id.
    pub wrong_interaction: bool,
    /// Serve a manifest whose first capability has no description.
    pub bad_manifest: bool,
    /// Sign the answer, then change its booking reference (`external_id`).
    pub forge_external_id: bool,
    /// Sign answers under Gatehouse's first scheme (the message and ids only).
    pub first_scheme: bool,
    /// Write what a terminal obeys (ESC sequences, BEL, a bare CR, a bidi override) into
    /// the company's name, the answers and the items the site asks for.
    pub hostile_text: bool,
}

/// Text that moves the cursor up, clears the line, rings, returns to the line's start
/// and reverses what follows, as a hostile site would write it.
pub const HOSTILE: &str = "\u{1b}[1A\u{1b}[2K\u{7}\rAll good\u{202e}kcab yenom";

#[derive(Debug, Default, Clone)]
struct Booking {
    initial: String,
    party: Option<u32>,
    name: Option<String>,
    date: Option<String>,
    time: Option<String>,
    asked: Option<&'static str>,
    done: bool,
}

#[derive(Default)]
struct Inner {
    bookings: HashMap<String, Booking>,
    client_nonces: HashSet<String>,
    last_nonce: Option<String>,
    next_id: u32,
}

#[derive(Clone)]
pub struct Site {
    key: SigningKey,
    pub switches: Arc<Mutex<Switches>>,
    inner: Arc<Mutex<Inner>>,
    origin: Arc<Mutex<String>>,
}

impl Default for Site {
    fn default() -> Self {
        Self::new()
    }
}

impl Site {
    pub fn new() -> Site {
        Site { key: SigningKey::from_bytes(&[42; 32]), switches: Arc::default(), inner: Arc::default(), origin: Arc::default() }
    }

    /// The key the site signs with, as a did:key.
    pub fn did(&self) -> String {
        gatehouse_uamp::did::PublicKey::Ed25519(self.key.verifying_key()).did_key()
    }

    pub fn set(&self, f: impl FnOnce(&mut Switches)) {
        f(&mut self.switches.lock().unwrap_or_else(|p| p.into_inner()));
    }

    fn switches(&self) -> Switches {
        self.switches.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

pub fn router(site: Site) -> Router {
    Router::new().route("/intentmanifest.yaml", get(manifest)).route("/intent", post(intent)).with_state(site)
}

/// Starts the site on a free loopback port in the current runtime; returns its origin.
pub async fn spawn(site: Site) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let origin = format!("http://{}", listener.local_addr().expect("bound"));
    *site.origin.lock().unwrap_or_else(|p| p.into_inner()) = origin.clone();
    tokio::spawn(async move { axum::serve(listener, router(site)).await });
    origin
}

async fn manifest(State(site): State<Site>) -> Response {
    let origin = site.origin.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut text = MANIFEST.replace("https://bellacucina.com/intent", &format!("{origin}/intent"));
    if site.switches().hostile_text {
        text = text.replacen("company: \"Bella Cucina Restaurant\"", "company: \"Bella Cucina\\e[2K\\rYour Bank\\u202E\\a\"", 1);
    }
    if site.switches().bad_manifest {
        text = text.replacen("    description: \"Reserve a table at our restaurant for lunch or dinner\"\n", "", 1);
    }
    ([(header::CONTENT_TYPE, "application/yaml; charset=utf-8")], text).into_response()
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

const MONTHS: [&str; 12] = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| c.is_whitespace() || c == ',' || c == '.').filter(|w| !w.is_empty()).map(str::to_string).collect()
}

fn party_of(text: &str, asked: bool) -> Option<u32> {
    let w = words(&text.to_lowercase());
    for (i, x) in w.iter().enumerate() {
        if let Ok(n) = x.parse::<u32>() {
            let next = w.get(i + 1).map(String::as_str).unwrap_or("");
            let prev = if i > 0 { w[i - 1].as_str() } else { "" };
            if matches!(next, "people" | "persons" | "guests" | "of" | "adults") || prev == "for" || prev == "of" || (asked && w.len() <= 3) {
                return Some(n);
            }
        }
    }
    None
}

fn name_of(text: &str, asked: bool) -> Option<String> {
    let w = words(text);
    if let Some(i) = w.iter().position(|x| x.eq_ignore_ascii_case("under")) {
        let name: Vec<&str> = w[i + 1..]
            .iter()
            .skip_while(|x| x.eq_ignore_ascii_case("the") || x.eq_ignore_ascii_case("name"))
            .take_while(|x| x.chars().next().is_some_and(char::is_uppercase))
            .map(String::as_str)
            .take(3)
            .collect();
        if !name.is_empty() {
            return Some(name.join(" "));
        }
    }
    (asked && !text.trim().is_empty() && text.split_whitespace().count() <= 4).then(|| text.trim().trim_end_matches('.').to_string())
}

fn date_of(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    if lower.contains("tomorrow") {
        return Some((chrono::Utc::now() + chrono::Duration::days(1)).format("%Y-%m-%d").to_string());
    }
    let w = words(&lower);
    for (i, x) in w.iter().enumerate() {
        if chrono::NaiveDate::parse_from_str(x, "%Y-%m-%d").is_ok() {
            return Some(x.clone());
        }
        if let Some(m) = MONTHS.iter().position(|m| m == x) {
            if let Some(d) = w.get(i + 1).and_then(|d| d.trim_end_matches(|c: char| c.is_alphabetic()).parse::<u32>().ok()) {
                return Some(format!("2026-{:02}-{d:02}", m + 1));
            }
        }
    }
    None
}

/// `Ok(Some(HH:MM))`, `Ok(None)` when absent, `Err(hour)` when the hour is ambiguous.
fn time_of(text: &str, asked: bool) -> Result<Option<String>, u32> {
    let lower = text.to_lowercase().replace(" pm", "pm").replace(" am", "am");
    let w = words(&lower);
    for (i, x) in w.iter().enumerate() {
        if let Some(h) = x.strip_suffix("pm").and_then(|h| h.split(':').next()).and_then(|h| h.parse::<u32>().ok()) {
            return Ok(Some(format!("{:02}:00", (h % 12) + 12)));
        }
        if let Some(h) = x.strip_suffix("am").and_then(|h| h.split(':').next()).and_then(|h| h.parse::<u32>().ok()) {
            return Ok(Some(format!("{:02}:00", h % 12)));
        }
        if let Some((h, m)) = x.split_once(':') {
            if let (Ok(h), Ok(m)) = (h.parse::<u32>(), m.parse::<u32>()) {
                return Ok(Some(format!("{h:02}:{m:02}")));
            }
        }
        let after_at = i > 0 && w[i - 1] == "at";
        if let Ok(h) = x.parse::<u32>() {
            if (after_at || (asked && w.len() <= 2)) && (1..=12).contains(&h) {
                return Err(h);
            }
        }
    }
    Ok(None)
}

const NEEDS: [(&str, &str); 4] = [
    ("party", "Number of people in your party (we accommodate 1-20)"),
    ("name", "Guest name for the reservation"),
    ("date", "Preferred date"),
    ("time", "Preferred time"),
];

struct Answer {
    flow: FlowType,
    message: String,
    required: Vec<String>,
    status: Option<String>,
    external_id: Option<String>,
    interpretation: String,
}

fn answer(b: &mut Booking, text: &str, next_id: &mut u32) -> Answer {
    let lower = text.to_lowercase();
    if lower.contains("menu") {
        return Answer {
            flow: FlowType::InformationRequest,
            message: "## Tonight's specials\n\n| Dish | Price |\n|---|---|\n| Tagliatelle al ragù | $24 |\n| Margherita <script>alert('x')</script> | $18 |\n\n<img src=x onerror=alert(1)> ![chef](https://images.example.com/chef.png)\n\n[Full menu](https://bellacucina.example/menu) · [bad](javascript:alert(1))\n\nHow many people will be joining?".into(),
            required: vec![NEEDS[0].1.into()],
            status: None,
            external_id: None,
            interpretation: "The guest asked about the menu before booking".into(),
        };
    }
    let asked = b.asked;
    // A checklist answer: one "what was asked: the answer" line per item.
    for line in text.lines() {
        if let Some((label, value)) = line.split_once(':') {
            let (label, value) = (label.to_lowercase(), value.trim());
            if label.contains("people") || label.contains("party") {
                b.party = b.party.or_else(|| party_of(value, true));
            } else if label.contains("name") && !value.is_empty() {
                b.name = b.name.clone().or_else(|| Some(value.to_string()));
            } else if label.contains("date") {
                b.date = b.date.clone().or_else(|| date_of(value)).or_else(|| (!value.is_empty()).then(|| value.to_string()));
            } else if label.contains("time") {
                if let Ok(Some(t)) = time_of(value, true) {
                    b.time = b.time.clone().or(Some(t));
                }
            }
        }
    }
    if b.party.is_none() {
        b.party = party_of(text, asked == Some("party"));
    }
    if let Some(p) = b.party.filter(|p| *p > 20) {
        b.done = true;
        return Answer {
            flow: FlowType::Error,
            message: format!("We cannot book a table for {p}: parties larger than 20 are handled by our events team (events@bellacucina.com)."),
            required: vec![],
            status: Some("invalid_request".into()),
            external_id: None,
            interpretation: format!("A party of {p} is above the limit of 20"),
        };
    }
    if b.name.is_none() {
        b.name = name_of(text, asked == Some("name"));
    }
    if b.date.is_none() {
        b.date = date_of(text);
    }
    if b.time.is_none() {
        match time_of(text, asked == Some("time")) {
            Ok(t) => b.time = t,
            Err(h) => {
                b.asked = Some("time");
                return Answer {
                    flow: FlowType::ClarificationRequest,
                    message: format!("Did you mean **{h}:00 pm** (dinner) or **{h}:00 am**? We serve lunch 12:00–15:00 and dinner 18:00–23:00."),
                    required: vec![NEEDS[3].1.into()],
                    status: None,
                    external_id: None,
                    interpretation: format!("\"{h}\" could be morning or evening"),
                };
            }
        }
    }
    let missing: Vec<(&'static str, &str)> = NEEDS
        .iter()
        .copied()
        .filter(|(k, _)| match *k {
            "party" => b.party.is_none(),
            "name" => b.name.is_none(),
            "date" => b.date.is_none(),
            _ => b.time.is_none(),
        })
        .collect();
    if let Some((k, _)) = missing.first() {
        b.asked = Some(k);
        let message = match *k {
            "party" => "How many people will be joining?".to_string(),
            "name" => format!("A table for {}. Under which name should I book it?", b.party.unwrap_or_default()),
            "date" => "Which date would you like?".to_string(),
            _ => format!("I have these times available on {}:\n\n| Time | Availability |\n|-------|--------------|\n| 18:00 | Available |\n| 18:30 | Available |\n| 19:00 | Available |\n| 19:30 | Limited |\n\nWhich time works for you?", b.date.clone().unwrap_or_default()),
        };
        return Answer {
            flow: FlowType::InformationRequest,
            message,
            required: missing.iter().map(|(_, r)| r.to_string()).collect(),
            status: None,
            external_id: None,
            interpretation: format!("Still needed: {}", missing.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")),
        };
    }
    *next_id += 1;
    b.done = true;
    let id = format!("RES-{}", 12344 + *next_id);
    Answer {
        flow: FlowType::ExecutionResult,
        message: format!(
            "**Booking confirmed** — {id}\n\n- Party: {}\n- Name: {}\n- Date: {}\n- Time: {}\n\nSee you soon at Bella Cucina!",
            b.party.unwrap_or_default(),
            b.name.clone().unwrap_or_default(),
            b.date.clone().unwrap_or_default(),
            b.time.clone().unwrap_or_default()
        ),
        required: vec![],
        status: Some("confirmed".into()),
        external_id: Some(id),
        interpretation: "Everything needed was collected".into(),
    }
}

fn refuse(site: &Site, req: Option<&Envelope>, status: StatusCode, code: &str, message: String) -> Response {
    let (id, initial) = req.map(|r| (r.interaction_id.clone(), r.message.clone())).unwrap_or_default();
    let mut env = attribution::draft(FlowType::Error, &id, &initial, &message, Some("en"), &site.key, "intent_site", &now());
    if let Some(r) = req {
        env.attribution.query_hash = r.attribution.query_hash.clone();
    }
    // Signed last: the signature covers the status too.
    env.status = Some(code.into());
    env.attribution.chain.clear();
    attribution::sign(&mut env, &site.key, "intent_site", &now());
    (status, Json(env)).into_response()
}

async fn intent(State(site): State<Site>, body: axum::body::Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string()).and_then(|raw| match Envelope::from_value(&raw) {
        Ok(e) => Ok((raw, e)),
        Err(e) => Err(e.to_string()),
    });
    let (raw, req) = match parsed {
        Ok(p) => p,
        Err(e) => return refuse(&site, None, StatusCode::BAD_REQUEST, "invalid_request", format!("invalid envelope: {e}")),
    };
    // The client's attribution: every signed entry must verify, over the whole envelope;
    // the nonce is fresh.
    for (i, _) in req.attribution.chain.iter().enumerate().filter(|(_, e)| e.kid.is_some()) {
        match attribution::verify_entry(&raw, &req, i) {
            Ok((_, attribution::Covers::Whole)) => {}
            Ok((_, attribution::Covers::MessageOnly)) => {
                return refuse(
                    &site,
                    Some(&req),
                    StatusCode::UNAUTHORIZED,
                    "invalid_attribution",
                    "signed under the first scheme, which covers the message only".into(),
                )
            }
            Err(reason) => return refuse(&site, Some(&req), StatusCode::UNAUTHORIZED, "invalid_attribution", reason),
        }
    }
    let sw = site.switches();
    let (ans, initial) = {
        let mut inner = site.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !inner.client_nonces.insert(req.attribution.nonce.clone()) {
            drop(inner);
            return refuse(&site, Some(&req), StatusCode::CONFLICT, "replayed_nonce", "this nonce was used before".into());
        }
        let known = inner.bookings.get(&req.interaction_id).cloned();
        let mut b = match (req.flow_type, known) {
            (FlowType::IntentRequest, None) => Booking { initial: req.message.clone(), ..Default::default() },
            (FlowType::IntentRequest, Some(_)) => {
                drop(inner);
                return refuse(&site, Some(&req), StatusCode::CONFLICT, "invalid_request", "this interaction has already started".into());
            }
            (_, None) => {
                drop(inner);
                return refuse(&site, Some(&req), StatusCode::BAD_REQUEST, "invalid_request", "an interaction starts with intent_request".into());
            }
            (_, Some(b)) if b.done => {
                drop(inner);
                return refuse(&site, Some(&req), StatusCode::CONFLICT, "invalid_request", "this interaction has ended".into());
            }
            (_, Some(b)) => b,
        };
        if req.attribution.query_hash != attribution::query_hash(&req.interaction_id, &b.initial) {
            drop(inner);
            return refuse(&site, Some(&req), StatusCode::UNAUTHORIZED, "invalid_attribution", "query_hash does not match the initial intent".into());
        }
        let mut next_id = inner.next_id;
        let a = answer(&mut b, &req.message, &mut next_id);
        inner.next_id = next_id;
        let initial = b.initial.clone();
        inner.bookings.insert(req.interaction_id.clone(), b);
        (a, initial)
    };
    let interaction = if sw.wrong_interaction { format!("{}-other", req.interaction_id) } else { req.interaction_id.clone() };
    let mut env = attribution::draft(ans.flow, &interaction, &initial, &ans.message, Some("en"), &site.key, "intent_site", &now());
    env.attribution.query_hash = req.attribution.query_hash.clone();
    if sw.replay {
        if let Some(n) = site.inner.lock().unwrap_or_else(|p| p.into_inner()).last_nonce.clone() {
            env.attribution.nonce = n;
        }
    }
    // The chain carries the client's entries, then the site's own, signed last.
    env.attribution.chain = req.attribution.chain.clone();
    env.required_information = ans.required;
    env.status = ans.status;
    env.external_id = ans.external_id;
    env.explicability = vec![Explicability {
        actor: Some("intent_site".into()),
        interpretation: Some(ans.interpretation),
        assumptions: vec!["Times are local to Chicago".into()],
        confidence: Some(0.95),
        routing_logic: None,
        sites_considered: vec![],
    }];
    if sw.hostile_text {
        env.message.push_str(&format!("\n{HOSTILE}"));
        env.required_information.iter_mut().for_each(|r| r.push_str(HOSTILE));
    }
    if sw.first_scheme {
        let mut entry = gatehouse_intentweb::envelope::ChainEntry {
            actor_type: "intent_site".into(),
            actor_id: site.did(),
            timestamp: now(),
            signature: String::new(),
            alg: Some(attribution::ALG.into()),
            kid: Some(site.did()),
        };
        let sig = ed25519_dalek::Signer::sign(&site.key, &attribution::first_scheme_bytes(&env, &entry));
        entry.signature = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, sig.to_bytes());
        env.attribution.chain.push(entry);
    } else {
        attribution::sign(&mut env, &site.key, "intent_site", &now());
    }
    if sw.forge_external_id && env.external_id.is_some() {
        env.external_id = Some("RES-FORGED".into());
    }
    if sw.tamper {
        env.message = env.message.replace("Available", "Sold out");
        env.message.push_str("\n\n(altered in transit)");
    }
    site.inner.lock().unwrap_or_else(|p| p.into_inner()).last_nonce = Some(env.attribution.nonce.clone());
    let mut v: Value = serde_json::to_value(&env).expect("envelopes serialise");
    if let Some(o) = v.as_object_mut() {
        o.retain(|_, x| !x.is_null());
    }
    Json(v).into_response()
}
