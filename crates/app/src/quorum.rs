//! Quorum rules: what several approvers must decide together ("any one of", "2 of 3",
//! "all of" named devices), for a scope, a sender, or everything. The most specific rule
//! covering an item applies (a sender's before a scope's before one for everything). Each
//! device counts once; the vote that reaches the quorum decides, once, even with votes on
//! several nodes at the same moment (`gatehouse_store::quorum`); a deny by any one of
//! them ends it unless the rule says otherwise. The gate's owner (its own window and CLI,
//! which hold its key) decides alone.

use crate::Context;
use gatehouse_store::quorum::{Proven, QuorumRule, Vote};
use gatehouse_store::Store;

use crate::consent::{ConsentItem, Decision};
use crate::{Code, CommandError, Result};

/// A rule as the owner writes it.
#[derive(Debug, Clone, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RuleInput {
    pub scope: Option<String>,
    pub sender: Option<String>,
    /// How many must agree; 0 means all of them.
    pub need: u32,
    pub approvers: Vec<String>,
    /// Whether one deny (or block) ends it at once (the default).
    pub deny_ends: Option<bool>,
}

/// A rule on an item, as the prompt shows it: who must agree, and who decided so far.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct QuorumView {
    pub rule: i64,
    /// How many must agree.
    pub need: u32,
    /// The devices whose votes count, by name.
    pub of: Vec<String>,
    pub deny_ends: bool,
    /// Who voted so far, and for what.
    pub votes: Vec<VoteView>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VoteView {
    pub approver: String,
    pub decision: String,
    pub at: String,
}

pub fn rule_add(ctx: &Context, r: RuleInput) -> Result<QuorumRule> {
    let store: &Store = &ctx.store;
    if r.approvers.is_empty() {
        return Err(CommandError::new(Code::Invalid, "a quorum names the approver devices whose votes count"));
    }
    // In the owner's order, each once.
    let mut ids: Vec<String> = Vec::new();
    for id in r.approvers {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    for id in &ids {
        if store.approver(id)?.is_none() {
            return Err(CommandError::new(Code::NotFound, format!("no approver {id} (see `gatehouse approvers list`)")));
        }
    }
    if r.need as usize > ids.len() {
        return Err(CommandError::new(Code::Invalid, format!("{} of {} devices cannot agree", r.need, ids.len())));
    }
    let rule = QuorumRule {
        id: 0,
        scope: r.scope.filter(|s| !s.trim().is_empty()),
        sender: r.sender.filter(|s| !s.trim().is_empty()).map(|s| gatehouse_store::sender_key(&s)),
        need: r.need,
        approvers: ids,
        deny_ends: r.deny_ends.unwrap_or(true),
        created_at: crate::now(),
    };
    let id = store.quorum_rule_add(&rule)?;
    let rule = QuorumRule { id, ..rule };
    store.audit("quorum.add", Some(&id.to_string()), &serde_json::to_value(&rule)?, &crate::now())?;
    Ok(rule)
}

pub fn rules(ctx: &Context) -> Result<Vec<QuorumRule>> {
    let store: &Store = &ctx.store;
    Ok(store.quorum_rules()?)
}

pub fn rule_remove(ctx: &Context, id: i64) -> Result<()> {
    let store: &Store = &ctx.store;
    if !store.quorum_rule_remove(id)? {
        return Err(CommandError::new(Code::NotFound, format!("no quorum rule {id}")));
    }
    store.audit("quorum.remove", Some(&id.to_string()), &serde_json::json!({}), &crate::now())?;
    Ok(())
}

/// The scope and sender an item is about.
fn about(item: &ConsentItem) -> (Option<&str>, Option<&str>) {
    match item {
        ConsentItem::UnknownSender { public_key, scope, .. } => (scope.as_deref(), Some(public_key)),
        ConsentItem::Held { sender, scope, .. } | ConsentItem::HeldAsk { sender, scope, .. } => (Some(scope), Some(sender)),
        ConsentItem::KeyChange { sender, .. } => (None, Some(sender)),
        // A step is the guardian's, or an MCP server's call: quorum rules name it by that
        // scope (an agent's id is no registry key).
        ConsentItem::GuardianStep { step, .. } => match step.agent_id.as_deref().is_some_and(|a| a.starts_with(crate::doors::guardian::OTHER_DOORS_AGENTS)) {
            true => (Some(crate::doors::mcp::at_gate::SCOPE), None),
            false => (Some(crate::doors::guardian::SCOPE), None),
        },
        ConsentItem::ToolChange { server, .. } => (Some(crate::doors::mcp::at_gate::SCOPE), Some(server)),
    }
}

/// The rule covering `item`, the most specific first.
pub fn rule_for(store: &Store, item: &ConsentItem) -> Result<Option<QuorumRule>> {
    let (scope, sender) = about(item);
    let sender = sender.map(gatehouse_store::sender_key);
    let covers = |r: &QuorumRule| r.scope.as_deref().is_none_or(|s| Some(s) == scope) && r.sender.as_ref().is_none_or(|s| Some(s) == sender.as_ref());
    let rank = |r: &QuorumRule| (r.sender.is_some(), r.scope.is_some(), r.id);
    Ok(store.quorum_rules()?.into_iter().filter(covers).max_by_key(rank))
}

/// How many must agree under `rule` now: "all" counts the devices still registered.
pub fn needed(store: &Store, rule: &QuorumRule) -> Result<u32> {
    if rule.need > 0 {
        return Ok(rule.need);
    }
    let registered = store.approvers()?;
    Ok(rule.approvers.iter().filter(|id| registered.iter().any(|a| &a.id == *id)).count().max(1) as u32)
}

fn name_of(store: &Store, id: &str) -> Result<String> {
    Ok(store.approver(id)?.map(|a| a.name).unwrap_or_else(|| format!("{id} (removed)")))
}

/// `rule` on the item `key` as `digest` names it (the votes that count: enrolled devices',
/// each checked by `proven` against the request its device signed).
pub fn view(store: &Store, proven: Proven<'_>, rule: &QuorumRule, key: &str, digest: &str) -> Result<QuorumView> {
    let votes = store
        .quorum_votes(key, digest, proven)?
        .into_iter()
        .map(|v| Ok(VoteView { approver: name_of(store, &v.approver_id)?, decision: v.decision, at: v.at }))
        .collect::<Result<Vec<_>>>()?;
    let of = rule.approvers.iter().map(|id| name_of(store, id)).collect::<Result<Vec<_>>>()?;
    Ok(QuorumView { rule: rule.id, need: needed(store, rule)?, of, deny_ends: rule.deny_ends, votes })
}

/// What casting a vote came to.
pub enum Cast {
    /// This vote decides: carry the decision out (with everyone who agreed).
    Decides { agreed: Vec<String> },
    /// Counted; the item waits for the others.
    Counted { agreeing: u32, needed: u32 },
}

/// A device's vote, as it signed it.
#[derive(Clone, Copy)]
pub struct Ballot<'a> {
    pub approver: &'a str,
    /// The item as the device saw it.
    pub key: &'a str,
    pub digest: &'a str,
    pub decision: Decision,
    /// The decision and how long it lasts, as JSON (`approvers::vote_of`).
    pub vote: &'a str,
    /// The signed request that cast it (`approvers::VoteProof`, as JSON).
    pub proof: &'a str,
}

/// A device's vote on the item as it saw it, counted with every other vote that still
/// proves itself (`proven`: the device's signature over the request that cast it).
pub fn cast(store: &Store, proven: Proven<'_>, rule: &QuorumRule, b: &Ballot<'_>) -> Result<Cast> {
    let Ballot { approver, key, digest, decision, vote, proof } = *b;
    if !rule.approvers.iter().any(|a| a == approver) {
        let names = rule.approvers.iter().map(|id| name_of(store, id)).collect::<Result<Vec<_>>>()?;
        return Err(CommandError::new(Code::NotAllowed, format!("this needs the votes of {}: this device is not one of them", names.join(", "))));
    }
    let needed = needed(store, rule)?;
    let ends = rule.deny_ends && matches!(decision, Decision::Deny | Decision::Block);
    let ballot = gatehouse_store::quorum::Ballot { item: key, digest, approver, decision: vote, needed, ends, proof };
    match store.quorum_vote(&ballot, &crate::now(), proven)? {
        Vote::Counted { agreeing } => Ok(Cast::Counted { agreeing, needed }),
        Vote::Decides => {
            let agreed = store.quorum_votes(key, digest, proven)?.into_iter().filter(|v| v.decision == vote).map(|v| v.approver_id).collect();
            Ok(Cast::Decides { agreed })
        }
        Vote::AlreadyVoted => Err(CommandError::new(Code::AlreadySent, "this device voted on this already")),
        Vote::AlreadyDecided => Err(CommandError::new(Code::Gone, "the others decided this already")),
    }
}
