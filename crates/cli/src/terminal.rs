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

/// The process's stdin and stdout when they are a protocol's channel rather than text for
/// a terminal (`mcp wrap`: the app's MCP messages pass there as they came, and nothing else
/// is written to them).
pub fn protocol_channel() -> (tokio::io::Stdin, tokio::io::Stdout) {
    (tokio::io::stdin(), tokio::io::stdout())
}
