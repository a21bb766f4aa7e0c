//! "What waits changed": a signal, not a list. Who shows what waits (an approver's page,
//! a window) reads the list again when it comes. On a team's gate the signal crosses nodes
//! through PostgreSQL (NOTIFY, sent with no payload when the change commits elsewhere;
//! LISTEN on a connection of each node's own), so a knock at one node reaches a phone
//! following another.

use std::sync::Arc;

use crate::open::Engine;
use crate::sql::args;
use crate::Store;

const CHANNEL: &str = "gatehouse_waiting";

impl Store {
    /// Says what waits changed: to this process's followers, and to every node's.
    pub fn waiting_changed(&self) {
        let _ = self.waiting.send(());
        if let Engine::Pg(pg) = &self.engine {
            if let Err(e) = pg.with(|c| c.execute(&format!("SELECT pg_notify('{CHANNEL}', '')"), args![])) {
                tracing::warn!(error = %e, "could not tell the other nodes that what waits changed");
            }
        }
    }

    /// A follower of [`Store::waiting_changed`], here and (PostgreSQL) at every node. A
    /// follower that lags behind gets `Lagged`: it reads the list again like for a signal.
    pub fn follow_waiting(&self) -> tokio::sync::broadcast::Receiver<()> {
        if let Engine::Pg(pg) = &self.engine {
            self.listening.call_once(|| {
                let tx = self.waiting.clone();
                pg.listen(
                    CHANNEL,
                    Arc::new(move || {
                        let _ = tx.send(());
                    }),
                );
            });
        }
        self.waiting.subscribe()
    }
}
