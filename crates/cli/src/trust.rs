//! `gatehouse trust …`: who may reach the user's AI, for what, and which keys are revoked.

use crate::terminal::{note, say};
use crate::{invalid, CommandError};

use clap::{Args, Subcommand};
use gatehouse_app::consent::ConsentError;
use gatehouse_app::trust::{Policy, RateLimit};
use gatehouse_app::Context;

use crate::{check_key, print_json, uamp};

#[derive(Args)]
pub struct PolicyArgs {
    /// Comma-separated scopes, or * for all
    #[arg(long, value_delimiter = ',')]
    scopes: Vec<String>,
    /// Largest envelope accepted from this sender, in bytes (default 10 MB)
    #[arg(long)]
    max_envelope_size: Option<u64>,
    /// Acceptances allowed in any hour, counted in whole minutes (none by default)
    #[arg(long)]
    max_per_hour: Option<u32>,
    /// Acceptances allowed in any 24 hours, counted in whole minutes (none by default)
    #[arg(long)]
    max_per_day: Option<u32>,
    /// Hold accepted envelopes for your consent before their executor runs
    #[arg(long)]
    hold: bool,
    /// Refuse envelopes sent on behalf of someone else
    #[arg(long)]
    no_delegation: bool,
    /// Where answers to the sender's prompts go back (reviewed first): its inbox's submit
    /// URL, or mailto:ADDRESS to answer by mail through your mail account
    #[arg(long)]
    reply_endpoint: Option<String>,
    /// The sender's mail address: receipts of envelopes it mails go there (and nowhere a
    /// mail's headers name)
    #[arg(long, value_name = "ADDRESS")]
    mail_address: Option<String>,
    /// Scopes whose answers are sent back without review (comma-separated, or *)
    #[arg(long, value_delimiter = ',')]
    auto_reply: Vec<String>,
    /// EPP v1.1: the most this sender may ask to use, as JSON in the envelope's
    /// `capabilities` shape, e.g. '{"actions":["notify"],"network":{"domains":["shop.example"]}}'
    #[arg(long, value_name = "JSON")]
    allow_capabilities: Option<String>,
    /// EPP v1.1: refuse envelopes from this sender that declare no capabilities
    #[arg(long)]
    require_capabilities: bool,
    /// How long the scopes are allowed: 1h, tonight, or until a date (YYYY-MM-DD); then each
    /// message asks again. For good when not given.
    #[arg(long = "for", value_name = "1h|tonight|YYYY-MM-DD")]
    lasting: Option<String>,
}

/// `--for` as the consent prompt's choices.
fn lasting(arg: &str) -> Result<gatehouse_app::consent::Lasting, CommandError> {
    use gatehouse_app::consent::Lasting;
    Ok(match arg.trim() {
        "1h" | "hour" => Lasting::Hour,
        "tonight" => Lasting::Tonight,
        "always" => Lasting::Always,
        d if d.len() == 10 => Lasting::Until { date: d.to_string() },
        other => return Err(invalid(format!("--for {other:?}: say 1h, tonight, always, or a date (YYYY-MM-DD)"))),
    })
}

impl PolicyArgs {
    pub fn policy(&self) -> Result<Policy, CommandError> {
        if self.scopes.is_empty() {
            return Err(invalid("--scopes is required (comma-separated, or * for all)"));
        }
        for s in &self.scopes {
            if s != "*" && !gatehouse_epp::envelope::is_scope_like(s) {
                return Err(invalid(format!("scope {s:?} must be alphanumeric characters and hyphens, or *")));
            }
        }
        let mut grant_until = std::collections::BTreeMap::new();
        if let Some(arg) = &self.lasting {
            if self.scopes.iter().any(|s| s == "*") {
                return Err(invalid("--for grants named scopes for a while; * is for good only"));
            }
            if let Some(end) = lasting(arg)?.end(gatehouse_app::clock::now())? {
                for s in &self.scopes {
                    grant_until.insert(s.clone(), gatehouse_epp::utc_string(end));
                }
            }
        }
        Ok(Policy {
            key_change_unverified: false,
            grant_until,
            allowed_scopes: self.scopes.clone(),
            max_envelope_size: self.max_envelope_size.unwrap_or_else(gatehouse_app::trust::default_max_envelope_size),
            rate_limit: RateLimit { max_per_hour: self.max_per_hour, max_per_day: self.max_per_day },
            hold_for_consent: self.hold,
            allow_delegation: !self.no_delegation,
            consent_granted_scopes: Vec::new(),
            auto_reply_scopes: self.auto_reply.clone(),
        })
    }

    /// What the EPP door keeps about an EPP sender, from the flags that name it (none given:
    /// nothing).
    pub fn epp(&self) -> Result<Option<gatehouse_app::trust::EppFacts>, CommandError> {
        let capabilities = match (&self.allow_capabilities, self.require_capabilities) {
            (None, false) => None,
            (json, require) => {
                let allowed = match json {
                    Some(j) => {
                        let v: serde_json::Value = serde_json::from_str(j).map_err(|e| invalid(format!("--allow-capabilities is not JSON: {e}")))?;
                        serde_json::from_value::<gatehouse_epp::v11::Capabilities>(v.clone()).map_err(|e| invalid(format!("--allow-capabilities: {e}")))?;
                        v
                    }
                    None => serde_json::json!({}),
                };
                Some(gatehouse_app::trust::CapabilityLimit { require, allowed })
            }
        };
        let facts = gatehouse_app::trust::EppFacts { reply_endpoint: self.reply_endpoint.clone(), mail_address: self.mail_address.clone(), capabilities };
        Ok(Some(facts).filter(|f| *f != gatehouse_app::trust::EppFacts::default()))
    }
}

#[derive(Subcommand)]
pub enum TrustCmd {
    /// Trust a sender: an EPP public key (64 hex) or a UAMP DID (did:key, or did:web,
    /// whose DID document is fetched now over HTTPS)
    Add {
        key: String,
        #[arg(long)]
        name: String,
        #[command(flatten)]
        policy: PolicyArgs,
    },
    /// List trusted senders
    List {
        #[arg(long)]
        json: bool,
    },
    /// List scopes granted for a while (1h, tonight, a date), ending soonest first
    Grants {
        #[arg(long)]
        json: bool,
    },
    /// Stop trusting a sender
    Remove { key: String },
    /// Turn a pending sender request into a trust entry (an ASOP agent, asop:<id>, is let
    /// in for its own scope: see `gatehouse guardian approve`)
    Approve {
        key: String,
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        policy: PolicyArgs,
    },
    /// Revoke a sender's key (EPP v1.1): its envelopes are refused with SENDER_REVOKED and
    /// it never asks again; its trust entry and history stay
    Revoke {
        key: String,
        /// Why (shown in its receipts' message)
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Take a revocation back
    Unrevoke { key: String },
    /// Revoked keys
    Revoked {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: TrustCmd, ctx: &Context) -> Result<(), CommandError> {
    let store = ctx;
    match cmd {
        TrustCmd::Add { key, name, policy } => {
            let input = gatehouse_app::trust::TrustInput { public_key: check_key(&key)?, name, policy: policy.policy()?, epp: policy.epp()? };
            let entry = uamp::runtime()?.block_on(gatehouse_app::trust::add_input(store, input))?;
            note!("trusted {} ({})", entry.name, entry.public_key);
        }
        TrustCmd::Approve { key, name, policy } if key.starts_with("asop:") => {
            if policy.scopes.iter().any(|s| s != gatehouse_app::trust::ASOP_SCOPE) {
                return Err(invalid(format!("{key} is one of your agents: it is let in for \"asop\" only")));
            }
            // Its limits (per hour or day, size, --hold, --for) apply to its steps; its scope is the guardian's.
            let policy = PolicyArgs { scopes: vec![gatehouse_app::trust::ASOP_SCOPE.into()], ..policy };
            let entry = gatehouse_app::guardian::approve_with(store, &key, name, policy.policy()?)?;
            note!("registered {} ({}): its steps are now decided by your rules, or asked about", entry.name, entry.public_key);
        }
        TrustCmd::Approve { key, name, policy } => {
            let entry = gatehouse_app::trust::approve(store, &check_key(&key)?, name, policy.policy()?, policy.epp()?, chrono::Utc::now())?;
            note!("approved {} ({})", entry.name, entry.public_key);
        }
        TrustCmd::List { json } => {
            let list = gatehouse_app::trust::list(store)?;
            if json {
                print_json(&list);
            } else if list.is_empty() {
                note!("no trusted senders");
            } else {
                for t in list.into_iter().map(|t| t.entry) {
                    let p = &t.policy;
                    say!(
                        "{}  {}  scopes={}  max_size={}  per_hour={}  per_day={}{}{}{}",
                        t.public_key,
                        t.name,
                        p.allowed_scopes.join(","),
                        p.max_envelope_size,
                        p.rate_limit.max_per_hour.map_or("-".into(), |n| n.to_string()),
                        p.rate_limit.max_per_day.map_or("-".into(), |n| n.to_string()),
                        if p.hold_for_consent { "  hold" } else { "" },
                        if p.allow_delegation { "" } else { "  no-delegation" },
                        p.grant_until.iter().map(|(s, u)| format!("  {s}-until={u}")).collect::<String>(),
                    );
                }
            }
        }
        TrustCmd::Grants { json } => {
            let grants = gatehouse_app::trust::timed_grants(store, gatehouse_app::clock::now())?;
            if json {
                print_json(&grants);
            } else if grants.is_empty() {
                note!("no grants for a while: every trusted scope is for good");
            } else {
                for g in grants {
                    let state = if g.ended { "ended" } else { "until" };
                    say!("{}  {}  {}  {state} {}", g.public_key, g.name, g.scope, g.until);
                }
            }
        }
        TrustCmd::Remove { key } => {
            match gatehouse_app::trust::remove(store, &key, chrono::Utc::now()) {
                Err(ConsentError::Gone) => return Err(CommandError::new(gatehouse_app::Code::NotFound, format!("{key} is not in the trust registry"))),
                r => r?,
            }
            note!("removed {key} (and revoked its UAMP tokens)");
        }
        TrustCmd::Revoke { key, reason } => {
            let key = check_key(&key)?;
            let new = gatehouse_app::trust::revoke(store, &key, &reason, chrono::Utc::now())?;
            note!("{} {key}: its envelopes are refused with SENDER_REVOKED", if new { "revoked" } else { "already revoked" });
        }
        TrustCmd::Unrevoke { key } => {
            if !gatehouse_app::trust::unrevoke(store, &check_key(&key)?, chrono::Utc::now())? {
                return Err(invalid(format!("{key} is not revoked")));
            }
            note!("{key} is no longer revoked");
        }
        TrustCmd::Revoked { json } => {
            let list = gatehouse_app::trust::revoked(store)?;
            if json {
                print_json(&list);
            } else if list.is_empty() {
                note!("no revoked keys");
            }
            for r in list.iter().filter(|_| !json) {
                say!("{}  revoked {}  {}", r.public_key, r.revoked_at, r.reason);
            }
        }
    }
    Ok(())
}

/// `gatehouse ask-new-scopes [on|off]`: shows the rule, or sets it.
pub fn ask_new_scopes(ctx: &gatehouse_app::Context, set: Option<&str>) -> Result<(), CommandError> {
    let ask = match set {
        Some(v) => gatehouse_app::settings::set_ask_new_scopes(ctx, v == "on")?,
        None => gatehouse_app::settings::ask_new_scopes(ctx)?,
    };
    say!("{}", if ask { "on: someone you trust, writing about something new, waits for you" } else { "off: it is refused without asking" });
    Ok(())
}
