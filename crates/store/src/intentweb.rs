//! IntentWeb sites, conversations, messages and accepted nonces. Plain rows: the
//! intentweb crate reads and checks, this keeps what it found.

use crate::sql::{args, Optional, Row};
use serde::Serialize;

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct IwSiteRow {
    pub origin: String,
    pub company: String,
    /// The manifest as read (JSON of the checked fields).
    pub manifest: serde_json::Value,
    pub yaml: String,
    pub last_updated: String,
    pub fetched_at: String,
    /// The did:key the user pinned for this site, if any.
    pub site_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct IwConversationRow {
    pub interaction_id: String,
    pub origin: String,
    pub endpoint: String,
    pub capability: Option<String>,
    pub initial: String,
    pub query_hash: String,
    /// open (the site asked something), completed, failed
    pub state: String,
    pub status: Option<String>,
    pub external_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct IwMessageRow {
    pub row: i64,
    pub interaction_id: String,
    /// out (sent by Gatehouse) or in
    pub direction: String,
    pub flow_type: String,
    pub message: String,
    /// The message rendered to sanitized HTML (answers only).
    pub html: Option<String>,
    pub envelope: serde_json::Value,
    /// What checking its attribution found.
    pub verdict: Option<serde_json::Value>,
    /// Why it was refused or what to look at.
    pub warning: Option<String>,
    /// Refused answers are kept (and shown) but change nothing.
    pub accepted: bool,
    pub at: String,
}

fn site_row(r: &Row<'_>) -> Result<IwSiteRow> {
    let m: String = r.get(2)?;
    Ok(IwSiteRow {
        origin: r.get(0)?,
        company: r.get(1)?,
        manifest: serde_json::from_str(&m).unwrap_or_default(),
        yaml: r.get(3)?,
        last_updated: r.get(4)?,
        fetched_at: r.get(5)?,
        site_key: r.get(6)?,
    })
}

fn conv_row(r: &Row<'_>) -> Result<IwConversationRow> {
    Ok(IwConversationRow {
        interaction_id: r.get(0)?,
        origin: r.get(1)?,
        endpoint: r.get(2)?,
        capability: r.get(3)?,
        initial: r.get(4)?,
        query_hash: r.get(5)?,
        state: r.get(6)?,
        status: r.get(7)?,
        external_id: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

fn message_row(r: &Row<'_>) -> Result<IwMessageRow> {
    let env: String = r.get(6)?;
    let verdict: Option<String> = r.get(7)?;
    Ok(IwMessageRow {
        row: r.get(0)?,
        interaction_id: r.get(1)?,
        direction: r.get(2)?,
        flow_type: r.get(3)?,
        message: r.get(4)?,
        html: r.get(5)?,
        envelope: serde_json::from_str(&env).unwrap_or_default(),
        verdict: verdict.and_then(|v| serde_json::from_str(&v).ok()),
        warning: r.get(8)?,
        accepted: r.get(9)?,
        at: r.get(10)?,
    })
}

const SITE: &str = "SELECT origin, company, manifest, yaml, last_updated, fetched_at, site_key FROM iw_sites";
const CONV: &str =
    "SELECT interaction_id, origin, endpoint, capability, initial, query_hash, state, status, external_id, created_at, updated_at FROM iw_conversations";
const MSG: &str = "SELECT row, interaction_id, direction, flow_type, message, html, envelope, verdict, warning, accepted, at FROM iw_messages";

impl Store {
    /// Keeps a site's manifest (a refresh replaces it; the pinned key stays).
    pub fn iw_site_put(&self, s: &IwSiteRow) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO iw_sites (origin, company, manifest, yaml, last_updated, fetched_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(origin) DO UPDATE SET company = ?2, manifest = ?3, yaml = ?4, last_updated = ?5, fetched_at = ?6",
            args![s.origin, s.company, s.manifest.to_string(), s.yaml, s.last_updated, s.fetched_at],
        )?;
        Ok(())
    }

    pub fn iw_site_pin(&self, origin: &str, key: Option<&str>) -> Result<()> {
        self.conn()?.execute("UPDATE iw_sites SET site_key = ?2 WHERE origin = ?1", args![origin, key])?;
        Ok(())
    }

    pub fn iw_sites(&self) -> Result<Vec<IwSiteRow>> {
        self.read(|c| c.prepare_cached(&format!("{SITE} ORDER BY company"))?.query_map(args![], site_row)?.collect::<Result<Vec<_>>>())
    }

    pub fn iw_site(&self, origin: &str) -> Result<Option<IwSiteRow>> {
        self.read(|c| c.query_row(&format!("{SITE} WHERE origin = ?1"), args![origin], site_row).optional())
    }

    pub fn iw_site_remove(&self, origin: &str) -> Result<bool> {
        Ok(self.conn()?.execute("DELETE FROM iw_sites WHERE origin = ?1", args![origin])? > 0)
    }

    pub fn iw_conversation_open(&self, c: &IwConversationRow) -> Result<()> {
        self.conn()?.execute(
            "INSERT INTO iw_conversations (interaction_id, origin, endpoint, capability, initial, query_hash, state, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
            args![c.interaction_id, c.origin, c.endpoint, c.capability, c.initial, c.query_hash, c.state, c.created_at],
        )?;
        Ok(())
    }

    pub fn iw_conversation_update(&self, interaction_id: &str, state: &str, status: Option<&str>, external_id: Option<&str>, at: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE iw_conversations SET state = ?2, status = coalesce(?3, status), external_id = coalesce(?4, external_id), updated_at = ?5 WHERE interaction_id = ?1",
            args![interaction_id, state, status, external_id, at],
        )?;
        Ok(())
    }

    pub fn iw_conversation(&self, interaction_id: &str) -> Result<Option<IwConversationRow>> {
        self.read(|c| c.query_row(&format!("{CONV} WHERE interaction_id = ?1"), args![interaction_id], conv_row).optional())
    }

    /// Conversations, newest first.
    pub fn iw_conversations(&self, limit: usize) -> Result<Vec<IwConversationRow>> {
        self.read(|c| {
            c.prepare_cached(&format!("{CONV} ORDER BY updated_at DESC, interaction_id LIMIT ?1"))?
                .query_map(args![limit as i64], conv_row)?
                .collect::<Result<Vec<_>>>()
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn iw_message_add(
        &self,
        interaction_id: &str,
        direction: &str,
        flow_type: &str,
        message: &str,
        html: Option<&str>,
        envelope: &serde_json::Value,
        verdict: Option<&serde_json::Value>,
        warning: Option<&str>,
        accepted: bool,
        at: &str,
    ) -> Result<i64> {
        let conn = self.conn()?;
        let inserted_id = conn.query_row(
            "INSERT INTO iw_messages (interaction_id, direction, flow_type, message, html, envelope, verdict, warning, accepted, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING row",
            args![interaction_id, direction, flow_type, message, html, envelope.to_string(), verdict.map(|v| v.to_string()), warning, accepted, at],
            |r| r.get::<i64>(0),
        )?;
        let row = inserted_id;
        conn.execute("UPDATE iw_conversations SET updated_at = ?2 WHERE interaction_id = ?1", args![interaction_id, at])?;
        Ok(row)
    }

    pub fn iw_messages(&self, interaction_id: &str) -> Result<Vec<IwMessageRow>> {
        self.read(|c| {
            c.prepare_cached(&format!("{MSG} WHERE interaction_id = ?1 ORDER BY row"))?
                .query_map(args![interaction_id], message_row)?
                .collect::<Result<Vec<_>>>()
        })
    }

    /// Records a site's nonce; false when it was accepted before (a replay).
    pub fn iw_nonce_record(&self, origin: &str, nonce: &str) -> Result<bool> {
        Ok(self.conn()?.execute("INSERT INTO iw_nonces (origin, nonce) VALUES (?1, ?2) ON CONFLICT DO NOTHING", args![origin, nonce])? > 0)
    }

    pub fn iw_nonce_seen(&self, origin: &str, nonce: &str) -> Result<bool> {
        self.read(|c| crate::replay::iw_nonce_used(c, origin, nonce))
    }
}
