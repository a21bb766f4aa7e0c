//! The user's rules. A rule names an agent (its id, or `*`), a method, a tool (its id, or
//! `*`), an optional condition on an argument, and an action. The most specific matching
//! rule decides: agent before `*`, tool before `*`, with a condition before without,
//! method before `*`; among equals, the newest. No rule → ask the user.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::step::Step;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Deny,
    Ask,
    /// Redact `Rule::redact` from the step's text and string arguments, then allow.
    Modify,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Ask => "ask",
            Action::Modify => "modify",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Equals,
    NotEquals,
    Contains,
    NotContains,
    EndsWith,
    NotEndsWith,
    Matches,
}

/// A test on one tool argument (as text; numbers and booleans by their JSON form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Condition {
    pub argument: String,
    pub op: Op,
    pub value: String,
}

impl Condition {
    pub fn holds(&self, step: &Step) -> bool {
        let Some(v) = step.argument(&self.argument) else {
            // An absent argument is "not equal to / not containing" anything.
            return matches!(self.op, Op::NotEquals | Op::NotContains | Op::NotEndsWith);
        };
        let values: Vec<String> = match v {
            Value::Array(a) => a.iter().map(text).collect(),
            other => vec![text(other)],
        };
        let (lc, want) = (|s: &str| s.to_lowercase(), self.value.to_lowercase());
        // For a list (several recipients), a negative test holds if any item fails the
        // positive one: one address outside the domain is enough to ask.
        match self.op {
            Op::Equals => values.iter().any(|x| lc(x) == want),
            Op::NotEquals => values.iter().any(|x| lc(x) != want),
            Op::Contains => values.iter().any(|x| lc(x).contains(&want)),
            Op::NotContains => values.iter().any(|x| !lc(x).contains(&want)),
            Op::EndsWith => values.iter().any(|x| lc(x).ends_with(&want)),
            Op::NotEndsWith => values.iter().any(|x| !lc(x).ends_with(&want)),
            Op::Matches => Regex::new(&self.value).is_ok_and(|r| values.iter().any(|x| r.is_match(x))),
        }
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub id: i64,
    /// An agent id, `provider:<name>` for every agent of a provider, or `*`.
    pub agent: String,
    /// A method (`steps/toolCallRequest`…), or `*`.
    pub method: String,
    /// A tool id, or `*`.
    pub tool: String,
    pub condition: Option<Condition>,
    pub action: Action,
    /// The pattern (a regular expression) a `modify` rule redacts.
    pub redact: Option<String>,
    /// Why, in the user's words; sent back as the decision's message.
    pub note: Option<String>,
}

impl Rule {
    pub fn matches(&self, step: &Step) -> bool {
        let agent = match self.agent.strip_prefix("provider:") {
            // Every agent of one provider (`provider:Acme`).
            Some(p) => step.provider.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(p.trim())),
            None => self.agent == "*" || step.agent_id.as_deref() == Some(self.agent.as_str()),
        };
        agent
            && (self.method == "*" || self.method == step.method)
            && (self.tool == "*" || step.tool_id.as_deref() == Some(self.tool.as_str()))
            && self.condition.as_ref().is_none_or(|c| c.holds(step))
    }

    fn specificity(&self) -> (bool, bool, bool, bool, i64) {
        // A named tool already implies its method, so a condition outranks the method.
        (self.agent != "*", self.tool != "*", self.condition.is_some(), self.method != "*", self.id)
    }

    /// Checks what the user typed: a usable pattern for modify, a usable regex condition.
    pub fn validate(&self) -> Result<(), String> {
        if self.action == Action::Modify {
            let p = self.redact.as_deref().filter(|p| !p.is_empty()).ok_or("a modify rule needs a pattern to redact")?;
            Regex::new(p).map_err(|e| format!("the pattern to redact is not a regular expression: {e}"))?;
        }
        if let Some(c) = &self.condition {
            if c.argument.trim().is_empty() {
                return Err("a condition names an argument".into());
            }
            if c.op == Op::Matches {
                Regex::new(&c.value).map_err(|e| format!("the condition's pattern is not a regular expression: {e}"))?;
            }
        }
        Ok(())
    }
}

/// The rule that decides `step`, if any.
pub fn decide<'a>(rules: &'a [Rule], step: &Step) -> Option<&'a Rule> {
    rules.iter().filter(|r| r.matches(step)).max_by_key(|r| r.specificity())
}
