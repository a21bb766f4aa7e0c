//! Text that survives 200% zoom: with the page zoomed to twice its size (Ctrl+=, as a user
//! zooms), no main view
//! needs sideways scrolling and no text is cut off by the box it is in.

use crate::harness::*;

/// What does not fit at the present zoom: the page's sideways overflow, and elements whose
/// text is clipped (overflow hidden, or ellipsis, with more text than room).
fn overflow(app: &App, view: &str) -> Vec<String> {
    let found = app.script(
        "const out = [];
         const root = document.scrollingElement;
         if (root.scrollWidth > root.clientWidth + 1) {
           // Name what sticks out: the innermost elements past the right edge.
           const wide = [...document.querySelectorAll('#app *')].filter((e) => e.getBoundingClientRect().right > root.clientWidth + 1
             && ![...e.children].some((c) => c.getBoundingClientRect().right > root.clientWidth + 1));
           out.push(`the page scrolls sideways (${root.scrollWidth} > ${root.clientWidth}): ${wide.slice(0, 4).map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + e.className).join(', ')}`);
         }
         for (const el of document.querySelectorAll('#app *')) {
           const s = getComputedStyle(el);
           // An inbox row's one-line preview is cut on purpose: the whole text is its detail.
           if (el.offsetParent === null || !el.textContent.trim() || el.classList.contains('preview')) continue;
           const clips = s.overflowX === 'hidden' || s.overflowX === 'clip' || s.textOverflow === 'ellipsis';
           if (clips && el.scrollWidth > el.clientWidth + 1) out.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className}: ${el.textContent.trim().slice(0, 40)}`);
         }
         return out.slice(0, 10);",
    );
    let found: Vec<String> = serde_json::from_value(found.clone()).unwrap_or_else(|_| vec![format!("answered {found}")]);
    found.into_iter().map(|f| format!("{view}: {f}")).collect()
}

#[test]
fn the_main_views_read_whole_at_200_percent_zoom() {
    let app = App::start();
    let friend = SigningKey::from_bytes(&[23; 32]);
    app.trust(&friend, "Clinic with a rather long name for a sender", &["support"]);
    assert_eq!(
        app.send(&friend, "support", "Your lab results are ready; the long line goes on to see whether it wraps as it should at twice the size.").0,
        200
    );
    assert_eq!(app.send(&gatehouse_epp::generate_signing_key(), "support", "Please let me through").0, 401);
    // Ctrl+= five times, as a user zooms (20% a step): the page is laid out at half the width.
    let width = app.script("return window.innerWidth;").as_f64().unwrap();
    for _ in 0..5 {
        app.script("window.dispatchEvent(new KeyboardEvent('keydown', { key: '=', ctrlKey: true })); return true;");
    }
    app.wait("the page at 200%", || app.script("return window.innerWidth;").as_f64().is_some_and(|w| (w - width / 2.0).abs() < 2.0));

    let mut all = Vec::new();
    app.click("#nav-inbox");
    let id = app.row_with("Your lab results are ready");
    app.click(&format!("#inbox-rows .row[data-receipt='{id}']"));
    app.wait_text("#inbox-detail", "Message");
    all.extend(overflow(&app, "inbox"));
    app.screenshot("zoom-200-inbox");
    app.click("#nav-consent");
    app.wait_text(".consent-card", "Please let me through");
    all.extend(overflow(&app, "waiting for you"));
    app.screenshot("zoom-200-consent");
    app.each_other_view(|view| all.extend(overflow(&app, view)));
    assert!(all.is_empty(), "at 200% zoom:\n{}", all.join("\n"));
}
