//! The bench of a team's gate: several `gatehouse serve` nodes on one PostgreSQL
//! database, and what the database did for them (its CPU, its commits and statements
//! per envelope).

use crate::terminal::say;
use std::path::Path;

use super::server::{clock_ticks, Server};

/// Starts `n` nodes: the first on `data` (which made the identity), the others on data
/// dirs holding a copy of its key file, as a team's operator sets them up.
pub(super) fn start_nodes(tmp: &Path, data: &Path, n: usize, database: Option<&str>, watch: Option<&Path>) -> Result<Vec<Server>, String> {
    let mut servers = vec![Server::start(data, watch, database)?];
    for i in 1..n {
        let dir = tmp.join(format!("node-{i}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for f in ["identity.json", "identity.key"] {
            std::fs::copy(data.join(f), dir.join(f)).map_err(|e| format!("cannot copy the key file to node {i}: {e}"))?;
        }
        servers.push(Server::start(&dir, None, database)?);
    }
    Ok(servers)
}

/// CPU seconds used so far by every PostgreSQL process on this machine (the server a
/// team's bench runs against is on it).
pub(super) fn postgres_cpu_seconds() -> f64 {
    let Ok(procs) = std::fs::read_dir("/proc") else { return 0.0 };
    let ticks: f64 = procs
        .flatten()
        .filter_map(|p| std::fs::read_to_string(p.path().join("stat")).ok())
        .filter_map(|stat| {
            // pid (comm) state ppid ... utime stime: the name is in parentheses.
            let (head, rest) = stat.rsplit_once(')')?;
            if !head.ends_with("(postgres") {
                return None;
            }
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
        })
        .sum();
    ticks / clock_ticks()
}

/// The team's database (opened as the first node's data dir opens it), asked for its
/// own counters.
pub(super) struct Database(gatehouse_app::Context);

/// Commits, and statements when PostgreSQL counts them.
pub(super) type Counters = (i64, Option<i64>);

impl Database {
    pub(super) fn open(data: &Path, url: &str) -> Result<Database, String> {
        gatehouse_app::Context::open_at(data.to_path_buf(), gatehouse_app::context::KeystoreKind::File, false, Some(url)).map(Database).map_err(|e| e.message)
    }

    pub(super) fn counters(&self) -> Counters {
        self.0.database_counters().unwrap_or_default()
    }

    pub(super) fn report(&self, (commits_before, statements_before): Counters, total: usize) {
        let (commits, statements) = self.counters();
        let per = |a: i64, b: i64| (a - b) as f64 / total as f64;
        let statements = match (statements, statements_before) {
            (Some(a), Some(b)) => format!("{:.1} statements", per(a, b)),
            _ => "statements not counted (pg_stat_statements is not loaded)".to_string(),
        };
        say!("PostgreSQL per envelope: {:.3} commits, {statements}", per(commits, commits_before));
    }
}
