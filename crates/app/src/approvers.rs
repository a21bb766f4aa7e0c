//! Approvers: devices with keys of their own (a team member's desktop, a phone) that may
//! decide what waits. The owner invites one (a one-time code, valid 15 minutes); the
//! device makes a P-256 key (a non-extractable WebCrypto key on a phone), proves it holds
//! it and registers it with the code; from then on every request it makes is signed by
//! that key, fresh, never replayed, and checked against the store on every request, so a
//! device removed is refused at once on every node.
//!
//! What a device signs (each a line, UTF-8): `gatehouse-approver-request/1`, the gate's
//! key (hex), the method, the path, the time (RFC 3339), a nonce, and the SHA-256 of the
//! body (hex). Joining signs `gatehouse-approver-join/1`, the gate's key, the code and the
//! device's key. Signatures are ECDSA P-256 with SHA-256, r‖s (64 bytes, as WebCrypto
//! makes them), base64url without padding, like the key (SEC1 uncompressed, 65 bytes).

use crate::Context;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Utc};
pub use gatehouse_store::{Approver, ApproverMail};
use gatehouse_store::{InviteRefusal, Store};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
use sha2::{Digest, Sha256};

use crate::{Code, CommandError, Result};

/// How long an invitation can be taken.
pub const INVITE_MINUTES: i64 = 15;
/// How far a signed request's time may be from the gate's.
pub const FRESH_SECONDS: i64 = 300;
/// What an approver's name may hold.
const MAX_NAME: usize = 80;

/// An invitation as the owner passes it on: the address of the gate's approval page with
/// the code, and the code alone to type.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Invitation {
    pub name: String,
    pub code: String,
    /// The approval page with the code in its fragment (never sent to a server).
    pub url: String,
    pub expires_at: String,
    /// The gate's key: the device checks the gate it joins is this one.
    pub gate_key: String,
}

/// A request an approver signed, as it arrived (parsed by the HTTP face).
pub struct SignedRequest<'a> {
    pub approver: &'a str,
    pub date: &'a str,
    pub nonce: &'a str,
    pub signature: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub body: &'a [u8],
}

/// The signed request that cast a vote, kept with it: every count checks it again
/// ([`proves`]), so a vote row written into the database by anyone else counts for nothing.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct VoteProof {
    pub method: String,
    pub path: String,
    pub date: String,
    pub nonce: String,
    /// The request's body (the decision, as JSON).
    pub body: String,
    pub signature: String,
}

impl VoteProof {
    pub fn of(req: &SignedRequest<'_>) -> VoteProof {
        VoteProof {
            method: req.method.into(),
            path: req.path.into(),
            date: req.date.into(),
            nonce: req.nonce.into(),
            body: String::from_utf8_lossy(req.body).into_owned(),
            signature: req.signature.into(),
        }
    }
}

/// Whether `proof` is the device's (`device_key`) signature over a request deciding `vote`
/// on the item `item` as `digest` names it, for this gate.
pub fn proves(gate_key: &str, kept: &gatehouse_store::quorum::Kept<'_>) -> bool {
    let Some(proof) = kept.proof.and_then(|p| serde_json::from_str::<VoteProof>(p).ok()) else { return false };
    let message = request_message(gate_key, &proof.method, &proof.path, &proof.date, &proof.nonce, proof.body.as_bytes());
    if !verifies(kept.device_key, &message, &proof.signature) {
        return false;
    }
    let Ok(d) = serde_json::from_str::<ApproverDecision>(&proof.body) else { return false };
    d.target.key() == kept.item && d.digest == kept.digest && vote_of(&d) == kept.decision
}

/// The vote a decision casts: the decision and how long it lasts (which belongs to
/// "always allow" alone: two denies agree whatever a page's duration menu said).
pub fn vote_of(d: &ApproverDecision) -> String {
    let lasting = if d.decision == crate::consent::Decision::AlwaysAllowScope { d.lasting.clone() } else { crate::consent::Lasting::Always };
    serde_json::json!({"decision": d.decision, "lasting": lasting}).to_string()
}

fn unauthorized(why: impl Into<String>) -> CommandError {
    CommandError::new(Code::Unauthorized, why.into())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn check_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(CommandError::new(Code::Invalid, format!("an approver's name is 1 to {MAX_NAME} characters, without control characters")));
    }
    Ok(name.to_string())
}

/// Makes an invitation for a device to be called `name`, at the gate reached at
/// `gate_url` (as members reach it: its public address).
pub fn invite(ctx: &Context, name: &str, gate_url: &str, now: DateTime<Utc>) -> Result<Invitation> {
    let gate_key = ctx.public_key.as_str();
    let store: &Store = &ctx.store;
    let name = check_name(name)?;
    let base = url::Url::parse(gate_url).map_err(|e| CommandError::new(Code::BadUrl, format!("{gate_url}: {e}")))?;
    if !matches!(base.scheme(), "https" | "http") || base.host().is_none() {
        return Err(CommandError::new(Code::BadUrl, format!("{gate_url}: the gate's address is an http(s) URL")));
    }
    // The approval page keeps its key with WebCrypto, which a browser gives only to a
    // secure page: https, or plain http on this very computer. Any other plain address
    // could never be joined from: refused now, not found out on the phone.
    let loopback = match base.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if base.scheme() == "http" && !loopback {
        return Err(CommandError::new(
            Code::BadUrl,
            format!("{gate_url}: a phone or another computer can join only over https:// (the approval page needs a secure connection to keep its key)"),
        ));
    }
    // 60 random bits in 12 letters and digits that are not mistaken for each other.
    let mut raw = [0u8; CODE_LETTERS];
    SystemRandom::new().fill(&mut raw).map_err(|_| CommandError::new(Code::Internal, "no randomness from the system"))?;
    let code: String = raw.iter().map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char).collect();
    let expires = now + chrono::Duration::minutes(INVITE_MINUTES);
    let mut url = base.join("/approve").map_err(|e| CommandError::new(Code::BadUrl, e.to_string()))?;
    store.approver_invite_add(&sha256_hex(code.as_bytes()), &name, &crate::now(), expires.timestamp_millis(), url.as_str())?;
    store.audit("approver.invite", Some(&name), &serde_json::json!({"expires_at": gatehouse_gate::clock::utc_string(expires)}), &crate::now())?;
    // The page checks the gate it is served by has the key the invitation names.
    url.set_fragment(Some(&format!("code={code}&gate={gate_key}")));
    Ok(Invitation { name, code, url: url.to_string(), expires_at: gatehouse_gate::clock::utc_string(expires), gate_key: gate_key.to_string() })
}

/// What joining signs.
pub fn join_message(gate_key: &str, code: &str, public_key: &str) -> Vec<u8> {
    format!("gatehouse-approver-join/1\n{gate_key}\n{code}\n{public_key}").into_bytes()
}

/// What a request signs.
pub fn request_message(gate_key: &str, method: &str, path: &str, date: &str, nonce: &str, body: &[u8]) -> Vec<u8> {
    format!("gatehouse-approver-request/1\n{gate_key}\n{method}\n{path}\n{date}\n{nonce}\n{}", sha256_hex(body)).into_bytes()
}

fn verifies(public_key: &str, message: &[u8], signature: &str) -> bool {
    let (Ok(key), Ok(sig)) = (URL_SAFE_NO_PAD.decode(public_key), URL_SAFE_NO_PAD.decode(signature)) else { return false };
    key.len() == 65 && sig.len() == 64 && UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &key).verify(message, &sig).is_ok()
}

/// The letters an invitation's code is made of: none mistaken for another.
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// How many letters a code has (60 bits).
const CODE_LETTERS: usize = 12;

/// A request to join, read without touching the store or checking a signature: its code
/// has the shape of one, its key and signature the sizes of P-256's. What a junk request
/// fails, cheaply.
pub struct JoinRequest {
    /// The SHA-256 (hex) of the code as typed, upper-cased: the invitation's key.
    pub code_sha256: String,
    code: String,
    public_key: String,
    signature: String,
}

impl JoinRequest {
    pub fn read(code: &str, public_key: &str, signature: &str) -> Result<JoinRequest> {
        let code = code.trim().to_ascii_uppercase();
        if code.len() != CODE_LETTERS || !code.bytes().all(|b| ALPHABET.contains(&b)) {
            return Err(CommandError::new(Code::BadRequest, format!("an invitation's code is {CODE_LETTERS} letters and digits")));
        }
        let sized = |v: &str, n: usize| v.len() <= 128 && URL_SAFE_NO_PAD.decode(v).is_ok_and(|b| b.len() == n);
        if !sized(public_key, 65) || !sized(signature, 64) {
            return Err(CommandError::new(Code::BadRequest, "a P-256 key (SEC1 uncompressed, base64url) and an r‖s signature are needed"));
        }
        Ok(JoinRequest { code_sha256: sha256_hex(code.as_bytes()), code, public_key: public_key.to_string(), signature: signature.to_string() })
    }
}

/// Registers the device that holds the request's key (it signed `join_message` with it)
/// under the invitation its code names, by the name the inviter gave.
pub fn join(store: &Store, gate_key: &str, req: &JoinRequest, now: DateTime<Utc>) -> Result<Approver> {
    let JoinRequest { code_sha256, code, public_key, signature } = req;
    if !verifies(public_key, &join_message(gate_key, code, public_key), signature) {
        return Err(unauthorized("the device's key did not sign this request (a P-256 key, SEC1 uncompressed, base64url; an r‖s signature)"));
    }
    let mut id = [0u8; 12];
    SystemRandom::new().fill(&mut id).map_err(|_| CommandError::new(Code::Internal, "no randomness from the system"))?;
    let device = Approver {
        id: format!("ap-{}", hex::encode(id)),
        name: String::new(),
        public_key: public_key.to_string(),
        added_at: crate::now(),
        last_seen: None,
        page_url: None,
    };
    let code_hash = code_sha256;
    match store.approver_join(code_hash, now.timestamp_millis(), &device)? {
        Ok(a) => {
            store.audit("approver.join", Some(&a.id), &serde_json::json!({"name": a.name, "public_key": a.public_key}), &crate::now())?;
            // Who shows the devices (Settings) draws them again: the invitation is used.
            store.waiting_changed();
            Ok(a)
        }
        Err(InviteRefusal::Unknown) => Err(unauthorized("no invitation has this code: it was used, it ran out (15 minutes), or it was mistyped")),
        Err(InviteRefusal::KeyTaken) => Err(CommandError::new(Code::AlreadyTrusted, "this device's key is registered already")),
    }
}

/// The approver that signed `req`, if the signature is its, the request fresh and never
/// seen before. Judged in that order: nothing is kept for a request that is not signed.
pub fn authenticate(store: &Store, gate_key: &str, req: &SignedRequest<'_>, now: DateTime<Utc>) -> Result<Approver> {
    let approver = store.approver(req.approver)?.ok_or_else(|| unauthorized("no such approver on this gate (it was removed, or never joined)"))?;
    let message = request_message(gate_key, req.method, req.path, req.date, req.nonce, req.body);
    if !verifies(&approver.public_key, &message, req.signature) {
        return Err(unauthorized("the signature is not this approver's over this request"));
    }
    let at = DateTime::parse_from_rfc3339(req.date).map_err(|_| unauthorized("the request's time is not RFC 3339"))?.with_timezone(&Utc);
    if (now - at).num_seconds().abs() > FRESH_SECONDS {
        return Err(unauthorized(format!("the request was signed at {}, more than {FRESH_SECONDS} s from the gate's clock", req.date)));
    }
    if req.nonce.len() < 16 || req.nonce.len() > 64 || !req.nonce.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(unauthorized("a request's nonce is 16 to 64 letters, digits, '-' or '_'"));
    }
    let keep_until = (at + chrono::Duration::seconds(2 * FRESH_SECONDS)).timestamp_millis();
    if !store.approver_nonce_use(&approver.id, req.nonce, now.timestamp_millis(), keep_until, &crate::now())? {
        return Err(unauthorized("this signed request was made before (a replay)"));
    }
    Ok(approver)
}

pub fn list(ctx: &Context) -> Result<Vec<Approver>> {
    let store: &Store = &ctx.store;
    Ok(store.approvers()?)
}

/// Removes a device: its next request, at any node, is refused.
pub fn remove(ctx: &Context, id: &str) -> Result<()> {
    let store: &Store = &ctx.store;
    let a = store.approver(id)?.ok_or_else(|| CommandError::new(Code::NotFound, format!("no approver {id}")))?;
    store.approver_remove(id)?;
    store.audit("approver.remove", Some(id), &serde_json::json!({"name": a.name}), &crate::now())?;
    // Its open live view, at whichever node, learns it and ends.
    store.waiting_changed();
    Ok(())
}

pub fn rename(ctx: &Context, id: &str, name: &str) -> Result<()> {
    let store: &Store = &ctx.store;
    let name = check_name(name)?;
    if !store.approver_rename(id, &name)? {
        return Err(CommandError::new(Code::NotFound, format!("no approver {id}")));
    }
    store.audit("approver.rename", Some(id), &serde_json::json!({"name": name}), &crate::now())?;
    Ok(())
}

/// One waiting item as an approver is shown it, with the digest its decision must name:
/// a decision is carried out only on the item exactly as the device saw it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ApproverItem {
    pub target: crate::consent::ConsentTarget,
    pub digest: String,
    pub item: crate::consent::ConsentItem,
    /// The item in words, every field the digest covers: what the page draws.
    pub shown: Vec<crate::waiting::shown::Shown>,
    /// The quorum it needs, and who decided so far (none: any one approver decides).
    pub quorum: Option<crate::quorum::QuorumView>,
    /// The other devices looking at what waits: their live view open, or a request made,
    /// within the last [`LOOKING_SECONDS`].
    #[serde(default)]
    pub looking: Vec<String>,
}

/// How recently a device was seen to count as looking (its live view refreshes it more
/// often than this).
pub const LOOKING_SECONDS: i64 = 60;

fn digest(item: &crate::consent::ConsentItem) -> Result<String> {
    Ok(sha256_hex(&serde_json::to_vec(item)?))
}

/// What waits that an approver can decide (a guardian step is decided at its agent's
/// door, on the owner's gate), as device `me` is shown it.
pub fn waiting(store: &Store, gate_key: &str, me: &str, now: DateTime<Utc>) -> Result<Vec<ApproverItem>> {
    let looking: Vec<String> = store
        .approvers()?
        .into_iter()
        .filter(|a| a.id != me)
        .filter(|a| {
            a.last_seen
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| (now - t.with_timezone(&Utc)).num_seconds() < LOOKING_SECONDS)
        })
        .map(|a| a.name)
        .collect();
    let mut out = Vec::new();
    for item in crate::waiting::pending(store)? {
        if let Some(target) = item.target() {
            let digest = digest(&item)?;
            let quorum = match crate::quorum::rule_for(store, &item)? {
                Some(rule) => Some(crate::quorum::view(store, &|k| proves(gate_key, k), &rule, &target.key(), &digest)?),
                None => None,
            };
            let shown = crate::waiting::shown::lines(&item);
            out.push(ApproverItem { target, digest, item, shown, quorum, looking: looking.clone() });
        }
    }
    Ok(out)
}

/// A decision an approver signed, on the item whose digest it names.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ApproverDecision {
    pub target: crate::consent::ConsentTarget,
    pub digest: String,
    pub decision: crate::consent::Decision,
    #[serde(default)]
    pub lasting: crate::consent::Lasting,
}

/// Carries out `d` for `approver`, if the item it names still waits exactly as it saw it.
pub async fn decide(
    gate: std::sync::Arc<crate::doors::Gate>,
    approver: Approver,
    d: ApproverDecision,
    proof: VoteProof,
) -> Result<crate::consent::DecisionOutcome> {
    let store = gate.store().clone();
    let target = d.target.clone();
    // The item as it waits now: the same one (its digest then decides), another under
    // the same name (the sender knocked again), or nothing.
    if d.decision == crate::consent::Decision::AskLater {
        return Err(CommandError::new(Code::Invalid, "“ask me later” puts a prompt off for the gate's owner; an approver allows, denies or blocks"));
    }
    let now_item = crate::blocking(move || {
        let items = crate::waiting::pending(&store)?;
        let same = items.iter().find(|i| i.target().as_ref() == Some(&target)).cloned();
        let renamed = items.iter().any(|i| i.target().is_some_and(|t| t.key() == target.key()));
        Ok((same, renamed))
    })
    .await?;
    let changed = || CommandError::new(Code::Changed, "what you were shown has changed since (it knocked again, or was put off): look again before deciding");
    let item = match now_item {
        (Some(item), _) if digest(&item)? == d.digest => item,
        (Some(_), _) | (None, true) => return Err(changed()),
        (None, false) => return Err(CommandError::new(Code::Gone, "nothing waits under this name any more: it was decided, or it ran out")),
    };
    // A duration that cannot be granted is refused before it counts as a vote.
    if d.decision == crate::consent::Decision::AlwaysAllowScope {
        d.lasting.end(crate::doors::gate::clock::now())?;
    }
    // Under a quorum this is one vote; only the vote that reaches it decides.
    let store = gate.store().clone();
    let (key, seen, who, decision) = (d.target.key(), d.digest.clone(), approver.id.clone(), d.decision);
    let lasting = if d.decision == crate::consent::Decision::AlwaysAllowScope { d.lasting.clone() } else { crate::consent::Lasting::Always };
    let vote = vote_of(&d);
    let gate_key = gate.public_key().to_string();
    let proof = serde_json::to_string(&proof)?;
    let cast = crate::blocking(move || match crate::quorum::rule_for(&store, &item)? {
        Some(rule) => {
            let ballot = crate::quorum::Ballot { approver: &who, key: &key, digest: &seen, decision, vote: &vote, proof: &proof };
            Ok(Some(crate::quorum::cast(&store, &|k| proves(&gate_key, k), &rule, &ballot)?))
        }
        None => Ok(None),
    })
    .await?;
    let agreed = match cast {
        None => Vec::new(),
        Some(crate::quorum::Cast::Counted { agreeing, needed }) => {
            // The others' prompts show this vote.
            let store = gate.store().clone();
            crate::blocking(move || {
                store.waiting_changed();
                Ok(())
            })
            .await?;
            return Ok(crate::consent::DecisionOutcome {
                message: format!("Your vote is counted: {agreeing} of the {needed} needed agree so far. It waits for the others."),
                delivered: None,
            });
        }
        Some(crate::quorum::Cast::Decides { agreed }) => agreed,
    };
    let by_quorum = !agreed.is_empty();
    let (key, who) = (d.target.key(), approver.id.clone());
    let by = crate::consent::By::Approver { id: approver.id, name: approver.name, digest: d.digest.clone(), agreed };
    let out = crate::consent::decide_fetching_as(gate.clone(), d.target, d.decision, lasting, by).await;
    if out.is_err() && by_quorum {
        // Not carried out (a DID document that could not be fetched, a scope that cannot
        // be granted): the item waits as before this vote, which is taken back.
        let (store, digest) = (gate.store().clone(), d.digest);
        crate::blocking(move || {
            store.quorum_withdraw(&key, &digest, &who)?;
            store.waiting_changed();
            Ok(())
        })
        .await?;
    }
    out
}
