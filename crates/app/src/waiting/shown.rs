//! Everything a decision on a waiting item is about, in words, one line a field: what an
//! approver's page draws, so a device approves only what it showed. An approver's vote
//! names a digest of the whole item ([`crate::approvers`]); each field of the item is
//! destructured here without `..`, so a field added to [`ConsentItem`] does not compile
//! until it is drawn, and a test checks every field with a value has its line.

use serde::Serialize;

use super::{Claim, ConsentItem};

/// One line: which field of the item it draws, a label and the text.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Shown {
    pub field: String,
    pub label: String,
    pub text: String,
    /// A warning the page draws as one (a claim to be someone, a key that changed).
    pub warn: bool,
}

/// The description a step's agent gives of the tool the step calls.
pub(super) fn tool_described(request: &serde_json::Value) -> Option<&str> {
    let params = request.get("params")?;
    let tool = params.pointer("/toolCallRequest/toolId")?.as_str()?;
    let tools = params.pointer("/context/agent/tools")?.as_array()?;
    tools.iter().find(|t| t.get("id").and_then(|i| i.as_str()) == Some(tool))?.get("description")?.as_str().filter(|d| !d.is_empty())
}

struct Lines(Vec<Shown>);

impl Lines {
    fn add(&mut self, field: &str, label: &str, text: impl Into<String>) {
        self.0.push(Shown { field: field.into(), label: label.into(), text: text.into(), warn: false });
    }

    fn warn(&mut self, field: &str, label: &str, text: impl Into<String>) {
        self.0.push(Shown { field: field.into(), label: label.into(), text: text.into(), warn: true });
    }

    fn opt(&mut self, field: &str, label: &str, text: &Option<String>) {
        if let Some(t) = text {
            self.add(field, label, t.clone());
        }
    }

    fn risk(&mut self, risk: &[gatehouse_risk::Flag]) {
        for f in risk {
            let dismissed = if f.dismissed { " (set aside)" } else { "" };
            self.warn("risk", "Flagged", format!("{}: “{}”{dismissed}", f.why, f.excerpt));
        }
    }

    fn covered(&mut self, covered: &[gatehouse_store::Covered], total: i64) {
        if total > 0 || !covered.is_empty() {
            self.add("covered_total", "Would also let in", format!("{total} earlier message(s) in this scope"));
        }
        for c in covered {
            let what = c.excerpt.as_deref().unwrap_or("(no text)");
            let id = c.envelope_id.as_deref().map(|i| format!(", message {i}")).unwrap_or_default();
            self.add("covered", "Earlier", format!("{} — {} ({}{id})", c.received_at, what, c.outcome));
        }
    }

    fn claims(&mut self, claims: &[Claim]) {
        for c in claims {
            let verified = if c.verified { "a verified contact" } else { "a contact" };
            let who = if c.how.contains(&c.contact_name) { String::new() } else { format!(" — {}", c.contact_name) };
            self.warn("claims", "Claims", format!("{}{who} ({verified})", c.how));
        }
    }

    fn extras(&mut self, extras: &Option<gatehouse_gate::declared::Declared>) {
        let Some(x) = extras else { return };
        let gatehouse_gate::declared::Declared { integrity, capabilities, provenance, inert } = x;
        if let Some(alg) = integrity {
            self.add("extras", "Integrity", format!("the payload matched its {alg} hash"));
        }
        for c in capabilities {
            self.add("extras", "Asks to use", c.clone());
        }
        for p in provenance {
            let said = p.statement.as_deref().map(|s| format!(": “{s}”")).unwrap_or_default();
            self.add("extras", "Attested", format!("{} {} at {}{said}", p.role, p.identity, p.timestamp));
        }
        for i in inert {
            self.add("extras", "Declares (not acted on)", format!("{} {} ({})", i.field, i.summary, i.json));
        }
    }

    /// Each tool offered: new or changed, its words now and before.
    fn tools(&mut self, tools: &[super::ToolShown]) {
        let said = |p: &serde_json::Value| p.get("description").and_then(serde_json::Value::as_str).unwrap_or("(no description)").to_string();
        for t in tools {
            match &t.pinned {
                None => self.add("tool", &format!("New tool {}", t.tool), said(&t.now)),
                Some(was) => {
                    self.warn("tool", &format!("Changed tool {}", t.tool), format!("now: {} — was: {}", said(&t.now), said(was)));
                }
            }
            self.risk(&t.risk);
        }
    }

    fn later(&mut self, later: &Option<String>) {
        if let Some(t) = later {
            self.add("later", "Put off until", t.clone());
        }
    }
}

fn source(s: &crate::target::Source) -> &'static str {
    use crate::target::Source::*;
    match s {
        EppSender => "a sender (EPP)",
        UampAgent => "an agent (UAMP)",
        IntentSite => "a company's site (IntentWeb)",
        AsopAgent => "one of your agents",
        McpServer => "an MCP server your AI app uses",
        A2aAgent => "an agent (A2A)",
        OtherDoor => "something at a door this Gatehouse does not run",
    }
}

/// The item in words, every field that has a value.
pub fn lines(item: &ConsentItem) -> Vec<Shown> {
    let mut l = Lines(Vec::new());
    match item {
        ConsentItem::UnknownSender {
            public_key,
            source: from,
            first_seen,
            last_seen,
            count,
            scopes_tried,
            knock,
            envelope_id,
            scope,
            prompt,
            extras,
            risk,
            covered,
            covered_total,
            later,
            claims,
            tools,
            known_as,
        } => {
            l.claims(claims);
            match known_as {
                // Trusted already: what it asks about is the new thing.
                Some(name) => {
                    l.add("known_as", "From", name.clone());
                    l.add("source", "Asks", format!("{} you trust, about a scope you have not allowed it", source(from)));
                }
                None => {
                    l.add("source", "Who", format!("{} not in your trust registry", source(from)));
                    l.add("name", "Shown as", crate::names::shown(None, public_key));
                }
            }
            l.add("public_key", "Key", public_key.clone());
            l.opt("scope", "Asks for", scope);
            l.add("count", "Knocked", format!("{count} time(s)"));
            l.add("first_seen", "First seen", first_seen.clone());
            l.add("last_seen", "Last seen", last_seen.clone());
            if !scopes_tried.is_empty() {
                l.add("scopes_tried", "Scopes tried", scopes_tried.join(", "));
            }
            l.opt("prompt", "Message", prompt);
            l.risk(risk);
            l.extras(extras);
            l.covered(covered, *covered_total);
            l.opt("envelope_id", "Message id", envelope_id);
            l.opt("knock", "Knock", knock);
            l.tools(tools);
            l.later(later);
        }
        ConsentItem::Held {
            row_id,
            envelope_id,
            sender,
            sender_name,
            scope,
            prompt,
            payload_type,
            on_behalf_of,
            received_at,
            extras,
            risk,
            covered,
            covered_total,
            grant_ended,
            later,
            key_change,
        } => {
            if *key_change {
                l.warn("key_change", "Key", "a new key of a verified contact, not verified itself: nothing from it goes through until it is");
            }
            l.add("sender_name", "From", crate::names::shown(sender_name.as_deref(), sender));
            l.add("sender", "Key", sender.clone());
            l.add("scope", "Scope", scope.clone());
            l.opt("on_behalf_of", "On behalf of", on_behalf_of);
            l.add("prompt", "Message", prompt.clone());
            l.opt("payload_type", "Kind of message", payload_type);
            l.risk(risk);
            l.extras(extras);
            l.add("received_at", "Received", received_at.clone());
            l.opt("grant_ended", "Its grant ended", grant_ended);
            l.covered(covered, *covered_total);
            l.add("envelope_id", "Message id", envelope_id.clone());
            l.add("row_id", "Entry", row_id.to_string());
            l.later(later);
        }
        ConsentItem::HeldAsk { stream_id, sender, sender_name, scope, prompt, received_at, risk, grant_ended, later, key_change } => {
            if *key_change {
                l.warn("key_change", "Keys", "its keys changed after you verified it, and it is not verified again");
            }
            l.add("sender_name", "From", crate::names::shown(sender_name.as_deref(), sender));
            l.add("sender", "Agent", sender.clone());
            l.add("scope", "Scope", scope.clone());
            l.add("prompt", "Asks", prompt.clone());
            l.risk(risk);
            l.add("received_at", "Received", received_at.clone());
            l.opt("grant_ended", "Its grant ended", grant_ended);
            l.add("stream_id", "Stream", stream_id.clone());
            l.later(later);
        }
        ConsentItem::KeyChange { sender, sender_name, key_id, reason, first_seen, last_seen, count, verified, later } => {
            let why = if reason == "invalid_signature" { "a key kept for it did not match its signature" } else { "it signed with a key not kept for it" };
            l.warn("reason", "Key change", why);
            if *verified {
                l.warn("verified", "Verified", "you had verified this contact: whatever its key changed to stays blocked until you verify it again");
            }
            l.add("sender_name", "From", crate::names::shown(sender_name.as_deref(), sender));
            l.add("sender", "Contact", sender.clone());
            l.add("key_id", "Key it named", key_id.clone());
            l.add("count", "Seen", format!("{count} time(s)"));
            l.add("first_seen", "First seen", first_seen.clone());
            l.add("last_seen", "Last seen", last_seen.clone());
            l.later(later);
        }
        ConsentItem::GuardianStep { step, risk } => {
            // The step in words (the agent, the tool and its arguments), said once: the
            // page's heading names only who waits.
            l.add("step", "Asks", step.summary.clone());
            // What the agent (or the MCP server) says the tool does: its own words, read
            // for risks, shown before the user allows.
            if let Some(said) = tool_described(&step.request) {
                l.add("tool_description", "The tool says of itself", said);
                l.risk(risk);
            }
        }
        ConsentItem::ToolChange { server, server_name, tools, digest: _, later } => {
            l.add("server_name", "MCP server", server_name.clone());
            l.add("server", "Key", server.clone());
            l.tools(tools);
            l.later(later);
        }
    }
    l.0
}
