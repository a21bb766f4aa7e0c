//! Bodies strangers send to our listeners, read fairly and within bounds (answers to our
//! own requests are read by gatehouse-http).
//!
//! Memory for bodies is a budget shared by every connection. A body is charged for the
//! bytes that have actually arrived, as they arrive, so a slow upload holds only what it
//! sent (charging the largest possible envelope up front let 26 slow chunked uploads make
//! a 7-byte submission wait half a minute). Small bodies (a declared length of at most
//! [`SMALL_BODY`], which is every ordinary envelope) draw on a pool of their own that large
//! uploads cannot touch, so no number of large or slow uploads starves them. Every body
//! must arrive whole within [`BODY_TIMEOUT`].

use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body_util::BodyExt as _;
use tokio::sync::{Semaphore, SemaphorePermit};

/// A body that has not fully arrived within this time is refused (slow senders must not
/// hold a connection and a buffer forever).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Bodies declared at most this long are small.
pub const SMALL_BODY: usize = 64 * 1024;
/// Memory, in bytes, for small bodies being read at once.
pub const SMALL_BUDGET: usize = 32 * 1024 * 1024;
/// Memory, in bytes, for every other body being read at once.
pub const LARGE_BUDGET: usize = 256 * 1024 * 1024;

// Permits are KiB.
static SMALL: Semaphore = Semaphore::const_new(SMALL_BUDGET / 1024);
static LARGE: Semaphore = Semaphore::const_new(LARGE_BUDGET / 1024);

#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the body did not arrive within {} s", BODY_TIMEOUT.as_secs())]
    Timeout,
    #[error("could not read the body: {0}")]
    Read(String),
}

/// A body read whole, with the budget it holds (released when dropped).
pub struct Read {
    pub bytes: Bytes,
    _held: Option<SemaphorePermit<'static>>,
}

/// Reads `body` (whose `Content-Length` was `declared`) to at most `max` bytes.
pub async fn read(body: Body, declared: Option<usize>, max: usize) -> Result<Read, BodyError> {
    if let Some(n) = declared.filter(|n| *n > max) {
        return Err(BodyError::TooLarge(n.min(max)));
    }
    match tokio::time::timeout(BODY_TIMEOUT, read_charged(body, declared, max)).await {
        Ok(r) => r,
        Err(_) => Err(BodyError::Timeout),
    }
}

async fn read_charged(mut body: Body, declared: Option<usize>, max: usize) -> Result<Read, BodyError> {
    let kib = |n: usize| n.div_ceil(1024).max(1) as u32;
    // A small body's declared size is all it may send: reserved at once from its own pool.
    let small = declared.is_some_and(|n| n <= SMALL_BODY);
    let (pool, limit) = match declared {
        Some(n) if small => (&SMALL, n),
        _ => (&LARGE, max),
    };
    let mut held: Option<SemaphorePermit<'static>> = None;
    let mut charged = 0u32;
    if small {
        held = Some(pool.acquire_many(kib(limit)).await.expect("the semaphore is never closed"));
        charged = kib(limit);
    }
    let mut out = Vec::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        let Ok(data) = frame.into_data() else { continue };
        if out.len() + data.len() > limit {
            return Err(BodyError::TooLarge(limit));
        }
        let need = kib(out.len() + data.len());
        if need > charged {
            let more = pool.acquire_many(need - charged).await.expect("the semaphore is never closed");
            match &mut held {
                Some(h) => h.merge(more),
                None => held = Some(more),
            }
            charged = need;
        }
        out.extend_from_slice(&data);
    }
    Ok(Read { bytes: Bytes::from(out), _held: held })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that sends `first` and then nothing until dropped.
    fn stalled(first: usize) -> Body {
        let s = futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(vec![b' '; first])) }).chain(futures_util::stream::pending());
        Body::from_stream(s)
    }

    use futures_util::StreamExt as _;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_large_uploads_hold_only_what_they_sent_and_never_starve_small_ones() {
        // Many more slow uploads of unknown length than the large budget has room for
        // at the maximum size, each having sent 64 KiB.
        let mut slow = Vec::new();
        for _ in 0..(LARGE_BUDGET / (10 << 20)) * 2 {
            slow.push(tokio::spawn(read(stalled(64 * 1024), None, 10 << 20)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t = std::time::Instant::now();
        let r = read(Body::from("{\"a\":1}"), Some(7), 10 << 20).await.unwrap();
        assert_eq!(&r.bytes[..], b"{\"a\":1}");
        // And an undeclared one too: it draws on what the slow ones did not send.
        let r = read(Body::from(vec![b'x'; 100_000]), None, 10 << 20).await.unwrap();
        assert_eq!(r.bytes.len(), 100_000);
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        for s in slow {
            s.abort();
        }
        assert!(matches!(read(Body::from(vec![0u8; 2048]), Some(2048), 1024).await, Err(BodyError::TooLarge(1024))));
        assert!(matches!(read(Body::from(vec![0u8; 2048]), None, 1024).await, Err(BodyError::TooLarge(1024))));
    }
}
