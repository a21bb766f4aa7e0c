//! What EPP reads of an envelope it kept, for the window and the CLI: its v1.1 fields in
//! plain words (integrity, capabilities, attestations, payment or stake fields shown but
//! never acted on) and the keys it names as others' (a delegation, attestations).

use gatehouse_epp::v11::{plain_words, Extensions};
use gatehouse_epp::Envelope;
use gatehouse_gate::declared::{Attested, Declared, Inert, Relation, Told};

/// Reads a kept envelope again; nothing when it no longer reads.
pub fn told(raw: &[u8]) -> Told {
    let Ok(env) = Envelope::parse(raw) else { return Told::default() };
    let ext = Extensions::read(&env).ok();
    let mut names = Vec::new();
    if let Some(d) = &env.delegation {
        names.push((d.on_behalf_of.clone(), Relation::OnBehalfOf));
    }
    for a in ext.as_ref().and_then(|x| x.provenance.as_ref()).iter().flat_map(|p| &p.entries) {
        names.push((a.identity.clone(), Relation::AttestedBy));
    }
    Told { declared: ext.filter(|x| !x.is_empty()).map(|x| declared(&x)), names }
}

fn declared(ext: &Extensions) -> Declared {
    let inert = ext
        .inert
        .iter()
        .map(|(field, v)| {
            let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            let summary = [s("amount"), s("currency")].join(" ").trim().to_string();
            let chain = s("chain");
            let summary = if chain.is_empty() { summary } else { format!("{summary} on {chain}") };
            Inert { field: field.clone(), summary, json: v.to_string() }
        })
        .collect();
    Declared {
        integrity: ext.integrity.as_ref().map(|i| i.alg.to_ascii_lowercase()),
        capabilities: ext.capabilities.as_ref().map(plain_words).unwrap_or_default(),
        provenance: ext
            .provenance
            .iter()
            .flat_map(|p| &p.entries)
            .map(|a| Attested {
                role: a.role.to_ascii_lowercase(),
                identity: a.identity.to_ascii_lowercase(),
                statement: a.statement.clone(),
                timestamp: a.timestamp.clone(),
            })
            .collect(),
        inert,
    }
}

/// The hosts a sender's trust entry lets its envelopes link to unflagged: the network
/// domains of the v1.1 capability limit the user set for it.
pub fn allowed_hosts(facts: &gatehouse_store::Facts) -> Vec<String> {
    facts
        .capabilities()
        .and_then(|c| c.allowed.get("network")?.get("domains")?.as_array().cloned())
        .map(|d| d.into_iter().filter_map(|h| h.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}
