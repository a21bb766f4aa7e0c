//! The texts of the QR codes in a picture: a screenshot or photo of the other side's code.
//! Everything here reads a stranger's bytes, so what they can make it do is bounded:
//! at most [`MAX_PICTURE_BYTES`] and [`MAX_SIDE`] pixels a side are decoded, the picture
//! is scaled down to [`WORK_SIDE`] before the QR reader sees it, and a picture that holds
//! more than [`MAX_FINDERS`] finder patterns (the squares in a code's corners) is refused
//! before the reader tries them: rqrr tries every pair of neighbours of every finder and
//! copies the whole picture for each, so a 45 KB PNG of 1,600 finders took minutes.

// Code here reads others' bytes: slicing a str at a byte offset panics inside a
// character (docs/threat-model.md 1). Tests may; the code uses get() or chars().
#![cfg_attr(not(test), deny(clippy::string_slice, clippy::arithmetic_side_effects, clippy::indexing_slicing))]

// Drawn from the tests' own numbers, never from a picture read.
#[cfg(any(test, feature = "pictures"))]
#[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
pub mod pictures;

/// Pictures larger than this are refused (a phone photo fits).
pub const MAX_PICTURE_BYTES: usize = 8 * 1024 * 1024;
/// Wider or taller pictures are refused, which bounds memory and the decoder's work.
pub const MAX_SIDE: u32 = 6000;
/// The longest side the QR reader works on: a code that fills a tenth of a phone photo
/// still has modules of a few pixels at this size.
pub const WORK_SIDE: u32 = 1600;
/// The most finder patterns a picture may hold: three per code, a few codes.
pub const MAX_FINDERS: f64 = 12.0;

/// Why no text came out of a picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    TooLarge,
    TooManyPixels,
    NotAPicture(String),
    /// More finder patterns than a picture of a few codes holds.
    TooBusy,
    NoCode,
    /// A code is there, but none could be decoded.
    Unreadable,
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::TooLarge => write!(f, "that picture is larger than {} MB: crop it to the QR code", MAX_PICTURE_BYTES / 1024 / 1024),
            Unread::TooManyPixels => write!(f, "that picture is larger than {MAX_SIDE} pixels a side: crop it to the QR code"),
            Unread::NotAPicture(e) => write!(f, "that is not a PNG or JPEG picture Gatehouse can read ({e})"),
            Unread::TooBusy => write!(f, "that picture holds too many QR-like squares to search: crop it to the one QR code"),
            Unread::NoCode => write!(f, "no QR code was found in that picture: try one that is sharper, or closer to the code"),
            Unread::Unreadable => write!(f, "a QR code is there but could not be read: try a sharper picture"),
        }
    }
}

/// The texts of the QR codes in a picture (PNG or JPEG), in the order found.
pub fn texts(picture: &[u8]) -> Result<Vec<String>, Unread> {
    if picture.len() > MAX_PICTURE_BYTES {
        return Err(Unread::TooLarge);
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(picture)).with_guessed_format().map_err(|e| Unread::NotAPicture(e.to_string()))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(256 * 1024 * 1024);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => Unread::TooManyPixels,
        e => Unread::NotAPicture(e.to_string()),
    })?;
    let mut grey = img.to_luma8();
    let (w, h) = grey.dimensions();
    if w.max(h) > WORK_SIDE {
        let k = f64::from(WORK_SIDE) / f64::from(w.max(h));
        let (nw, nh) = (((f64::from(w) * k) as u32).max(1), ((f64::from(h) * k) as u32).max(1));
        grey = image::imageops::resize(&grey, nw, nh, image::imageops::FilterType::Triangle);
    }
    let mut prepared = rqrr::PreparedImage::prepare_from_greyscale(grey.width() as usize, grey.height() as usize, |x, y| grey.get_pixel(x as u32, y as u32)[0]);
    // rqrr names its pixel colours in a private module: white is what a white picture's
    // pixel is after the same preparation.
    let white = rqrr::PreparedImage::prepare_from_greyscale(1, 1, |_, _| 255).get_pixel_at(0, 0);
    if finders(prepared.width(), prepared.height(), |x, y| prepared.get_pixel_at(x, y) == white) > MAX_FINDERS {
        return Err(Unread::TooBusy);
    }
    let grids = prepared.detect_grids();
    if grids.is_empty() {
        return Err(Unread::NoCode);
    }
    let texts: Vec<String> = grids.iter().filter_map(|g| g.decode().ok()).map(|(_, t)| t).collect();
    if texts.is_empty() {
        return Err(Unread::Unreadable);
    }
    Ok(texts)
}

/// How many finder patterns the picture holds, estimated in one pass over its pixels as
/// the reader will see them (its own black and white): every row crossing a pattern's
/// centre shows runs of 1:1:3:1:1 (with the reader's tolerance), and a pattern `w` pixels
/// wide is crossed so by about 3w/7 rows. A row's runs count only when the column through
/// their middle shows 1:1:3:1:1 too, as a finder's does: a code's data modules make such
/// rows by chance, and counted alone they put one screenshot of one code (modules of 4–5
/// pixels) over the bound. Counts a little high, never low. The column is read no further
/// than the row's pattern is wide on each side, so the pass stays linear in the pixels.
fn finders(width: usize, height: usize, is_white: impl Fn(usize, usize) -> bool) -> f64 {
    let mut estimate = 0.0;
    for y in 0..height {
        let mut runs = [0usize; 5];
        let mut last = width == 0 || is_white(0, y);
        let mut run = 1usize;
        let mut changes = 0usize;
        for x in 1..=width {
            // A white pixel past the end closes a pattern on the picture's edge.
            let white = x >= width || is_white(x, y);
            if white == last {
                run = run.saturating_add(1);
                continue;
            }
            last = white;
            runs.rotate_left(1);
            runs[4] = run;
            run = 1;
            changes = changes.saturating_add(1);
            if white && changes >= 5 && one_one_three_one_one(&runs) {
                let width = runs.iter().fold(0usize, |a, r| a.saturating_add(*r));
                // The middle (dark) run's centre: the five runs end just before x.
                let middle = x.saturating_sub(runs[4].saturating_add(runs[3]).saturating_add(runs[2] / 2).saturating_add(1));
                if column_matches(middle, y, height, width, &is_white) {
                    estimate += 7.0 / (3.0 * width.max(1) as f64);
                }
            }
        }
    }
    estimate
}

/// Whether the column `x` through the dark pixel at row `y` shows a finder's runs: the
/// dark run holding `y`, and on each side a light run and a dark one, closed by a light
/// pixel or the picture's edge, within `reach` pixels a side.
fn column_matches(x: usize, y: usize, height: usize, reach: usize, is_white: &impl Fn(usize, usize) -> bool) -> bool {
    let (Some(up), Some(down)) = (column_runs(x, y, height, reach, false, is_white), column_runs(x, y, height, reach, true, is_white)) else {
        return false;
    };
    // Both sides counted the pixel at `y`.
    let stone = up[0].saturating_add(down[0]).saturating_sub(1);
    one_one_three_one_one(&[up[2], up[1], stone, down[1], down[2]])
}

/// From the dark pixel at (`x`, `y`) up (or `down`): the lengths of the dark run it is in,
/// the light run after it and the dark run after that, which a light pixel or the edge
/// ends. None when the column is light there or the runs go on past `reach` pixels.
fn column_runs(x: usize, y: usize, height: usize, reach: usize, down: bool, is_white: &impl Fn(usize, usize) -> bool) -> Option<[usize; 3]> {
    let mut runs = [0usize; 3];
    let mut k = 0usize;
    let mut at = Some(y);
    for _ in 0..=reach {
        let white = match at {
            Some(row) if row < height => is_white(x, row),
            // The edge closes the last dark run, as a light pixel would.
            _ => return (k == 2 && runs[2] > 0).then_some(runs),
        };
        // Runs alternate dark, light, dark: the run being counted is light when k is 1.
        if white != (k == 1) {
            k = k.saturating_add(1);
            if k == 3 {
                return Some(runs);
            }
        }
        if let Some(r) = runs.get_mut(k) {
            *r = r.saturating_add(1);
        }
        if runs[0] == 0 {
            return None;
        }
        at = at.and_then(|r| if down { r.checked_add(1) } else { r.checked_sub(1) });
    }
    None
}

/// The reader's own test for a finder's row: runs within 75% of 1:1:3:1:1.
fn one_one_three_one_one(runs: &[usize; 5]) -> bool {
    const CHECK: [usize; 5] = [1, 1, 3, 1, 1];
    let [a, b, _, d, e] = *runs;
    let avg = a.saturating_add(b).saturating_add(d).saturating_add(e) / 4;
    let err = avg.saturating_mul(3) / 4;
    runs.iter().zip(CHECK).all(|(r, c)| r.saturating_add(err) >= c.saturating_mul(avg) && *r <= c.saturating_mul(avg).saturating_add(err))
}

#[cfg(test)]
mod tests {
    use super::pictures::{blank_png, png, qr_png};
    use super::*;

    /// A picture full of finder patterns, `n` a side, `scale` pixels a module.
    fn finders_png(n: u32, scale: u32) -> Vec<u8> {
        let cell = 10 * scale;
        png(&image::GrayImage::from_fn(n * cell, n * cell, |x, y| {
            let (mx, my) = ((x % cell) / scale, (y % cell) / scale);
            let dark = mx < 7 && my < 7 && (mx == 0 || mx == 6 || my == 0 || my == 6 || ((2..=4).contains(&mx) && (2..=4).contains(&my)));
            image::Luma([if dark { 0 } else { 255 }])
        }))
    }

    #[test]
    fn a_code_is_read_at_any_size_up_to_the_limit() {
        for scale in [2, 4, 40] {
            assert_eq!(texts(&qr_png("gatehouse:contact?key=ab", scale)).unwrap(), ["gatehouse:contact?key=ab"], "{scale} px a module");
        }
    }

    #[test]
    fn a_picture_of_many_finder_patterns_is_refused_before_the_reader_tries_them() {
        for (n, scale) in [(4, 4), (40, 4), (150, 1)] {
            let t = std::time::Instant::now();
            assert_eq!(texts(&finders_png(n, scale)), Err(Unread::TooBusy), "{n}x{n} finders");
            // Generous for a debug build: the reader alone took minutes on the 40x40 one.
            assert!(t.elapsed() < std::time::Duration::from_secs(20), "{n}x{n}: {:?}", t.elapsed());
        }
        // Three finders and a few more are still searched (a few codes in one screenshot).
        assert_ne!(texts(&finders_png(2, 4)), Err(Unread::TooBusy));
    }

    #[test]
    fn a_screenshot_of_one_code_is_read() {
        // The window's "Share my key" code as WebKit drew it: rows of its data modules
        // that look like a finder's, counted alone, put this one code over the bound.
        let texts = texts(include_bytes!("../../../tests/data/qr/share-qr-webkit.png")).unwrap();
        assert_eq!(texts.len(), 1);
        assert!(texts[0].starts_with("gatehouse:contact?key=6412"), "{texts:?}");
    }

    #[test]
    fn other_pictures_get_a_reason() {
        assert_eq!(texts(&blank_png(200, 200)), Err(Unread::NoCode));
        assert_eq!(texts(&blank_png(MAX_SIDE + 1, 1)), Err(Unread::TooManyPixels));
        assert!(matches!(texts(b"not a picture"), Err(Unread::NotAPicture(_))));
        assert_eq!(texts(&vec![0; MAX_PICTURE_BYTES + 1]), Err(Unread::TooLarge));
    }
}
