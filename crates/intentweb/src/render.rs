//! Markdown messages (§4) to HTML the window may show. Raw HTML in a message is shown as
//! text, never as markup; the result is then sanitized (ammonia) as a second guard: no
//! scripts, no event handlers, no styles, links only to http/https/mailto and marked
//! `rel="noopener noreferrer"`; images are not loaded — each becomes a link the user may
//! choose to open in the browser.

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

pub fn to_html(markdown: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let mut in_image = false;
    let events = Parser::new_ext(markdown, opts).map(|ev| match ev {
        // Raw HTML becomes visible, inert text.
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
            in_image = true;
            Event::Start(Tag::Link { link_type, dest_url, title, id })
        }
        Event::End(TagEnd::Image) => {
            in_image = false;
            Event::End(TagEnd::Link)
        }
        Event::Text(t) if in_image => Event::Text(format!("[image: {t}]").into()),
        other => other,
    });
    let mut raw = String::new();
    html::push_html(&mut raw, events);
    ammonia::Builder::default()
        .rm_tags(["img"])
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer"))
        .clean(&raw)
        .to_string()
}
