//! This desktop as an approver of a team's gate: the member takes an invitation the
//! gate's owner made ("Join a team gate"), this computer makes a P-256 key of its own (kept
//! in the OS keychain beside the identity, never shown), registers it with the invitation's
//! code, and from then on reads what waits at the team's gate and decides on it, every
//! request signed with that key (the protocol is `approvers`'). The member's own gate
//! keeps working beside it: a membership touches nothing of it but a setting.
//!
//! What the team's gate answers is shown, never acted on here: the gate judges every
//! decision against what waits there and who signed it.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use gatehouse_store::Store;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::approvers::{join_message, request_message, ApproverDecision, ApproverItem};
use crate::consent::{ConsentTarget, Decision, DecisionOutcome, Lasting};
use crate::{Code, CommandError, Context, Result};

/// The team gates this desktop approves for (the user's own entries).
const SETTING: &str = "team_memberships";
/// What a gate's answer may hold: a list of waiting items, each a few KB.
const MAX_ANSWER: usize = 4 * 1024 * 1024;
/// A live stream's event is one short line; anything longer is not the gate's.
const MAX_EVENT: usize = 16 * 1024;
const TIMEOUT: Duration = Duration::from_secs(15);

/// One team's gate this desktop approves for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Membership {
    /// The id the gate gave this device.
    pub id: String,
    /// The gate's address, as the invitation named it.
    pub gate_url: String,
    /// The gate's key: what this device signs over, checked against the gate at joining.
    pub gate_key: String,
    /// This device's name at the gate.
    pub name: String,
    pub joined_at: String,
    /// The gate said this device was removed: nothing more is asked of it.
    #[serde(default)]
    pub removed: bool,
    /// Where the device's key is kept in the keychain.
    key_name: String,
}

/// What waits at one team's gate, or why it could not be read.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TeamWaiting {
    pub membership: Membership,
    pub items: Vec<ApproverItem>,
    /// The gate could not be asked (it is unreachable, or refused this device).
    pub error: Option<CommandError>,
    /// The gate's activity log does not extend the checkpoint this desktop holds as its
    /// witness: rewound behind the gate's back (in words).
    pub log_problem: Option<String>,
}

pub fn list(ctx: &Context) -> Result<Vec<Membership>> {
    list_in(&ctx.store)
}

/// [`list`] on the store itself, for this crate's own callers.
pub(crate) fn list_in(store: &Store) -> Result<Vec<Membership>> {
    Ok(store.setting::<Vec<Membership>>(SETTING)?.unwrap_or_default())
}

fn save(store: &Store, all: &[Membership]) -> Result<()> {
    Ok(store.set_setting(SETTING, &all)?)
}

fn find(store: &Store, id: &str) -> Result<Membership> {
    list_in(store)?.into_iter().find(|m| m.id == id).ok_or_else(|| CommandError::new(Code::NotFound, format!("this desktop approves for no team gate as {id}")))
}

/// The gate's address and the code an invitation's link holds
/// (`https://gate/approve#code=…&gate=<key>`, as `approvers::invite` makes it).
pub fn read_invitation(link: &str) -> Result<(String, String, String)> {
    let bad =
        |why: &str| CommandError::new(Code::BadUrl, format!("{why}: paste the whole invitation link the gate's owner gave you (it starts with https://)"));
    let url = url::Url::parse(link.trim()).map_err(|_| bad("this is not a link"))?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() || url.path() != "/approve" {
        return Err(bad("this is not a Gatehouse invitation"));
    }
    let fragment = url.fragment().unwrap_or("");
    let part = |name: &str| url::form_urlencoded::parse(fragment.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.trim().to_string());
    let (Some(code), Some(gate_key)) = (part("code"), part("gate")) else { return Err(bad("the link has no code or no gate key")) };
    if code.is_empty() || gate_key.len() != 64 || !gate_key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad("the link's code or gate key is not one an invitation has"));
    }
    let mut base = url.clone();
    base.set_fragment(None);
    base.set_query(None);
    base.set_path("");
    Ok((base.as_str().trim_end_matches('/').to_string(), code, gate_key.to_ascii_lowercase()))
}

fn client() -> Result<reqwest::Client> {
    // A gate's answer never sends the device elsewhere: signed requests name their path.
    reqwest::Client::builder()
        .connect_timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| CommandError::new(Code::Internal, e.to_string()))
}

fn unreachable(url: &str, e: reqwest::Error) -> CommandError {
    CommandError::new(Code::Unreachable, format!("the team's gate did not answer at {url}: {e}"))
}

/// The gate's answer: its body, or the failure it names (`{code, message}`).
async fn answer(url: &str, resp: reqwest::Response) -> Result<Vec<u8>> {
    let status = resp.status();
    let body = gatehouse_http::read_limited(url, resp, MAX_ANSWER).await.map_err(|e| CommandError::new(Code::Protocol, e.to_string()))?;
    if status.is_success() {
        return Ok(body);
    }
    #[derive(Deserialize)]
    struct Failure {
        code: Code,
        message: String,
    }
    Err(match serde_json::from_slice::<Failure>(&body) {
        Ok(f) => CommandError::new(f.code, format!("the team's gate says: {}", f.message)),
        Err(_) => CommandError::new(Code::Protocol, format!("the team's gate answered {status} at {url}")),
    })
}

fn parse<T: serde::de::DeserializeOwned>(url: &str, body: &[u8]) -> Result<T> {
    serde_json::from_slice(body)
        .map_err(|e| CommandError::new(Code::Protocol, format!("the team's gate answered {url} in a shape this version does not read: {e}")))
}

/// Joins the gate an invitation's `link` names as a device called `name`.
pub async fn join(ctx: &Context, link: &str, name: &str) -> Result<Membership> {
    let (gate_url, code, gate_key) = read_invitation(link)?;
    if list(ctx)?.iter().any(|m| m.gate_key == gate_key && !m.removed) {
        return Err(CommandError::new(Code::AlreadyTrusted, "this desktop approves for that team's gate already"));
    }
    let http = client()?;
    // The gate at that address is the one the invitation names, or nothing is sent to it.
    let url = format!("{gate_url}/approve/gate");
    let resp = http.get(&url).timeout(TIMEOUT).send().await.map_err(|e| unreachable(&url, e))?;
    #[derive(Deserialize)]
    struct GateKey {
        gate_key: String,
    }
    let said: GateKey = parse(&url, &answer(&url, resp).await?)?;
    if !said.gate_key.eq_ignore_ascii_case(&gate_key) {
        return Err(CommandError::new(
            Code::PinMismatch,
            format!("the gate at {gate_url} has another key than the invitation names: it is not the gate you were invited to"),
        ));
    }
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).map_err(|_| CommandError::new(Code::Internal, "no key could be made"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).map_err(|_| CommandError::new(Code::Internal, "no key"))?;
    let public_key = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    // Kept before it is registered: a device the gate knows always has its key here.
    let key_name = format!("team-approver-{}", hex::encode(&sha2::Sha256::digest(public_key.as_bytes())[..12]));
    let secrets = std::sync::Arc::new(gatehouse_keys::Secrets::open(&ctx.data_dir)?);
    let (kept, name_of, encoded) = (secrets.clone(), key_name.clone(), URL_SAFE_NO_PAD.encode(pkcs8.as_ref()));
    crate::blocking(move || Ok(kept.put(&name_of, &encoded)?)).await?;
    let signature =
        URL_SAFE_NO_PAD.encode(pair.sign(&rng, &join_message(&gate_key, &code, &public_key)).map_err(|_| CommandError::new(Code::Internal, "signing failed"))?);
    let url = format!("{gate_url}/approve/join");
    let body = serde_json::json!({"code": code, "name": name.trim(), "public_key": public_key, "signature": signature});
    let joined = async {
        let resp = http.post(&url).json(&body).timeout(TIMEOUT).send().await.map_err(|e| unreachable(&url, e))?;
        parse::<crate::approvers::Approver>(&url, &answer(&url, resp).await?)
    }
    .await;
    let approver = match joined {
        Ok(a) => a,
        Err(e) => {
            let (kept, name_of) = (secrets.clone(), key_name.clone());
            let _ = crate::blocking(move || Ok(kept.delete(&name_of)?)).await;
            return Err(e);
        }
    };
    let m = Membership { id: approver.id, gate_url, gate_key, name: approver.name, joined_at: crate::now(), removed: false, key_name };
    let store = ctx.store.clone();
    let kept = m.clone();
    crate::blocking(move || {
        let mut all = list_in(&store)?;
        all.retain(|o| o.gate_key != kept.gate_key);
        all.push(kept.clone());
        save(&store, &all)?;
        store.audit(
            "team.join",
            Some(&kept.gate_url),
            &serde_json::json!({"approver": kept.id, "gate_key": kept.gate_key, "name": kept.name}),
            &crate::now(),
        )?;
        Ok(())
    })
    .await?;
    Ok(m)
}

/// Forgets a team's gate here and deletes this device's key (the gate's owner removes the
/// device there).
pub fn leave(ctx: &Context, id: &str) -> Result<()> {
    let m = find(&ctx.store, id)?;
    let mut all = list(ctx)?;
    all.retain(|o| o.id != id);
    save(&ctx.store, &all)?;
    gatehouse_keys::Secrets::open(&ctx.data_dir)?.delete(&m.key_name)?;
    ctx.store.audit("team.leave", Some(&m.gate_url), &serde_json::json!({"approver": m.id}), &crate::now())?;
    Ok(())
}

/// Marks a membership removed by its gate (kept, so the member sees what happened).
fn mark_removed(store: &Store, id: &str) -> Result<()> {
    let mut all = list_in(store)?;
    for m in all.iter_mut().filter(|m| m.id == id) {
        m.removed = true;
    }
    save(store, &all)
}

/// Keeps that the gate refused this device as one it does not know (it was removed), if
/// `e` says so; whether it did.
async fn kept_if_removed(store: &std::sync::Arc<Store>, id: &str, e: &CommandError) -> Result<bool> {
    if e.code != Code::Unauthorized || !e.message.contains("no such approver") {
        return Ok(false);
    }
    let (store, id) = (store.clone(), id.to_string());
    crate::blocking(move || mark_removed(&store, &id)).await?;
    Ok(true)
}

/// A device's key, loaded from the keychain.
struct Device {
    m: Membership,
    pair: EcdsaKeyPair,
}

impl Device {
    /// Read off the async workers: the keychain is a D-Bus call away.
    async fn load(ctx: &Context, id: &str) -> Result<Device> {
        let (store, dir, id) = (ctx.store.clone(), ctx.data_dir.clone(), id.to_string());
        crate::blocking(move || Device::load_now(&store, &dir, &id)).await
    }

    fn load_now(store: &Store, data_dir: &std::path::Path, id: &str) -> Result<Device> {
        let m = find(store, id)?;
        if m.removed {
            return Err(CommandError::new(Code::Unauthorized, format!("this desktop was removed from the team's gate at {}", m.gate_url)));
        }
        let kept = gatehouse_keys::Secrets::open(data_dir)?
            .get(&m.key_name)?
            .ok_or_else(|| CommandError::new(Code::Keychain, format!("this desktop's key for {} is not in the keychain: leave and join again", m.gate_url)))?;
        let pkcs8 = URL_SAFE_NO_PAD.decode(kept).map_err(|_| CommandError::new(Code::Keychain, "the kept approver key is damaged"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &SystemRandom::new())
            .map_err(|_| CommandError::new(Code::Keychain, "the kept approver key is damaged"))?;
        Ok(Device { m, pair })
    }

    /// A request signed as `approvers::authenticate` checks it.
    fn request(&self, http: &reqwest::Client, method: reqwest::Method, path: &str, body: Vec<u8>) -> Result<reqwest::RequestBuilder> {
        let rng = SystemRandom::new();
        let date = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut raw = [0u8; 16];
        rng.fill(&mut raw).map_err(|_| CommandError::new(Code::Internal, "no randomness from the system"))?;
        let nonce = hex::encode(raw);
        let message = request_message(&self.m.gate_key, method.as_str(), path, &date, &nonce, &body);
        let signature = URL_SAFE_NO_PAD.encode(self.pair.sign(&rng, &message).map_err(|_| CommandError::new(Code::Internal, "signing failed"))?);
        Ok(http
            .request(method, format!("{}{path}", self.m.gate_url))
            .header("content-type", "application/json")
            .header("gatehouse-approver", &self.m.id)
            .header("gatehouse-date", date)
            .header("gatehouse-nonce", nonce)
            .header("gatehouse-signature", signature)
            .body(body))
    }

    async fn call(&self, store: &std::sync::Arc<Store>, method: reqwest::Method, path: &str, body: Vec<u8>) -> Result<Vec<u8>> {
        let url = format!("{}{path}", self.m.gate_url);
        let resp = self.request(&client()?, method, path, body)?.timeout(TIMEOUT).send().await.map_err(|e| unreachable(&url, e))?;
        let out = answer(&url, resp).await;
        if let Err(e) = &out {
            kept_if_removed(store, &self.m.id, e).await?;
        }
        out
    }
}

/// What waits at the team's gate `id`, as this device is shown it.
pub async fn waiting_at(ctx: &Context, id: &str) -> Result<Vec<ApproverItem>> {
    let d = Device::load(ctx, id).await?;
    let body = d.call(&ctx.store, reqwest::Method::GET, "/approve/waiting", Vec::new()).await?;
    parse(&format!("{}/approve/waiting", d.m.gate_url), &body)
}

/// What waits at every team's gate this desktop approves for (each gate's log checked
/// against the checkpoint this desktop holds of it, see [`witness_at`]).
pub async fn waiting(ctx: &Context) -> Result<Vec<TeamWaiting>> {
    let mut out = Vec::new();
    for m in list(ctx)? {
        out.push(waiting_there(ctx, m, None).await);
    }
    Ok(out)
}

/// What waits at the team's gate `m` (or `error`, when the caller already knows it could
/// not be asked), with its log checked against what this desktop holds.
pub async fn waiting_there(ctx: &Context, m: Membership, error: Option<CommandError>) -> TeamWaiting {
    let (items, error, log_problem) = match (m.removed, error) {
        (true, _) => (Vec::new(), None, None),
        (false, Some(e)) => (Vec::new(), Some(e), None),
        (false, None) => match waiting_at(ctx, &m.id).await {
            Ok(items) => (items, None, witness_at(ctx, &m.id).await.ok().flatten()),
            Err(e) => (Vec::new(), Some(e), None),
        },
    };
    // Read again: a refusal may have just marked it removed.
    let membership = find(&ctx.store, &m.id).unwrap_or(m);
    TeamWaiting { membership, items, error, log_problem }
}

/// What this desktop keeps of a team's gate's log, in its own data dir (out of the gate's
/// database, and of its own): the newest checkpoint it holds, and what did not fit.
#[derive(Default, Serialize, Deserialize)]
struct Held {
    held: Option<gatehouse_store::AuditCheckpoint>,
    problem: Option<String>,
}

fn witness_file(data_dir: &std::path::Path, id: &str) -> std::path::PathBuf {
    let safe: String = id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(64).collect();
    data_dir.join(format!("team-witness-{safe}.json"))
}

/// This desktop as a witness of the team's gate's activity log: it hands in the newest
/// checkpoint it holds and keeps the newer one the gate gives back only when the log
/// extends it. What does not fit, in words; kept, and said again while the gate cannot
/// check (it allows a few checks a minute per device).
pub async fn witness_at(ctx: &Context, id: &str) -> Result<Option<String>> {
    let d = Device::load(ctx, id).await?;
    let path = witness_file(&ctx.data_dir, id);
    let kept: Held = std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let body = serde_json::to_vec(&serde_json::json!({ "held": kept.held }))?;
    let url = format!("{}/approve/witness", d.m.gate_url);
    let answer: crate::device_witness::Witnessed = match d.call(&ctx.store, reqwest::Method::POST, "/approve/witness", body).await {
        Ok(body) => parse(&url, &body)?,
        Err(_) => return Ok(kept.problem),
    };
    let next = if answer.intact {
        // Only a newer checkpoint the gate's key signed replaces the one held.
        let newer = answer.newest.filter(|n| kept.held.as_ref().is_none_or(|h| n.through_id >= h.through_id) && crate::audit::signed_by_gate(&d.m.gate_key, n));
        Held { held: newer.or(kept.held), problem: None }
    } else {
        Held { held: kept.held, problem: Some(answer.problem.unwrap_or_else(|| "the gate's log does not extend what this desktop saw signed".into())) }
    };
    gatehouse_keys::replace_private(&path, &serde_json::to_string(&next)?)?;
    Ok(next.problem)
}

/// Decides the item `target` at the team's gate `id`, as it was shown (`digest`): the gate
/// refuses it if the item changed since.
pub async fn decide(ctx: &Context, id: &str, target: ConsentTarget, digest: String, decision: Decision, lasting: Lasting) -> Result<DecisionOutcome> {
    let d = Device::load(ctx, id).await?;
    let body = serde_json::to_vec(&ApproverDecision { target, digest, decision, lasting })?;
    let out: DecisionOutcome = parse(&format!("{}/approve/decide", d.m.gate_url), &d.call(&ctx.store, reqwest::Method::POST, "/approve/decide", body).await?)?;
    ctx.store.audit(
        "team.decide",
        Some(&d.m.gate_url),
        &serde_json::json!({"approver": d.m.id, "decision": decision, "outcome": out.message}),
        &crate::now(),
    )?;
    Ok(out)
}

/// What the gate's live stream said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// What waits changed (or the stream just opened): read it again.
    Changed,
    /// This device was removed: the stream ended for good.
    Removed,
}

/// Follows the gate's live stream for membership `id` until it ends: `on` hears each
/// event. Returns once the stream ends (the gate restarted, the network dropped): the
/// caller opens it again after a pause. A removal is kept before it is heard.
pub async fn follow(ctx: &Context, id: &str, mut on: impl FnMut(Heard)) -> Result<()> {
    let d = Device::load(ctx, id).await?;
    let url = format!("{}/approve/events", d.m.gate_url);
    let resp = d.request(&client()?, reqwest::Method::GET, "/approve/events", Vec::new())?.send().await.map_err(|e| unreachable(&url, e))?;
    if !resp.status().is_success() {
        let e = answer(&url, resp).await.err().unwrap_or_else(|| CommandError::new(Code::Protocol, "no stream"));
        if kept_if_removed(&ctx.store, id, &e).await? {
            on(Heard::Removed);
        }
        return Err(e);
    }
    let mut events = std::pin::pin!(gatehouse_sse::events(resp.bytes_stream(), MAX_EVENT));
    while let Some(event) = futures_util::StreamExt::next(&mut events).await {
        let event = event.map_err(|e| match e {
            gatehouse_sse::SseError::Transport(why) => CommandError::new(Code::Unreachable, format!("the team's gate's stream at {url} broke: {why}")),
            other => CommandError::new(Code::Protocol, format!("the team's gate's stream at {url}: {other}")),
        })?;
        match event.event.as_str() {
            "removed" => {
                let (store, id) = (ctx.store.clone(), id.to_string());
                crate::blocking(move || mark_removed(&store, &id)).await?;
                on(Heard::Removed);
                return Ok(());
            }
            "waiting" => on(Heard::Changed),
            _ => {}
        }
    }
    Ok(())
}
