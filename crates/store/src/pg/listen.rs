//! LISTEN on a connection of its own: what other nodes NOTIFY reaches this node's callback,
//! the connection made again (and the callback told, as something may have changed while
//! it was down) whenever it is lost.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use super::tls::Tls;

/// Drives `connection`, passing each notification on until it ends.
async fn drive<S, T>(mut connection: tokio_postgres::Connection<S, T>, on: Arc<dyn Fn() + Send + Sync>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    while let Some(m) = messages.next().await {
        match m {
            Ok(AsyncMessage::Notification(_)) => on(),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "the connection listening for other nodes' changes ended");
                break;
            }
        }
    }
}

/// Listens on `channel` for as long as the runtime runs.
pub(crate) async fn listen(config: tokio_postgres::Config, tls: Tls, channel: &'static str, on: Arc<dyn Fn() + Send + Sync>) {
    loop {
        let connected = match &tls {
            Tls::Off => config.connect(tokio_postgres::NoTls).await.map(|(c, conn)| (c, tokio::spawn(drive(conn, on.clone())))),
            Tls::On(make) => config.connect(make.clone()).await.map(|(c, conn)| (c, tokio::spawn(drive(conn, on.clone())))),
        };
        match connected {
            Ok((client, driven)) => match client.batch_execute(&format!("LISTEN {channel}")).await {
                Ok(()) => {
                    // Whatever changed while no one listened.
                    on();
                    let _ = driven.await;
                }
                Err(e) => tracing::warn!(error = %super::message(&e), "LISTEN failed"),
            },
            Err(e) => tracing::debug!(error = %super::message(&e), "cannot listen for other nodes' changes yet"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
