//! The texts of the QR codes in a picture: a screenshot or photo of the other side's code.
//! Everything here reads a stranger's bytes, so what they can make it do is bounded:
//! at most [`MAX_PICTURE_BYTES`] and [`MAX_SIDE`] pixels a side are decoded, the picture
//! is scaled down to [`WORK_SIDE`] before the QR reader sees it, and a picture that holds
//! more than [`MAX_FINDERS`] finder patterns (the squares in a code's corners, counted as
//! the reader counts them) is refused before the reader tries them: rqrr tries every pair
//! of neighbours of every finder and copies the whole picture for each, so a 45 KB PNG of
//! 1,600 finders took minutes.

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
pub const MAX_FINDERS: usize = 12;

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

/// How many finder patterns the reader will take the picture to hold, counted as it counts
/// them (`rqrr`'s `is_capstone`) in one linear pass over its own black and white: a row
/// shows runs of 1:1:3:1:1 (with the reader's tolerance) whose outer runs are one dark
/// region (the ring) and whose middle run another (the stone), the stone 10–70% of the
/// ring's pixels; each ring and stone counts once, as the reader then reserves them. Rows
/// of a code's data modules show such runs by chance: counted by rows alone, they put one
/// screenshot of one code (modules of 4–5 pixels) over the bound. Never lower than the
/// reader's count: it keeps only those of these whose perspective it can fit.
fn finders(width: usize, height: usize, is_white: impl Fn(usize, usize) -> bool) -> usize {
    let regions = Regions::fill(width, height, &is_white);
    let mut taken = std::collections::HashSet::new();
    let mut count = 0usize;
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
            if !(white && changes >= 5 && one_one_three_one_one(&runs)) {
                continue;
            }
            // The five runs (dark, light, dark, light, dark) end just before x.
            let right = x.saturating_sub(1);
            let stone = x.saturating_sub(runs[4].saturating_add(runs[3]).saturating_add(1));
            let left = x.saturating_sub(runs.iter().fold(0usize, |a, r| a.saturating_add(*r)));
            let ((ring, ring_size), (other, _), (core, core_size)) = (regions.at(right, y), regions.at(left, y), regions.at(stone, y));
            let ratio = core_size.saturating_mul(100).checked_div(ring_size).unwrap_or(0);
            if ring == other && ring != core && 10 < ratio && ratio < 70 && !taken.contains(&ring) && !taken.contains(&core) {
                taken.extend([ring, core]);
                count = count.saturating_add(1);
            }
        }
    }
    count
}

/// The picture's dark regions as the reader fills them (4-connected): each pixel's region
/// (0 for a light pixel) and each region's size in pixels.
struct Regions {
    width: usize,
    of: Vec<usize>,
    sizes: Vec<usize>,
}

impl Regions {
    fn fill(width: usize, height: usize, is_white: &impl Fn(usize, usize) -> bool) -> Regions {
        let index = |x: usize, y: usize| y.saturating_mul(width).saturating_add(x);
        let mut of = vec![0usize; width.saturating_mul(height)];
        let mut sizes = vec![0usize];
        let mut todo = Vec::new();
        // Each pixel is marked as it is queued, so each is queued once.
        let mark = |of: &mut Vec<usize>, todo: &mut Vec<(usize, usize)>, region: usize, x: usize, y: usize| {
            if let Some(r) = of.get_mut(index(x, y)).filter(|r| **r == 0) {
                if !is_white(x, y) {
                    *r = region;
                    todo.push((x, y));
                }
            }
        };
        for y in 0..height {
            for x in 0..width {
                if of.get(index(x, y)) != Some(&0) || is_white(x, y) {
                    continue;
                }
                let region = sizes.len();
                let mut size = 0usize;
                mark(&mut of, &mut todo, region, x, y);
                while let Some((px, py)) = todo.pop() {
                    size = size.saturating_add(1);
                    if px > 0 {
                        mark(&mut of, &mut todo, region, px.saturating_sub(1), py);
                    }
                    if px.saturating_add(1) < width {
                        mark(&mut of, &mut todo, region, px.saturating_add(1), py);
                    }
                    if py > 0 {
                        mark(&mut of, &mut todo, region, px, py.saturating_sub(1));
                    }
                    if py.saturating_add(1) < height {
                        mark(&mut of, &mut todo, region, px, py.saturating_add(1));
                    }
                }
                sizes.push(size);
            }
        }
        Regions { width, of, sizes }
    }

    /// The region of the pixel at (`x`, `y`) and its size.
    fn at(&self, x: usize, y: usize) -> (usize, usize) {
        let region = self.of.get(y.saturating_mul(self.width).saturating_add(x)).copied().unwrap_or(0);
        (region, self.sizes.get(region).copied().unwrap_or(0))
    }
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
        finders_png_notched(n, scale, false)
    }

    /// [`finders_png`], the rings' top middle module light when `notched`: the ring is
    /// still one region, so the reader still takes each for a finder, but the column
    /// through the stone no longer shows 1:1:3:1:1.
    fn finders_png_notched(n: u32, scale: u32, notched: bool) -> Vec<u8> {
        let cell = 10 * scale;
        png(&image::GrayImage::from_fn(n * cell, n * cell, |x, y| {
            let (mx, my) = ((x % cell) / scale, (y % cell) / scale);
            let dark = mx < 7 && my < 7 && (mx == 0 || mx == 6 || my == 0 || my == 6 || ((2..=4).contains(&mx) && (2..=4).contains(&my)));
            let notch = notched && mx == 3 && my == 0;
            image::Luma([if dark && !notch { 0 } else { 255 }])
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
    fn finders_are_counted_as_the_reader_counts_them() {
        // Rings the reader still takes for finders, though no column through them looks
        // like one: refused all the same.
        for (n, scale) in [(4, 4), (40, 4)] {
            let t = std::time::Instant::now();
            assert_eq!(texts(&finders_png_notched(n, scale, true)), Err(Unread::TooBusy), "{n}x{n} notched finders");
            assert!(t.elapsed() < std::time::Duration::from_secs(20), "{n}x{n}: {:?}", t.elapsed());
        }
        assert_ne!(texts(&finders_png_notched(2, 4, true)), Err(Unread::TooBusy));
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
