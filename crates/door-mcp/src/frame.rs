//! MCP's stdio framing: one message per line. Lines are read within a bound: a line
//! longer than [`gatehouse_mcp::MAX_MESSAGE`] is skipped to its end (and told), never
//! held whole, and a side that sends bytes without ever ending a line holds at most
//! the bound.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What came next on a side's output.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A message (without its line end); empty lines are skipped.
    Message(Vec<u8>),
    /// A line over the bound, skipped: its length.
    TooLong(usize),
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
        let mut line = Vec::new();
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
            if skipped > 0 || line.len().saturating_add(chunk.len()) > self.max {
                skipped = skipped.saturating_add(line.len()).saturating_add(chunk.len());
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
            let used = ended.unwrap_or(buf.len());
            self.inner.consume(used);
            if ended.is_some() {
                if skipped > 0 {
                    return Ok(Some(Line::TooLong(skipped)));
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    line.clear();
                    continue;
                }
                return Ok(Some(Line::Message(line)));
            }
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
            [Line::Message(b"{\"a\":1}".to_vec()), Line::TooLong(16), Line::Message(b"{\"b\":2}".to_vec()), Line::Message(b"last".to_vec())]
        );
    }

    #[tokio::test]
    async fn a_side_that_never_ends_its_line_is_held_to_the_bound() {
        let endless = vec![b'x'; 100_000];
        assert_eq!(all(&endless, 1000).await, [Line::TooLong(100_000)]);
    }
}
