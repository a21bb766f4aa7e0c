//! Pictures for tests (here and in the crates that read codes through this one): a QR
//! code drawn as a PNG, and PNGs of other kinds.

/// A PNG of `text`'s QR code, `scale` pixels a module, with the quiet zone.
pub fn qr_png(text: &str, scale: u32) -> Vec<u8> {
    let code = qrcode::QrCode::new(text.as_bytes()).unwrap();
    let (w, colors) = (code.width() as u32, code.to_colors());
    let side = (w + 8) * scale;
    let img = image::GrayImage::from_fn(side, side, |x, y| {
        let (mx, my) = ((x / scale) as i64 - 4, (y / scale) as i64 - 4);
        let dark = mx >= 0 && my >= 0 && mx < w as i64 && my < w as i64 && colors[(my as u32 * w + mx as u32) as usize] == qrcode::Color::Dark;
        image::Luma([if dark { 0 } else { 255 }])
    });
    png(&img)
}

/// A white PNG `width` by `height` pixels.
pub fn blank_png(width: u32, height: u32) -> Vec<u8> {
    png(&image::GrayImage::from_pixel(width, height, image::Luma([255])))
}

pub fn png(img: &image::GrayImage) -> Vec<u8> {
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png).unwrap();
    out
}
