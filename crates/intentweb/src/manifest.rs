//! The Intent Manifest (§2): YAML at `{origin}/intentmanifest.yaml`. Every required field
//! and every type of §2.2 is checked, and a problem is named by its path
//! (`/capabilities/1/description`), so a site's author can fix it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::FieldError;

/// Manifests larger than this are refused.
pub const MAX_MANIFEST_BYTES: usize = 512 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// Named for the window's bindings, beside UAMP's manifest (JSON and YAML carry no type name).
#[serde(rename = "IwManifest")]
pub struct Manifest {
    pub manifest_version: String,
    pub company: String,
    pub last_updated: String,
    pub about: Option<String>,
    pub schema_type: Option<String>,
    /// Address, region, service type… in natural language or structured.
    pub location: Option<Value>,
    pub capabilities: Vec<Capability>,
    pub contact: Contact,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Capability {
    pub intent: String,
    pub description: String,
    pub examples: Vec<String>,
    pub requires: Vec<String>,
    pub constraints: Vec<String>,
    pub notes: Vec<String>,
    pub operating_hours: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Contact {
    pub intent_endpoint: String,
    pub website: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    /// Other contact entries the site lists (e.g. `events_email`).
    pub other: BTreeMap<String, String>,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

struct Reader<'a> {
    o: &'a Map<String, Value>,
    at: String,
}

impl Reader<'_> {
    fn path(&self, k: &str) -> String {
        format!("{}/{k}", self.at)
    }

    fn string(&self, k: &str) -> Result<String, FieldError> {
        match self.o.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(FieldError::new(self.path(k), "is empty")),
            Some(v) => Err(FieldError::new(self.path(k), format!("must be a string, not {}", kind(v)))),
            None => Err(FieldError::new(self.path(k), "is required")),
        }
    }

    fn opt_string(&self, k: &str) -> Result<Option<String>, FieldError> {
        match self.o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(FieldError::new(self.path(k), format!("must be a string, not {}", kind(v)))),
        }
    }

    fn strings(&self, k: &str) -> Result<Vec<String>, FieldError> {
        match self.o.get(k) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    v => Err(FieldError::new(format!("{}/{i}", self.path(k)), format!("must be a string, not {}", kind(v)))),
                })
                .collect(),
            Some(v) => Err(FieldError::new(self.path(k), format!("must be a list of strings, not {}", kind(v)))),
        }
    }
}

fn is_date(s: &str) -> bool {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
        || chrono::DateTime::parse_from_rfc3339(s).is_ok()
        || chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").is_ok()
}

/// Whether `url` may carry intents: https anywhere, http only to this machine.
pub fn endpoint_allowed(url: &str) -> Result<reqwest::Url, String> {
    let u = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let host = u.host_str().unwrap_or("");
    let loopback = gatehouse_http::is_loopback(host);
    match u.scheme() {
        "https" => Ok(u),
        "http" if loopback => Ok(u),
        "http" => Err(format!("{url} is plain http; IntentWeb requires https (plain http only on this machine)")),
        s => Err(format!("{url}: {s}:// is not an intent endpoint")),
    }
}

impl Manifest {
    /// Reads and checks a manifest's YAML text.
    pub fn parse(yaml: &str) -> Result<Manifest, FieldError> {
        if yaml.len() > MAX_MANIFEST_BYTES {
            return Err(FieldError::new("/", format!("the manifest is larger than {MAX_MANIFEST_BYTES} bytes")));
        }
        let v: Value = crate::bounded_yaml::from_str(yaml).map_err(|e| {
            let at = e.location().map(|l| format!(" (line {}, column {})", l.line(), l.column())).unwrap_or_default();
            FieldError::new("/", format!("not valid YAML{at}: {e}"))
        })?;
        Self::from_value(&v)
    }

    pub fn from_value(v: &Value) -> Result<Manifest, FieldError> {
        let o = v.as_object().ok_or_else(|| FieldError::new("/", format!("the manifest must be a mapping, not {}", kind(v))))?;
        let r = Reader { o, at: String::new() };
        let manifest_version = r.string("manifest_version")?;
        let company = r.string("company")?;
        let last_updated = r.string("last_updated")?;
        if !is_date(&last_updated) {
            return Err(FieldError::new("/last_updated", format!("{last_updated:?} is not an ISO 8601 date or date-time")));
        }
        let caps = match o.get("capabilities") {
            Some(Value::Array(a)) if a.is_empty() => return Err(FieldError::new("/capabilities", "lists no capability")),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(FieldError::new("/capabilities", format!("must be a list, not {}", kind(v)))),
            None => return Err(FieldError::new("/capabilities", "is required")),
        };
        let mut capabilities = Vec::new();
        for (i, c) in caps.iter().enumerate() {
            let at = format!("/capabilities/{i}");
            let co = c.as_object().ok_or_else(|| FieldError::new(&at, format!("must be a mapping, not {}", kind(c))))?;
            let cr = Reader { o: co, at: at.clone() };
            let mut operating_hours = BTreeMap::new();
            match co.get("operating_hours") {
                None | Some(Value::Null) => {}
                Some(Value::Object(h)) => {
                    for (k, v) in h {
                        match v {
                            Value::String(s) => {
                                operating_hours.insert(k.clone(), s.clone());
                            }
                            v => return Err(FieldError::new(format!("{at}/operating_hours/{k}"), format!("must be a string, not {}", kind(v)))),
                        }
                    }
                }
                Some(v) => return Err(FieldError::new(format!("{at}/operating_hours"), format!("must be a mapping, not {}", kind(v)))),
            }
            capabilities.push(Capability {
                intent: cr.string("intent")?,
                description: cr.string("description")?,
                examples: cr.strings("examples")?,
                requires: cr.strings("requires")?,
                constraints: cr.strings("constraints")?,
                notes: cr.strings("notes")?,
                operating_hours,
            });
        }
        let contact = match o.get("contact") {
            Some(Value::Object(c)) => c,
            Some(v) => return Err(FieldError::new("/contact", format!("must be a mapping, not {}", kind(v)))),
            None => return Err(FieldError::new("/contact", "is required")),
        };
        let cr = Reader { o: contact, at: "/contact".into() };
        let intent_endpoint = cr.string("intent_endpoint")?;
        endpoint_allowed(&intent_endpoint).map_err(|m| FieldError::new("/contact/intent_endpoint", m))?;
        let mut other = BTreeMap::new();
        for (k, v) in contact {
            if !matches!(k.as_str(), "intent_endpoint" | "website" | "phone" | "email") {
                if let Value::String(s) = v {
                    other.insert(k.clone(), s.clone());
                }
            }
        }
        Ok(Manifest {
            manifest_version,
            company,
            last_updated,
            about: r.opt_string("about")?,
            schema_type: r.opt_string("schema_type")?,
            location: o.get("location").cloned().filter(|l| !l.is_null()),
            capabilities,
            contact: Contact { intent_endpoint, website: cr.opt_string("website")?, phone: cr.opt_string("phone")?, email: cr.opt_string("email")?, other },
        })
    }
}
