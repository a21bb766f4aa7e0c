//! An MCP server's tools as the user let them in (`mcp_pins`, sealed: a pin decides
//! whether a tool reaches the user's AI), and what the server lists that differs from
//! them (`mcp_offers`: a proposal waiting for the user, deciding nothing). The store keeps
//! each tool as the door wrote it (its JSON and its digest); comparing is the door's.

use serde::Serialize;

use crate::seal::{judge_in, judge_row, Judged, MCP_PINS};
use crate::sql::{args, Optional};
use crate::*;

/// Tools kept as offered per server; a server that lists more has the rest dropped (a list
/// is at most 1,024 tools: `gatehouse_mcp::tools::MAX_TOOLS`).
pub const MAX_OFFERED: usize = 1024;

/// One tool as kept: pinned (let in) or offered (listed, waiting for the user).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpTool {
    /// The server's registry key.
    pub server: String,
    pub tool: String,
    /// The tool as its door wrote it (name, title, description, input schema).
    pub pin: serde_json::Value,
    pub digest: String,
    /// When it was pinned, or last listed.
    pub at: String,
    /// For an offer: the user refused this version (it stays held, without asking again).
    pub refused: bool,
}

/// What a call of one tool needs of the store, read in one snapshot ([`Store::mcp_call`]).
#[derive(Debug, Clone, PartialEq)]
pub struct McpCall {
    /// The tool as the user let it in, where its pin is as the gate sealed it.
    pub pin: Option<McpTool>,
    /// The server listed the tool otherwise since (or before it was let in).
    pub offered: bool,
    /// The name the user gave the server, where its entry is as the gate sealed it.
    pub name: Option<String>,
}

/// What a set of offered tools is known by (each tool's name and digest, the refused left
/// out): a decision on them names it, and pins them only if they are still what the user
/// saw.
pub fn offers_digest(offers: &[McpTool]) -> String {
    use sha2::{Digest, Sha256};
    let mut seen: Vec<(&str, &str)> = offers.iter().filter(|o| !o.refused).map(|o| (o.tool.as_str(), o.digest.as_str())).collect();
    seen.sort();
    format!("tools:{}", hex::encode(Sha256::digest(serde_json::to_vec(&seen).unwrap_or_default())))
}

/// A pin's id: the server's key and the tool's name (a key has no line break).
fn pin_id(server: &str, tool: &str) -> String {
    format!("{server}\n{tool}")
}

/// A pin from its sealed columns (server, tool, pin, digest, at).
fn pin_of(cols: crate::seal::Cols) -> McpTool {
    let mut cols = cols.into_iter().map(Option::unwrap_or_default);
    let mut next = || cols.next().unwrap_or_default();
    McpTool { server: next(), tool: next(), pin: serde_json::from_str(&next()).unwrap_or_default(), digest: next(), at: next(), refused: false }
}

fn tool_row(r: &crate::sql::Row<'_>) -> Result<McpTool> {
    Ok(McpTool {
        server: r.get(0)?,
        tool: r.get(1)?,
        pin: serde_json::from_str(&r.get::<String>(2)?).unwrap_or_default(),
        digest: r.get(3)?,
        at: r.get(4)?,
        refused: r.get::<i64>(5)? != 0,
    })
}

impl Store {
    /// The server's tools as the user let them in: only those sealed by the gate (a pin put
    /// in or changed outside Gatehouse is no pin: the tool is held). Only this server's
    /// rows are read and checked.
    pub fn mcp_pins(&self, server: &str) -> Result<Vec<McpTool>> {
        let server = sender_key(server);
        self.read(|c| {
            c.snapshot(|db| {
                let view = self.view(db)?;
                Ok(MCP_PINS
                    .rows_with(db, "server", &server)?
                    .into_iter()
                    .filter(|(id, cols)| judge_row(view.as_deref(), MCP_PINS, id, Some(cols)) == Judged::Sealed)
                    .map(|(_, cols)| pin_of(cols))
                    .collect())
            })
        })
    }

    /// What a call of `tool` reads, in one snapshot: the tool's pin as sealed, whether the
    /// server listed it otherwise since (or before it was let in), and the server's name.
    pub fn mcp_call(&self, server: &str, tool: &str) -> Result<McpCall> {
        let key = sender_key(server);
        let id = pin_id(&key, tool);
        self.read_warm(|c| {
            c.snapshot(|db| {
                let view = self.view(db)?;
                let pin = match judge_in(db, view.as_deref(), MCP_PINS, &id)? {
                    (Judged::Sealed, Some(cols)) => Some(pin_of(cols)),
                    _ => None,
                };
                let offered = db
                    .prepare_cached("SELECT 1 FROM mcp_offers WHERE server = ?1 AND tool = ?2 LIMIT 1")?
                    .query_row(args![key, tool], |_| Ok(()))
                    .optional()?
                    .is_some();
                let name = crate::trust::sealed_name_in(db, view.as_deref(), &key)?;
                Ok(McpCall { pin, offered, name })
            })
        })
    }

    /// What the server listed that differs from its pins, or was offered before it was let
    /// in, oldest first (every server's when `server` is none).
    pub fn mcp_offers(&self, server: Option<&str>) -> Result<Vec<McpTool>> {
        const OFFERS: &str = "SELECT server, tool, pin, digest, seen_at, refused FROM mcp_offers";
        self.read(|c| match server {
            Some(s) => c.prepare_cached(&format!("{OFFERS} WHERE server = ?1 ORDER BY seen_at, tool"))?.query_map(args![sender_key(s)], tool_row)?.collect(),
            None => c.prepare_cached(&format!("{OFFERS} ORDER BY seen_at, tool"))?.query_map(args![], tool_row)?.collect(),
        })
    }

    /// Keeps what the server lists now as offered (tool, JSON, digest), replacing an offer
    /// of another version; a version the user refused stays refused. Returns how many
    /// offers are new or changed (what the user is to be told of).
    pub fn mcp_offer(&self, server: &str, tools: &[(String, String, String)], at: &str) -> Result<usize> {
        let server = sender_key(server);
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let mut n = 0;
        for (tool, pin, digest) in tools.iter().take(MAX_OFFERED) {
            n += tx.execute(
                "INSERT INTO mcp_offers (server, tool, pin, digest, seen_at, refused) VALUES (?1, ?2, ?3, ?4, ?5, 0)
                 ON CONFLICT (server, tool) DO UPDATE SET pin = excluded.pin, digest = excluded.digest, seen_at = excluded.seen_at, refused = 0
                 WHERE mcp_offers.digest <> excluded.digest",
                args![server, tool, pin, digest, at],
            )?;
        }
        // What servers that are neither let in nor waiting offered is dropped: offers are
        // bounded by the servers the user let in and the knocks kept (`MAX_PENDING`).
        tx.execute(
            "DELETE FROM mcp_offers WHERE server <> ?1 AND server NOT IN (SELECT public_key FROM trust) AND server NOT IN (SELECT public_key FROM pending_senders)",
            args![server],
        )?;
        tx.commit()?;
        Ok(n)
    }

    /// Pins these tools as offered (sealed) and takes their offers out: the user accepted
    /// them. Only an offer whose digest is the one the user saw is pinned; returns how
    /// many were.
    pub fn mcp_accept(&self, server: &str, seen: &[(String, String)], at: &str) -> Result<usize> {
        let server = sender_key(server);
        self.sealed_write(|tx| {
            let mut n = 0;
            for (tool, digest) in seen {
                let offer =
                    tx.db().query_map("SELECT pin FROM mcp_offers WHERE server = ?1 AND tool = ?2 AND digest = ?3", args![server, tool, digest], |r| {
                        r.get::<String>(0)
                    })?;
                let Some(pin) = offer.collect::<Result<Vec<_>>>()?.into_iter().next() else { continue };
                tx.execute(
                    "INSERT INTO mcp_pins (id, server, tool, pin, digest, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (id) DO UPDATE SET pin = excluded.pin, digest = excluded.digest, at = excluded.at",
                    args![pin_id(&server, tool), server, tool, pin, digest, at],
                )?;
                tx.execute("DELETE FROM mcp_offers WHERE server = ?1 AND tool = ?2", args![server, tool])?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// Keeps an offered version held without asking again: the user refused it.
    pub fn mcp_refuse(&self, server: &str, tool: &str, digest: &str) -> Result<bool> {
        Ok(self
            .conn()?
            .execute("UPDATE mcp_offers SET refused = 1 WHERE server = ?1 AND tool = ?2 AND digest = ?3", args![sender_key(server), tool, digest])?
            > 0)
    }
}
