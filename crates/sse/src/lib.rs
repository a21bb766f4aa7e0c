//! Server-sent events (the `text/event-stream` format) read from a peer's byte stream.
//!
//! Every SSE stream Gatehouse reads comes from someone else (a swarm, a UAMP peer, a model
//! server), so the reader is bounded: it looks at each received byte once (a line split
//! across many chunks is not searched again from its start), and an event or a line
//! longer than the caller's bound ends the stream with [`SseError::TooLarge`] instead of
//! growing a buffer without end.
//!
//! Lines end in `\n` or `\r\n`. Fields as in the HTML standard: `data` lines are joined by
//! `\n`, `event` names the event, `id` is kept, `retry` and comments are ignored, and an
//! event is dispatched at a blank line when it has data.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice, clippy::arithmetic_side_effects, clippy::indexing_slicing))]

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `event` field; empty means the default type, "message".
    pub event: String,
    pub data: String,
    pub id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("an event of more than {0} bytes arrived; the stream was dropped")]
    TooLarge(usize),
    #[error("the stream is not UTF-8 text")]
    NotText,
    #[error("reading the stream failed: {0}")]
    Transport(String),
}

/// Reads events from `body`; an event (its data and fields) may take at most `max_event` bytes.
pub fn events<S, E>(body: S, max_event: usize) -> impl Stream<Item = Result<Event, SseError>>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let state =
        Reader { body: Box::pin(body), max_event, buf: Vec::new(), start: 0, scanned: 0, pending: Event::default(), size: 0, has_data: false, done: false };
    futures_util::stream::unfold(state, |mut r| async move {
        let item = r.next_event().await?;
        Some((item, r))
    })
}

struct Reader<S> {
    body: std::pin::Pin<Box<S>>,
    max_event: usize,
    /// Bytes received; those before `start` were taken as whole lines.
    buf: Vec<u8>,
    start: usize,
    /// How much of `buf` is known to hold no line end.
    scanned: usize,
    pending: Event,
    /// Bytes the pending event holds.
    size: usize,
    has_data: bool,
    done: bool,
}

impl<S, E> Reader<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    async fn next_event(&mut self) -> Option<Result<Event, SseError>> {
        loop {
            // start <= scanned <= buf.len() holds throughout; every index is still checked.
            while let Some(at) = self.buf.get(self.scanned..).unwrap_or_default().iter().position(|b| *b == b'\n').map(|i| i.saturating_add(self.scanned)) {
                let mut end = at;
                if end > self.start && end.checked_sub(1).and_then(|i| self.buf.get(i)) == Some(&b'\r') {
                    end = end.saturating_sub(1);
                }
                let (from, line) = (self.start, std::mem::take(&mut self.buf));
                let result = self.line(line.get(from..end).unwrap_or_default());
                self.buf = line;
                self.start = at.saturating_add(1);
                self.scanned = self.start;
                match result {
                    Ok(Some(ev)) => return Some(Ok(ev)),
                    Ok(None) => {}
                    Err(e) => return self.fail(e),
                }
            }
            self.scanned = self.buf.len();
            if self.buf.len().saturating_sub(self.start) > self.max_event {
                return self.fail(SseError::TooLarge(self.max_event));
            }
            if self.done {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => {
                    // Lines already taken go once per chunk, not once per line.
                    self.buf.drain(..self.start);
                    self.scanned = self.scanned.saturating_sub(self.start);
                    self.start = 0;
                    self.buf.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return self.fail(SseError::Transport(e.to_string())),
                None => {
                    // A last event without its blank line is not dispatched (as in browsers).
                    self.done = true;
                    return None;
                }
            }
        }
    }

    fn fail(&mut self, e: SseError) -> Option<Result<Event, SseError>> {
        self.done = true;
        self.buf.clear();
        (self.start, self.scanned) = (0, 0);
        Some(Err(e))
    }

    /// Takes one line; an event when it was the blank line ending one with data.
    fn line(&mut self, line: &[u8]) -> Result<Option<Event>, SseError> {
        if line.is_empty() {
            let ev = std::mem::take(&mut self.pending);
            let had = std::mem::replace(&mut self.has_data, false);
            self.size = 0;
            return Ok(had.then_some(ev));
        }
        if line.first() == Some(&b':') {
            return Ok(None);
        }
        self.size = self.size.saturating_add(line.len());
        if self.size > self.max_event {
            return Err(SseError::TooLarge(self.max_event));
        }
        let text = std::str::from_utf8(line).map_err(|_| SseError::NotText)?;
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.pending.data.push('\n');
                }
                self.pending.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.pending.event = value.to_string(),
            "id" if !value.contains('\0') => self.pending.id = value.to_string(),
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&[u8]]) -> impl Stream<Item = Result<Bytes, String>> + Unpin {
        futures_util::stream::iter(parts.iter().map(|p| Ok(Bytes::copy_from_slice(p))).collect::<Vec<_>>())
    }

    async fn all(parts: &[&[u8]], max: usize) -> Vec<Result<Event, String>> {
        events(chunks(parts), max).map(|r| r.map_err(|e| e.to_string())).collect().await
    }

    #[tokio::test]
    async fn events_split_anywhere_read_as_sent() {
        let got = all(&[b"event: task_complete\r\nda", b"ta: {\"a\":", b"1}\ndata: x\n", b"\n: ping\n\nid: 7\ndata: two\n\n"], 1024).await;
        assert_eq!(got.len(), 2);
        let first = got[0].as_ref().unwrap();
        assert_eq!((first.event.as_str(), first.data.as_str()), ("task_complete", "{\"a\":1}\nx"));
        let second = got[1].as_ref().unwrap();
        assert_eq!((second.id.as_str(), second.data.as_str()), ("7", "two"));
    }

    #[tokio::test]
    async fn an_endless_line_or_event_ends_the_stream_at_the_bound() {
        let big = vec![b'x'; 4096];
        let mut parts: Vec<&[u8]> = vec![b"data: "];
        parts.extend(std::iter::repeat_n(&big[..], 100));
        let got = all(&parts, 64 * 1024).await;
        assert_eq!(got.len(), 1);
        assert!(got[0].as_ref().unwrap_err().contains("more than 65536 bytes"), "{got:?}");
        // Many small data lines count together.
        let line = b"data: 0123456789\n";
        let parts: Vec<&[u8]> = std::iter::repeat_n(&line[..], 1000).collect();
        let got = all(&parts, 1024).await;
        assert!(got[0].as_ref().is_err_and(|e| e.contains("more than 1024")), "{got:?}");
    }

    #[tokio::test]
    async fn a_long_line_in_one_byte_chunks_is_read_in_linear_time() {
        // 200,000 one-byte chunks: rescanning the line from its start on every chunk
        // would take 2 * 10^10 steps.
        let mut bytes = b"data: ".to_vec();
        bytes.extend(std::iter::repeat_n(b'y', 200_000));
        bytes.extend_from_slice(b"\n\n");
        let parts: Vec<&[u8]> = bytes.chunks(1).collect();
        let started = std::time::Instant::now();
        let got = all(&parts, 1 << 20).await;
        assert_eq!(got[0].as_ref().unwrap().data.len(), 200_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    }
}
