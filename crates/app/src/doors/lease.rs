//! Work that one node of a team's gate does for all (reading a mail account): run only
//! while this node holds the work's lease in the database, renewed as it runs, given up
//! when the node stops, and taken over by another node once a dead node's lease runs out.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_store::Store;

/// How long a lease lasts without renewal: how long a dead node's work waits for
/// another node to take it over.
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// How often the holder renews its lease, and a waiting node asks for it.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Runs `work` whenever this node holds the lease `name`, until `stop` resolves. Work
/// whose lease is lost (the database could not be reached to renew it, and another node
/// may have taken it) is stopped and waits for the lease again.
pub async fn while_held<W, F>(store: Arc<Store>, name: String, mut work: W, stop: impl Future<Output = ()>)
where
    W: FnMut() -> F,
    F: Future<Output = ()>,
{
    tokio::pin!(stop);
    loop {
        while !take(&store, &name).await {
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(RENEW_EVERY) => {}
            }
        }
        let kept = async {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                if !take(&store, &name).await {
                    return;
                }
            }
        };
        tokio::select! {
            _ = &mut stop => {
                let (s, n) = (store.clone(), name.clone());
                let _ = tokio::task::spawn_blocking(move || s.release_lease(&n)).await;
                return;
            }
            _ = work() => return,
            _ = kept => tracing::warn!(lease = %name, "lost the lease; waiting to take it again"),
        }
    }
}

async fn take(store: &Arc<Store>, name: &str) -> bool {
    let (s, n) = (store.clone(), name.to_string());
    let now_ms = chrono::Utc::now().timestamp_millis();
    match tokio::task::spawn_blocking(move || s.take_lease(&n, now_ms, LEASE_TTL.as_millis() as i64)).await {
        Ok(Ok(held)) => held,
        Ok(Err(e)) => {
            tracing::warn!(lease = %name, error = %e, "cannot take or renew a lease");
            false
        }
        Err(_) => false,
    }
}
