//! Reading the other side's QR code from a picture of it (a screenshot, a photo): the text
//! it holds is what they would have pasted, and is checked like it
//! ([`crate::contacts::verify`]). Decoding happens here, in safe Rust, bounded in bytes and
//! pixels; the window sends the picture's bytes, never a path.

use base64::Engine as _;

use crate::{Code, CommandError, Result};

pub use gatehouse_qr::MAX_PICTURE_BYTES;

/// The Gatehouse contact text in a picture of a QR code (PNG or JPEG); the picture is read
/// by `gatehouse-qr`, bounded in bytes, pixels and the work it can cause.
pub fn read(picture: &[u8]) -> Result<String> {
    let texts = gatehouse_qr::texts(picture).map_err(|e| CommandError::new(Code::Invalid, e.to_string()))?;
    if let Some(t) = texts.iter().find(|t| crate::contacts::shared_key(t).is_ok()) {
        return Ok(t.clone());
    }
    let other = texts.first().map(|t| t.chars().take(60).collect::<String>()).unwrap_or_default();
    Err(CommandError::new(Code::Invalid, format!("that QR code is not a Gatehouse key (it holds {other:?}); ask them for the code under Share my key")))
}

/// [`read`], the picture given as base64 (how the window sends it).
pub fn read_base64(picture: &str) -> Result<String> {
    // Four base64 characters carry three bytes: refuse what would decode past the limit.
    if picture.len() > MAX_PICTURE_BYTES / 3 * 4 + 4 {
        return Err(CommandError::new(Code::Invalid, format!("that picture is larger than {} MB: crop it to the QR code", MAX_PICTURE_BYTES / 1024 / 1024)));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(picture.trim())
        .map_err(|_| CommandError::new(Code::Invalid, "the picture did not arrive whole (not base64)"))?;
    read(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_qr::pictures::{blank_png, qr_png};

    #[test]
    fn a_picture_of_a_shared_code_reads_back_as_its_text() {
        let text = crate::contacts::share_text(&"ab".repeat(32), "http://127.0.0.1:7777/epp/v1/submit");
        assert_eq!(read(&qr_png(&text, 4)).unwrap(), text);
        let b64 = base64::engine::general_purpose::STANDARD.encode(qr_png(&text, 3));
        assert_eq!(read_base64(&b64).unwrap(), text);
    }

    #[test]
    fn other_pictures_get_a_reason() {
        let e = read(&qr_png("https://example.com/menu", 4)).unwrap_err();
        assert!(e.message.contains("not a Gatehouse key") && e.message.contains("example.com/menu"), "{}", e.message);
        assert!(read(&blank_png(200, 200)).unwrap_err().message.contains("no QR code was found"));
        assert!(read(&blank_png(gatehouse_qr::MAX_SIDE + 1, 1)).unwrap_err().message.contains("pixels a side"));
        assert!(read(b"not a picture").unwrap_err().message.contains("not a PNG or JPEG"));
        assert!(read(&vec![0; MAX_PICTURE_BYTES + 1]).unwrap_err().message.contains("larger than 8 MB"));
        assert!(read_base64("%%%").unwrap_err().message.contains("not base64"));
    }
}
