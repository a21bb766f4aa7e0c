//! MCP's stdio framing: one message per line. Lines are read within a bound: a line
//! longer than [`gatehouse_mcp::MAX_MESSAGE`] is skipped to its end (and told), never
//! held whole, and a side that sends bytes without ever ending a line holds at most
//! the bound. A long line is kept in pieces of [`PIECE`] bytes: a tool's 10 MB result is
//! held once, at its own size, never copied into a buffer twice its size to grow.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The size of each piece a long message is kept in.
pub const PIECE: usize = 64 * 1024;

/// What came next on a side's output.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A message (without its line end); empty lines are skipped.
    Message(Message),
    /// A line over the bound, skipped: its length.
    TooLong(usize),
}

/// One message's bytes: one piece, or for a long one, pieces of [`PIECE`] bytes each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    pieces: Vec<Vec<u8>>,
}

impl Message {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.iter().all(Vec::is_empty)
    }

    /// Its bytes in one buffer (no copy when it is one piece).
    pub fn into_vec(mut self) -> Vec<u8> {
        if self.pieces.len() <= 1 {
            return self.pieces.pop().unwrap_or_default();
        }
        self.pieces.concat()
    }

    /// Its pieces, in order.
    pub fn pieces(&self) -> &[Vec<u8>] {
        &self.pieces
    }

    #[cfg(test)]
    pub(crate) fn from_pieces(pieces: Vec<Vec<u8>>) -> Message {
        Message { pieces }
    }

    /// Its bytes read in order, without joining them.
    pub fn reader(&self) -> impl std::io::Read + '_ {
        Pieces { pieces: &self.pieces, at: 0 }
    }

    /// What it is (its kind, id and method), in one pass: a long one read where it lies.
    pub fn kind(&self) -> Result<gatehouse_mcp::message::Kind, gatehouse_mcp::McpError> {
        match self.pieces() {
            [one] => gatehouse_mcp::message::peek(one),
            _ => gatehouse_mcp::message::peek_read(self.reader()),
        }
    }

    /// Its JSON read as `T`, in one pass: a long one read where it lies.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        match self.pieces() {
            [one] => serde_json::from_slice(one),
            _ => serde_json::from_reader(self.reader()),
        }
    }
}

impl From<Vec<u8>> for Message {
    fn from(bytes: Vec<u8>) -> Message {
        Message { pieces: vec![bytes] }
    }
}

struct Pieces<'a> {
    pieces: &'a [Vec<u8>],
    at: usize,
}

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some((first, rest)) = self.pieces.split_first() {
            let left = first.get(self.at..).unwrap_or_default();
            if left.is_empty() {
                self.pieces = rest;
                self.at = 0;
                continue;
            }
            let n = left.len().min(buf.len());
            if let (Some(to), Some(from)) = (buf.get_mut(..n), left.get(..n)) {
                to.copy_from_slice(from);
            }
            self.at = self.at.saturating_add(n);
            return Ok(n);
        }
        Ok(0)
    }
}

/// Reads lines of at most `max` bytes.
pub struct Lines<R> {
    inner: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    pub fn new(inner: R, max: usize) -> Lines<R> {
        Lines { inner, max }
    }

    /// The next line; `None` at the end of the stream (a last line without its end is a
    /// line).
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        let mut line = Message::default();
        let mut held: usize = 0;
        let mut skipped: usize = 0;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(match (line.is_empty(), skipped) {
                    (true, 0) => None,
                    (_, 0) => Some(Line::Message(line)),
                    (_, n) => Some(Line::TooLong(n)),
                });
            }
            let (chunk, ended) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (buf.get(..i).unwrap_or_default(), Some(i.saturating_add(1))),
                None => (buf, None),
            };
            if skipped > 0 || held.saturating_add(chunk.len()) > self.max {
                skipped = skipped.saturating_add(held).saturating_add(chunk.len());
                line = Message::default();
                held = 0;
            } else {
                held = held.saturating_add(chunk.len());
                keep(&mut line.pieces, chunk);
            }
            let used = ended.unwrap_or(buf.len());
            self.inner.consume(used);
            if ended.is_some() {
                if skipped > 0 {
                    return Ok(Some(Line::TooLong(skipped)));
                }
                if let Some(last) = line.pieces.last_mut() {
                    if last.last() == Some(&b'\r') {
                        last.pop();
                    }
                }
                if line.pieces.iter().all(|p| p.iter().all(u8::is_ascii_whitespace)) {
                    line = Message::default();
                    held = 0;
                    continue;
                }
                return Ok(Some(Line::Message(line)));
            }
        }
    }
}

/// Adds `chunk` to the pieces: the last one filled to [`PIECE`], then new ones made at
/// that size.
fn keep(pieces: &mut Vec<Vec<u8>>, mut chunk: &[u8]) {
    while !chunk.is_empty() {
        match pieces.last_mut() {
            Some(last) if last.len() < PIECE => {
                let (now, rest) = chunk.split_at(chunk.len().min(PIECE.saturating_sub(last.len())));
                // Grown by doubling, but never past the piece's size.
                let need = last.len().saturating_add(now.len());
                if need > last.capacity() {
                    last.reserve_exact(need.next_power_of_two().min(PIECE).saturating_sub(last.len()));
                }
                last.extend_from_slice(now);
                chunk = rest;
            }
            // A second piece means a long message: each new one is made at its full size.
            Some(_) => pieces.push(Vec::with_capacity(PIECE)),
            None => pieces.push(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<Line> {
        let mut l = Lines::new(tokio::io::BufReader::with_capacity(8, input), max);
        let mut out = Vec::new();
        while let Some(x) = l.next().await.unwrap() {
            out.push(x);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_read_across_reads_and_an_overlong_one_is_skipped_to_its_end() {
        let input = b"{\"a\":1}\n\n  \r\n0123456789abcdef\n{\"b\":2}\r\nlast";
        assert_eq!(
            all(input, 10).await,
            [
                Line::Message(b"{\"a\":1}".to_vec().into()),
                Line::TooLong(16),
                Line::Message(b"{\"b\":2}".to_vec().into()),
                Line::Message(b"last".to_vec().into())
            ]
        );
    }

    #[tokio::test]
    async fn a_long_line_is_kept_in_pieces_of_its_own_size_and_read_back_whole() {
        let long: Vec<u8> = (0..PIECE * 3 + 17).map(|i| b'a' + (i % 26) as u8).collect();
        let mut input = long.clone();
        input.extend_from_slice(b"\r\nnext\n");
        let mut l = Lines::new(tokio::io::BufReader::with_capacity(5000, &input[..]), PIECE * 4);
        let Some(Line::Message(m)) = l.next().await.unwrap() else { panic!("a message") };
        assert_eq!(m.pieces().len(), 4);
        assert!(m.pieces().iter().all(|p| p.capacity() <= PIECE), "no piece grew past its size");
        assert_eq!(m.len(), long.len());
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut m.reader(), &mut read).unwrap();
        assert_eq!(read, long);
        assert_eq!(m.into_vec(), long);
        assert_eq!(l.next().await.unwrap(), Some(Line::Message(b"next".to_vec().into())));
    }

    #[tokio::test]
    async fn a_side_that_never_ends_its_line_is_held_to_the_bound() {
        let endless = vec![b'x'; 100_000];
        assert_eq!(all(&endless, 1000).await, [Line::TooLong(100_000)]);
    }
}
