//! The one way a line reaches the terminal. Much of what the CLI prints was written by
//! someone else (a site's answer, a swarm's subject, an agent's name, a server's error),
//! and a terminal obeys some characters instead of showing them: ESC starts a command
//! (move the cursor up, clear a line, retitle the window), a bare CR returns to the start
//! of the line so the rest overwrites what came before (a `[REFUSED]`), BEL rings, and a
//! bidirectional override reorders what the reader sees. Every line goes through
//! [`inert`], which writes such characters as visible, inert escapes (`\u{1b}`); JSON
//! output is escaped by JSON and printed as it is.

use std::borrow::Cow;

/// Whether a terminal might act on `c` rather than show it: C0 and C1 controls and DEL
/// (tab excepted: it only moves right), bidirectional controls and direction marks, and
/// the Unicode line and paragraph separators.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// `text` with every character a terminal would act on written as `\u{…}`; a line break
/// too, so one call prints one line. Text without such characters is returned as it is.
pub fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The lines of a text someone wrote (a message, an answer), each made inert: a line
/// break of its own (LF or CRLF) starts a new line, any other control is shown.
pub fn inert_lines(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    text.split('\n').map(|l| inert(l.strip_suffix('\r').unwrap_or(l)))
}

/// Prints one line on standard output, through [`inert`].
macro_rules! say {
    ($($arg:tt)*) => {{
        let line = format!($($arg)*);
        #[allow(clippy::print_stdout)]
        {
            println!("{}", $crate::terminal::inert(&line));
        }
    }};
}

/// Prints one line on standard error, through [`inert`].
macro_rules! note {
    ($($arg:tt)*) => {{
        let line = format!($($arg)*);
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{}", $crate::terminal::inert(&line));
        }
    }};
}

pub(crate) use {note, say};

/// Prints what this program made whole, line breaks and all: JSON (which escapes every
/// control character in its strings itself) and a QR code drawn in block characters.
pub fn say_verbatim(text: &str) {
    #[allow(clippy::print_stdout)]
    {
        println!("{text}");
    }
}

/// [`say_verbatim`] on standard error (an error as JSON).
pub fn note_verbatim(text: &str) {
    #[allow(clippy::print_stderr)]
    {
        eprintln!("{text}");
    }
}

/// A question on standard error, the answer typed on the same line.
pub fn ask(question: &str) {
    use std::io::Write as _;
    #[allow(clippy::print_stderr)]
    {
        eprint!("{}", inert(question));
    }
    let _ = std::io::stderr().flush();
}

/// [`ask`], and the line typed (trimmed; empty when nothing could be read).
pub fn answer(question: &str) -> String {
    ask(question);
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    line.trim().to_string()
}

/// Prints a text of several lines on standard output, each through [`inert`].
pub fn say_lines(text: &str, indent: &str) {
    for line in inert_lines(text) {
        say!("{indent}{line}");
    }
}

/// The process's stdin, read as a protocol's channel rather than text for a terminal
/// (`mcp wrap`: the app's MCP messages pass there as they came, and nothing else is
/// written to them), and its stdout, written as one.
pub type ChannelIn = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
pub type ChannelOut = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// [`ChannelIn`] and [`ChannelOut`]; called within the runtime that reads them. A pipe or
/// a socket (as an app starts its servers) is waited on by the runtime like any socket;
/// tokio's own stdin and stdout would hand each read and each write to a thread of its
/// blocking pool, two thread switches more for every message. Anything else (a
/// terminal, a file) is read as tokio reads it.
pub fn protocol_channel() -> (ChannelIn, ChannelOut) {
    #[cfg(unix)]
    let (input, output) = (unix_channel::input(), unix_channel::output());
    #[cfg(not(unix))]
    let (input, output) = (None, None);
    (input.unwrap_or_else(|| Box::new(tokio::io::stdin())), output.unwrap_or_else(|| Box::new(tokio::io::stdout())))
}

#[cfg(unix)]
mod unix_channel {
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use super::{ChannelIn, ChannelOut};

    /// A descriptor of its own for what `fd` names, and what kind of file that is.
    fn duplicate(fd: std::os::fd::BorrowedFd<'_>) -> Option<(std::fs::File, std::fs::FileType)> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        Some((file, kind))
    }

    fn socket(file: std::fs::File) -> Option<tokio::net::UnixStream> {
        let s = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
        s.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(s).ok()
    }

    pub(super) fn input() -> Option<ChannelIn> {
        let (file, kind) = duplicate(std::io::stdin().as_fd())?;
        match () {
            () if kind.is_fifo() => tokio::net::unix::pipe::Receiver::from_file(file).ok().map(|r| Box::new(r) as ChannelIn),
            () if kind.is_socket() => socket(file).map(|s| Box::new(s) as ChannelIn),
            () => None,
        }
    }

    pub(super) fn output() -> Option<ChannelOut> {
        let (file, kind) = duplicate(std::io::stdout().as_fd())?;
        match () {
            () if kind.is_fifo() => tokio::net::unix::pipe::Sender::from_file(file).ok().map(|w| Box::new(w) as ChannelOut),
            () if kind.is_socket() => socket(file).map(|s| Box::new(s) as ChannelOut),
            () => None,
        }
    }
}
