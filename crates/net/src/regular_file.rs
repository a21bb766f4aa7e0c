//! Reading a file someone else put where Gatehouse looks (the watched folder, a task log
//! to import): only a regular file, never more than a bound.
//!
//! A FIFO would block the reading thread forever, a device (`/dev/zero`) never ends, and
//! a symlink dropped into the watched folder would make Gatehouse read (and file away as
//! an envelope) whatever it points to. So the file is opened without blocking and, for
//! drops, without following a final symlink; what was opened must be a regular file;
//! and reading stops one byte past the bound whatever the size said.

use std::io::Read as _;
use std::path::Path;

#[derive(Debug)]
pub enum ReadFailure {
    /// Larger than the bound (the size seen, or the bound + 1 when it grew while read).
    TooBig(u64),
    /// A symlink, FIFO, socket, device or directory: refused unread.
    NotRegular(&'static str),
    Io(std::io::Error),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::TooBig(n) => write!(f, "the file is {n} bytes, more than this inbox reads"),
            ReadFailure::NotRegular(kind) => write!(f, "this is a {kind}, not a regular file; only regular files are read"),
            ReadFailure::Io(e) => write!(f, "the file could not be read: {e}"),
        }
    }
}

/// Reads `path` if it is a regular file of at most `max` bytes. `follow`: whether a
/// final symlink is followed (a path the user picked) or refused (a dropped file).
pub fn read(path: &Path, max: u64, follow: bool) -> Result<Vec<u8>, ReadFailure> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | if follow { 0 } else { libc::O_NOFOLLOW });
    }
    let f = match opts.open(path) {
        Ok(f) => f,
        // O_NOFOLLOW on a symlink fails with ELOOP.
        Err(e) if !follow && e.raw_os_error() == Some(libc::ELOOP) => return Err(ReadFailure::NotRegular("symbolic link")),
        Err(e) => return Err(ReadFailure::Io(e)),
    };
    let meta = f.metadata().map_err(ReadFailure::Io)?;
    if !meta.is_file() {
        return Err(ReadFailure::NotRegular(kind(&meta)));
    }
    if meta.len() > max {
        return Err(ReadFailure::TooBig(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1).read_to_end(&mut bytes).map_err(ReadFailure::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadFailure::TooBig(bytes.len() as u64));
    }
    Ok(bytes)
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let t = meta.file_type();
        if t.is_fifo() {
            return "named pipe (FIFO)";
        }
        if t.is_socket() {
            return "socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "device";
        }
    }
    if meta.is_dir() {
        "directory"
    } else if meta.file_type().is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_bound_are_read() {
        let d = tempfile::tempdir().unwrap();
        let ok = d.path().join("ok.json");
        std::fs::write(&ok, b"{}").unwrap();
        assert_eq!(read(&ok, 10, false).unwrap(), b"{}");
        assert!(matches!(read(&ok, 1, false), Err(ReadFailure::TooBig(2))));
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        assert!(matches!(read(&link, 10, false), Err(ReadFailure::NotRegular("symbolic link"))));
        assert_eq!(read(&link, 10, true).unwrap(), b"{}", "a path the user picked may be a link");
        let zero = d.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(read(&zero, 10, true), Err(ReadFailure::NotRegular("device"))));
        let fifo = d.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(&fifo, 10, false), Err(ReadFailure::NotRegular("named pipe (FIFO)"))), "a FIFO with no writer must not block");
        assert!(matches!(read(d.path(), 10, false), Err(ReadFailure::NotRegular("directory"))));
    }
}
