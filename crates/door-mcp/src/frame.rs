//! MCP's stdio framing read from a stream ([`gatehouse_mcp::frame`] cuts the lines; here
//! the stream is read into it): one message per line, within a bound.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use gatehouse_mcp::frame::Framer;
pub use gatehouse_mcp::frame::{Line, Message, PIECE};

/// Reads lines of at most `max` bytes.
pub struct Lines<R> {
    inner: R,
    framer: Framer,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    pub fn new(inner: R, max: usize) -> Lines<R> {
        Lines { inner, framer: Framer::new(max) }
    }

    /// The next line; `None` at the end of the stream (a last line without its end is a
    /// line).
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(self.framer.end());
            }
            let (used, line) = self.framer.feed(buf);
            self.inner.consume(used);
            if line.is_some() {
                return Ok(line);
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
