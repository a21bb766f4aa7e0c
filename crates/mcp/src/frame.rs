//! MCP's stdio framing, one message per line, read within a bound and without IO (a reader
//! hands over each buffer it fills, [`Framer::feed`]): a line longer than the bound is
//! skipped to its end (and told), never held whole, and a side that sends bytes without
//! ever ending a line holds at most the bound. A long line is kept in pieces of [`PIECE`]
//! bytes: a tool's 10 MB result is held once, at its own size, never copied into a buffer
//! twice its size to grow.

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
    /// A message already read in pieces (each at most [`PIECE`] bytes but the last).
    pub fn from_pieces(pieces: Vec<Vec<u8>>) -> Message {
        Message { pieces }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Vec::len).fold(0, usize::saturating_add)
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

    /// Its bytes read in order, without joining them.
    pub fn reader(&self) -> impl std::io::Read + '_ {
        Pieces { pieces: &self.pieces, at: 0 }
    }

    /// What it is (its kind, id and method), in one pass: a long one read where it lies.
    pub fn kind(&self) -> Result<crate::message::Kind, crate::McpError> {
        match self.pieces() {
            [one] => crate::message::peek(one),
            _ => crate::message::peek_read(self.reader()),
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

/// Cuts the bytes of a stream, handed over as they come, into lines of at most `max`
/// bytes.
#[derive(Debug)]
pub struct Framer {
    max: usize,
    line: Message,
    held: usize,
    skipped: usize,
}

impl Framer {
    pub fn new(max: usize) -> Framer {
        Framer { max, line: Message::default(), held: 0, skipped: 0 }
    }

    /// Takes what `buf` holds up to and including its first line end: how many bytes it
    /// took, and the line that ended there (none when none did, or it was empty).
    pub fn feed(&mut self, buf: &[u8]) -> (usize, Option<Line>) {
        let (chunk, ended) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (buf.get(..i).unwrap_or_default(), Some(i.saturating_add(1))),
            None => (buf, None),
        };
        if self.skipped > 0 || self.held.saturating_add(chunk.len()) > self.max {
            self.skipped = self.skipped.saturating_add(self.held).saturating_add(chunk.len());
            self.line = Message::default();
            self.held = 0;
        } else {
            self.held = self.held.saturating_add(chunk.len());
            keep(&mut self.line.pieces, chunk);
        }
        let Some(used) = ended else { return (buf.len(), None) };
        let (mut line, skipped) = (std::mem::take(&mut self.line), std::mem::take(&mut self.skipped));
        self.held = 0;
        if skipped > 0 {
            return (used, Some(Line::TooLong(skipped)));
        }
        if let Some(last) = line.pieces.last_mut() {
            if last.last() == Some(&b'\r') {
                last.pop();
            }
        }
        match line.pieces.iter().all(|p| p.iter().all(u8::is_ascii_whitespace)) {
            true => (used, None),
            false => (used, Some(Line::Message(line))),
        }
    }

    /// The stream ended: what it held of a last line without its end, as it came.
    pub fn end(&mut self) -> Option<Line> {
        let (line, skipped) = (std::mem::take(&mut self.line), std::mem::take(&mut self.skipped));
        self.held = 0;
        match (line.is_empty(), skipped) {
            (true, 0) => None,
            (_, 0) => Some(Line::Message(line)),
            (_, n) => Some(Line::TooLong(n)),
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
