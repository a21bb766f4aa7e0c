//! Unknown senders' knocks, at any door: what knocked is the door it knocked at
//! ([`Source::at`]); letting one in is that door's way (an EPP sender's waiting envelope
//! delivered, a UAMP agent trusted for a token, an agent registered with the guardian, a
//! site's key pinned).

use crate::doors::gate::consent::{risk_flags, ConsentError, Lasting};
use chrono::{DateTime, Utc};
use gatehouse_store::{EppFacts, Facts, Policy, Store, TrustEntry};

use super::{claims, Decided, Holds, Later, COVERED_SHOWN};
use super::{grant, ConsentItem, ConsentTarget, Decision, DecisionOutcome};
use crate::names::unnamed;
use crate::target::{grantable, Source};
use crate::trust::check_sender_id;

pub(super) struct Knocks;

/// Hands what a knock kept back to the gate once its sender is let in: the door it
/// knocked at reads it again (verified anew) if that door keeps what it refused; the
/// other doors' senders send again ([`crate::doors::release`]). `consent`: "allow once".
pub(crate) fn deliver(
    gate: &crate::doors::Gate,
    door: &str,
    knock: Option<&gatehouse_store::ReceiptRow>,
    consent: Option<&TrustEntry>,
    now: DateTime<Utc>,
) -> Option<gatehouse_gate::Delivered> {
    let body = knock.filter(|k| !k.body_truncated).and_then(|k| k.body.as_deref())?;
    crate::doors::release(gate, door, body.as_bytes(), consent, now)
}

impl Holds for Knocks {
    fn describe(&self, store: &Store, _now: DateTime<Utc>, later: &Later, items: &mut Vec<ConsentItem>) -> Result<(), ConsentError> {
        for p in store.pending_list()? {
            let source = Source::at(&p.door);
            // An MCP server's knock is known by the tools it offered; they are shown with it.
            let tools = match source {
                Source::McpServer => super::tool_changes::shown(&store.mcp_offers(Some(&p.public_key))?, &[]),
                _ => Vec::new(),
            };
            let knock = store.knock_of(&p)?;
            // The knock as it came, read once by the door it knocked at: what it declared and
            // whose keys it names.
            let told = knock.as_ref().and_then(|k| k.body.as_deref()).map(|raw| crate::doors::told(&p.door, raw)).unwrap_or_default();
            let scope = knock.as_ref().and_then(|k| k.scope.clone()).or_else(|| p.scopes_tried.first().cloned());
            let risk = match knock.as_ref().and_then(|k| Some((k.envelope_id.as_deref()?, k.prompt.as_deref()?, &k.receipt_id))) {
                // A stranger has no entry of the user's: every link of its is flagged.
                Some((id, text, ours)) => risk_flags(store, id, text, &[], Some(ours))?,
                None => Vec::new(),
            };
            let (covered, covered_total) = match &scope {
                Some(sc) => store.covered_by_grant(&p.public_key, sc, knock.as_ref().and_then(|k| k.envelope_id.as_deref()), COVERED_SHOWN)?,
                None => (Vec::new(), 0),
            };
            items.push(ConsentItem::UnknownSender {
                risk,
                covered,
                covered_total,
                later: later.of(ConsentTarget::UnknownSender { public_key: p.public_key.clone(), knock: None }),
                claims: claims(store, &p.public_key, &told.names)?,
                source,
                envelope_id: knock.as_ref().and_then(|k| k.envelope_id.clone()),
                knock: match source {
                    Source::McpServer => p.last_envelope_id.clone(),
                    _ => knock.as_ref().map(|k| k.receipt_id.clone()),
                },
                tools,
                known_as: store.trust_name(&p.public_key)?,
                scope,
                extras: told.declared,
                prompt: knock.and_then(|k| k.prompt),
                public_key: p.public_key,
                first_seen: p.first_seen,
                last_seen: p.last_seen,
                count: p.count,
                scopes_tried: p.scopes_tried,
            });
        }
        Ok(())
    }

    fn count(&self, counts: &gatehouse_store::WaitingCounts) -> usize {
        counts.knocks
    }

    fn holds(&self, target: &ConsentTarget) -> bool {
        matches!(target, ConsentTarget::UnknownSender { .. })
    }

    fn settle(&self, d: &Decided<'_>, target: &ConsentTarget) -> Result<DecisionOutcome, ConsentError> {
        let ConsentTarget::UnknownSender { public_key, knock: shown } = target else { return Err(ConsentError::Gone) };
        let Decided { gate, decision, end, now, uamp_keys } = *d;
        let (store, at) = (gate.store(), d.at());
        let key = gatehouse_store::sender_key(public_key);
        let Some(request) = store.pending_list()?.into_iter().find(|p| p.public_key == key) else {
            return Err(ConsentError::Gone);
        };
        let knock = store.knock_of(&request)?;
        // What knocked, by the door it knocked at.
        let source = Source::at(&request.door);
        // The decision is on the knock the user saw: if the sender knocked again in
        // between (another scope, other words; an MCP server: other tools), nothing is
        // decided and the newer one is shown instead.
        let now_knock = match source {
            Source::McpServer => request.last_envelope_id.clone(),
            _ => knock.as_ref().map(|k| k.receipt_id.clone()),
        };
        if now_knock != *shown && decision != Decision::Block {
            return Err(ConsentError::Changed(
                "Nothing was decided: this sender knocked again since the prompt was shown. Look at what it sends now, then decide.".into(),
            ));
        }
        let scope = knock.as_ref().and_then(|k| k.scope.clone()).or_else(|| request.scopes_tried.first().cloned());
        let outcome = match decision {
            Decision::AskLater => return Err(ConsentError::Invalid("a prompt is put off, not decided".into())),
            Decision::Deny => {
                store.pending_remove(&key)?;
                DecisionOutcome { message: "Denied. The sender stays unknown; if it writes again you will be asked again.".into(), delivered: None }
            }
            Decision::Block => {
                store.block(&key, "blocked from a consent prompt", &at)?;
                DecisionOutcome { message: "Blocked. Nothing from this sender will reach you or ask again.".into(), delivered: None }
            }
            Decision::AllowOnce if source == Source::AsopAgent => {
                return Err(ConsentError::Invalid("an agent is registered by letting it in for good; it then asks again and your rules decide".into()));
            }
            Decision::AllowOnce if source == Source::McpServer => {
                return Err(ConsentError::Invalid("an MCP server is let in, for good or for a while; its calls then ask again and your rules decide".into()));
            }
            Decision::AllowOnce if source == Source::UampAgent => {
                return Err(ConsentError::Invalid(
                    "a UAMP agent is let in by trusting it for the scope and issuing it a token; nothing of its message was kept to deliver once".into(),
                ));
            }
            Decision::AllowOnce if source == Source::A2aAgent => {
                return Err(ConsentError::Invalid(
                    "an A2A agent is let in by trusting it for the scope; its message was answered as not yet allowed, and it sends again once you have".into(),
                ));
            }
            Decision::AllowOnce if source == Source::IntentSite => {
                return Err(ConsentError::Invalid("a site's key is pinned, for good or for a while; nothing of its answer waits to be delivered once".into()));
            }
            Decision::AllowOnce | Decision::AlwaysAllowScope => {
                let scope = scope.ok_or_else(|| ConsentError::Invalid("the request has no scope to allow".into()))?;
                grantable(source, &scope)?;
                if end.is_some() && source == Source::AsopAgent {
                    return Err(ConsentError::Invalid(
                        "an agent is registered for good (it can be removed at any time); its steps can be allowed for a while".into(),
                    ));
                }
                // A knock that came by mail: its From is where this sender's receipts
                // go from now on (the address the user let it in under).
                let mail_from = match &knock {
                    Some(k) => store.email_arrival_get(&k.receipt_id)?.and_then(|a| a.from_addr),
                    None => None,
                };
                let mut policy = Policy { allowed_scopes: vec![scope.clone()], ..Policy::default() };
                if decision == Decision::AlwaysAllowScope {
                    grant(&mut policy, &scope, end, false);
                }
                // What the door it knocked at keeps about it: a UAMP agent's keys read
                // from its DID document, the address a mailed knock came from.
                let facts = match (uamp_keys.is_empty(), &mail_from) {
                    (false, _) => Facts::uamp(uamp_keys.to_vec()),
                    (true, Some(m)) => Facts::epp(EppFacts { mail_address: Some(m.clone()), ..EppFacts::default() }),
                    (true, None) => Facts::default(),
                };
                let entry = match store.trust_get(&key)? {
                    // Trusted already, asking about a new scope: let in once under its own
                    // entry with that scope beside the others.
                    Some(mut t) if decision == Decision::AllowOnce => {
                        if !t.policy.allows_scope(&scope) {
                            t.policy.allowed_scopes.push(scope.clone());
                        }
                        t
                    }
                    _ => TrustEntry { public_key: key.clone(), name: unnamed(&key), added_at: at.clone(), door: request.door.clone(), policy, facts },
                };
                check_sender_id(&key, &entry.facts)?;
                // An MCP server's tools, exactly as the user saw them with its knock, are
                // pinned as it is let in (a tool it offers later waits for the user).
                let pinned: Vec<(String, String)> = match source {
                    Source::McpServer => {
                        let offers: Vec<_> = store.mcp_offers(Some(&key))?.into_iter().filter(|o| !o.refused).collect();
                        if Some(gatehouse_store::mcp::offers_digest(&offers)) != *shown {
                            return Err(ConsentError::Changed(
                                "Nothing was decided: the server listed other tools since this was shown. Look at them again, then decide.".into(),
                            ));
                        }
                        offers.into_iter().map(|o| (o.tool, o.digest)).collect()
                    }
                    _ => Vec::new(),
                };
                let delivered = if decision == Decision::AlwaysAllowScope {
                    match store.trust_get(&key)? {
                        // Known already, its grant for this scope ended (a pin for a
                        // while): the grant is given again.
                        Some(mut t) => {
                            grant(&mut t.policy, &scope, end, false);
                            if !t.policy.allows_scope(&scope) {
                                t.policy.allowed_scopes.push(scope.clone());
                            }
                            // A mailed knock's From becomes where an EPP sender's receipts
                            // go, unless an address is kept for it already.
                            let mailed = match mail_from {
                                Some(m) if t.door == crate::doors::epp::DOOR && t.facts.epp.as_ref().is_none_or(|e| e.mail_address.is_none()) => {
                                    t.facts.epp.get_or_insert_with(EppFacts::default).mail_address = Some(m);
                                    true
                                }
                                _ => false,
                            };
                            store.trust_update(&key, None, &t.policy, mailed.then_some(&t.facts))?;
                            store.pending_remove(&key)?;
                        }
                        None => store.trust_add(&entry)?,
                    }
                    if !pinned.is_empty() {
                        store.mcp_accept(&key, &pinned, &at)?;
                    }
                    deliver(gate, &request.door, knock.as_ref(), None, now)
                } else {
                    store.pending_remove(&key)?;
                    deliver(gate, &request.door, knock.as_ref(), Some(&entry), now)
                };
                let message = match (&delivered, decision) {
                    (Some(d), _) if !d.let_in() => {
                        format!("Allowed, but the waiting message could not be delivered: {}", d.message.as_deref().unwrap_or(d.outcome.as_str()))
                    }
                    (_, Decision::AlwaysAllowScope) if source == Source::AsopAgent => {
                        "Registered: this agent's steps are now decided by your rules, or asked about.".to_string()
                    }
                    (_, Decision::AlwaysAllowScope) if source == Source::McpServer => {
                        format!("Let in {}: this MCP server's tool calls are now decided by your rules, or asked about.", Lasting::words(end))
                    }
                    (_, Decision::AlwaysAllowScope) if source == Source::IntentSite => {
                        format!(
                            "Pinned {}: this IntentSite's answers are checked against its key, and answers signed by any other key are refused.",
                            Lasting::words(end)
                        )
                    }
                    (_, Decision::AlwaysAllowScope) if source == Source::UampAgent => {
                        format!(
                            "Trusted for \"{scope}\" {}. Issue it a token (UAMP tab) and send it the token: its messages arrive once it uses it.",
                            Lasting::words(end)
                        )
                    }
                    (_, Decision::AlwaysAllowScope) if source == Source::A2aAgent => {
                        format!("Trusted for \"{scope}\" {}. The agent's next message in that scope arrives.", Lasting::words(end))
                    }
                    (_, Decision::AlwaysAllowScope) if end.is_some() => {
                        format!("Allowed for \"{scope}\" {}. Its messages in that scope arrive until then; after, each asks you again.", Lasting::words(end))
                    }
                    (_, Decision::AlwaysAllowScope) => format!("Trusted for \"{scope}\". Its messages in that scope now arrive."),
                    _ => "Allowed once. The waiting message was delivered.".into(),
                };
                DecisionOutcome { message, delivered }
            }
        };
        // The knock's row tells what became of it (and, let in, is the message it became).
        if let Some(k) = &knock {
            store.knock_decided(&key, &k.receipt_id, decision.as_str(), &at, outcome.delivered.as_ref().map(|d| d.receipt_id.as_str()))?;
        }
        Ok(outcome)
    }
}
